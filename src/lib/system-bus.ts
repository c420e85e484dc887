/**
 * Method calls on the D-Bus system bus (DBUS_SYSTEM_BUS_ADDRESS, else /run/dbus/system_bus_socket), in process
 * through @homebridge/dbus-native, as go-systemd's connection serves the Go kubelet: the systemd cgroup driver makes a
 * few calls for every pod, and a `busctl` process per call cost ~9 ms and several ms of CPU each (docs/performance-history.md).
 *
 * One connection, made at the first call (the library is loaded only then) and made again after it failed or closed;
 * a call still waiting when its connection fails is rejected with why, and every call is bounded in time. A D-Bus
 * error answer is a `DBusError` carrying its name (`org.freedesktop.systemd1.UnitExists`).
 */

/** A method call. */
export interface DBusCall {
  destination: string;
  path: string;
  interface: string;
  member: string;
  /** The arguments' D-Bus signature (`ssa(sv)`), with `body` in dbus-native's form (a variant is `[signature, value]`). */
  signature?: string;
  body?: unknown[];
}

/** An error answer. */
export class DBusError extends Error {
  constructor(
    /** The D-Bus error name. */
    readonly errorName: string,
    message: string,
  ) {
    super(message);
  }
}

/** The system bus. */
export interface SystemBus {
  /** Calls a method; the answer's values. */
  call(message: DBusCall): Promise<unknown[]>;
  /** Closes the connection (a later call opens one again). */
  close(): void;
}

/** How long one call may take. */
const CALL_TIMEOUT_MS = 10_000;

interface NativeBus {
  connection: NodeJS.EventEmitter & { end(): void };
  invoke(message: Record<string, unknown>, callback: (error: unknown, ...values: unknown[]) => void): void;
}

/** One connection and the calls waiting on it. */
interface Connection {
  bus: NativeBus;
  waiting: Set<(error: Error) => void>;
}

/** A call's error as an Error: a D-Bus error answer as a DBusError. */
function errorOf(error: unknown): Error {
  if (error instanceof Error) return error;
  const answer = error as { name?: unknown; message?: unknown };
  const name = typeof answer?.name === 'string' ? answer.name : 'org.freedesktop.DBus.Error.Failed';
  const message = typeof answer?.message === 'string' ? answer.message : name;
  return new DBusError(name, message);
}

/** The system bus, connected on first use. */
export function systemBus(): SystemBus {
  let current: Promise<Connection> | undefined;
  const connect = (): Promise<Connection> => {
    const made = (async () => {
      const module = (await import('@homebridge/dbus-native')) as unknown as {
        default?: { systemBus(): NativeBus };
        systemBus?: () => NativeBus;
      };
      const bus = (module.default ?? (module as { systemBus(): NativeBus })).systemBus();
      const connection: Connection = { bus, waiting: new Set() };
      // A connection that failed is forgotten (the next call makes another) and its waiting calls fail with why.
      const fail = (error: Error) => {
        if (current === made) current = undefined;
        for (const reject of connection.waiting) reject(error);
        connection.waiting.clear();
      };
      bus.connection.on('error', (error: Error) => fail(new Error(`system bus: ${error.message}`)));
      bus.connection.on('end', () => fail(new Error('system bus: the connection closed')));
      return connection;
    })();
    return made;
  };
  return {
    async call(message) {
      const connection = await (current ??= connect());
      return new Promise<unknown[]>((resolve, reject) => {
        const settle = (error: Error | undefined, values: unknown[] = []) => {
          if (!connection.waiting.delete(fail)) return;
          clearTimeout(timer);
          if (error) reject(error);
          else resolve(values);
        };
        const fail = (error: Error) => settle(error);
        const timer = setTimeout(
          () => settle(new Error(`${message.interface}.${message.member} timed out after ${CALL_TIMEOUT_MS} ms`)),
          CALL_TIMEOUT_MS,
        );
        connection.waiting.add(fail);
        try {
          connection.bus.invoke({ ...message }, (error, ...values) =>
            settle(error ? errorOf(error) : undefined, values),
          );
        } catch (error) {
          // A message that cannot be marshalled (its body does not match its signature).
          settle(errorOf(error));
        }
      });
    },
    close() {
      const closing = current;
      current = undefined;
      void closing?.then((connection) => connection.bus.connection.end());
    },
  };
}
