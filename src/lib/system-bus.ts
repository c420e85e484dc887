/**
 * The D-Bus system bus (DBUS_SYSTEM_BUS_ADDRESS, else /run/dbus/system_bus_socket), in process through
 * @homebridge/dbus-native, as go-systemd's and godbus's connections serve the Go kubelet: method calls (the systemd
 * cgroup driver makes a few for every pod, where a `busctl` process per call cost ~9 ms and several ms of CPU each:
 * docs/performance-history.md) and signals (logind's PrepareForShutdown).
 *
 * Calls share one connection, made at the first call (the library is loaded only then) and made again after it
 * failed or closed; a call still waiting when its connection fails is rejected with why, and every call is bounded
 * in time. A D-Bus error answer is a `DBusError` carrying its name (`org.freedesktop.systemd1.UnitExists`). A signal
 * watch has a connection of its own, which ends with the bus.
 */

/** A method call. */
export interface DBusCall {
  destination: string;
  path: string;
  interface: string;
  member: string;
  /**
   * The arguments' D-Bus signature (`ssa(sv)`), with `body` in dbus-native's form (a variant is `[signature, value]`).
   */
  signature?: string;
  body?: unknown[];
}

/** A signal received. */
export interface DBusSignal {
  path: string;
  interface: string;
  member: string;
  body: unknown[];
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

/** A running watch of signals. */
export interface SignalWatch {
  /** Resolves when the watch ended (the bus went away, or `stop`). */
  readonly ended: Promise<void>;
  stop(): void;
}

/** How long one call may take. */
const CALL_TIMEOUT_MS = 10_000;
/** dbus-native's message type of a signal. */
const SIGNAL = 4;

interface NativeMessage {
  type?: number;
  path?: string;
  interface?: string;
  member?: string;
  body?: unknown[];
}

interface NativeBus {
  connection: NodeJS.EventEmitter & { end(): void; stream?: NodeJS.EventEmitter };
  invoke(message: Record<string, unknown>, callback: (error: unknown, ...values: unknown[]) => void): void;
}

/** One connection, the calls waiting on it, and its end. */
interface Connection {
  bus: NativeBus;
  waiting: Set<(error: Error) => void>;
  ended: Promise<void>;
}

/** A call's error as an Error: a D-Bus error answer as a DBusError. */
function errorOf(error: unknown): Error {
  if (error instanceof Error) return error;
  const answer = error as { name?: unknown; message?: unknown };
  const name = typeof answer?.name === 'string' ? answer.name : 'org.freedesktop.DBus.Error.Failed';
  const message = typeof answer?.message === 'string' ? answer.message : name;
  return new DBusError(name, message);
}

/** Opens a connection; `onEnd` runs once when it fails or closes. */
async function openConnection(onEnd: () => void = () => {}): Promise<Connection> {
  const module = (await import('@homebridge/dbus-native')) as unknown as {
    default?: { systemBus(): NativeBus };
    systemBus?: () => NativeBus;
  };
  const bus = (module.default ?? (module as { systemBus(): NativeBus })).systemBus();
  let end!: () => void;
  const connection: Connection = { bus, waiting: new Set(), ended: new Promise<void>((r) => (end = r)) };
  let over = false;
  const fail = (error: Error) => {
    if (!over) {
      over = true;
      onEnd();
      end();
    }
    for (const reject of connection.waiting) reject(error);
    connection.waiting.clear();
  };
  bus.connection.on('error', (error: Error) => fail(new Error(`system bus: ${error.message}`)));
  bus.connection.on('end', () => fail(new Error('system bus: the connection closed')));
  bus.connection.stream?.on('close', () => fail(new Error('system bus: the connection closed')));
  return connection;
}

/** Calls `message` on `connection`, bounded in time. */
function callOn(connection: Connection, message: DBusCall): Promise<unknown[]> {
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
      connection.bus.invoke({ ...message }, (error, ...values) => settle(error ? errorOf(error) : undefined, values));
    } catch (error) {
      // A message that cannot be marshalled (its body does not match its signature).
      settle(errorOf(error));
    }
  });
}

/** The system bus, connected on first use. */
export function systemBus(): SystemBus {
  let current: Promise<Connection> | undefined;
  const connect = (): Promise<Connection> => {
    // A connection that ended is forgotten: the next call makes another.
    const made: Promise<Connection> = openConnection(() => {
      if (current === made) current = undefined;
    });
    return made;
  };
  return {
    async call(message) {
      return callOn(await (current ??= connect()), message);
    },
    close() {
      const closing = current;
      current = undefined;
      void closing?.then((connection) => connection.bus.connection.end());
    },
  };
}

/**
 * Follows the signals the match rule `match` selects (`type='signal',interface='…',member='…'`), on a connection of
 * its own; resolves once the bus applies the rule, so that no signal sent after that is missed.
 */
export async function watchSignals(match: string, onSignal: (signal: DBusSignal) => void): Promise<SignalWatch> {
  const connection = await openConnection();
  connection.bus.connection.on('message', (message: NativeMessage) => {
    if (message.type !== SIGNAL) return;
    onSignal({
      path: message.path ?? '',
      interface: message.interface ?? '',
      member: message.member ?? '',
      body: message.body ?? [],
    });
  });
  const stop = () => connection.bus.connection.end();
  try {
    await callOn(connection, {
      destination: 'org.freedesktop.DBus',
      path: '/org/freedesktop/DBus',
      interface: 'org.freedesktop.DBus',
      member: 'AddMatch',
      signature: 's',
      body: [match],
    });
  } catch (error) {
    stop();
    throw error;
  }
  return { ended: connection.ended, stop };
}
