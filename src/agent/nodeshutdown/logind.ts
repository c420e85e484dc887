/**
 * systemd-logind on the system bus, as upstream's node shutdown manager uses it (nodeshutdown/systemd): the
 * longest delay logind lets an inhibitor hold a shutdown (InhibitDelayMaxUSec), the kubelet's override of it in
 * logind's configuration and the reload that applies it, a delay inhibitor lock on shutdown, and the
 * PrepareForShutdown signal.
 *
 * Calls and the signal go through the kubelet's system bus client (lib/system-bus.ts). The lock is a file
 * descriptor logind passes over the bus (SCM_RIGHTS), which Node's sockets cannot receive: `systemd-inhibit`, on
 * every systemd host, holds it for a child that reads the kubelet's pipe, so a kubelet that dies releases it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { systemBus, watchSignals, type DBusCall, type SystemBus } from '../../lib/system-bus.js';

const LOGIND = ['org.freedesktop.login1', '/org/freedesktop/login1', 'org.freedesktop.login1.Manager'] as const;
/** Upstream's inhibitor: who, why, what and mode. */
export const INHIBITOR = {
  what: 'shutdown',
  who: 'kubelet',
  why: 'Kubelet needs time to handle node shutdown',
  mode: 'delay',
} as const;
/** Upstream's override file in logind's drop-in directory. */
export const LOGIND_OVERRIDE_FILE = '99-kubelet.conf';
/** A held inhibitor lock. */
export interface InhibitLock {
  release(): void;
}

/** A running watch of PrepareForShutdown. */
export interface ShutdownWatch {
  /** Resolves when the watch ended (the bus went away, or `stop`). */
  readonly ended: Promise<void>;
  stop(): void;
}

/** What the node shutdown manager needs of logind. */
export interface Logind {
  /** InhibitDelayMaxUSec, in ms. */
  inhibitDelayMs(): Promise<number>;
  /** Writes the kubelet's override of InhibitDelayMaxSec (upstream OverrideInhibitDelay). */
  overrideInhibitDelay(ms: number): Promise<void>;
  /** Asks systemd to send logind SIGHUP, so that it reads its configuration again (upstream ReloadLogindConf). */
  reloadConfig(): Promise<void>;
  /** Takes a delay lock on shutdown; resolves once logind lists it. */
  inhibitShutdown(): Promise<InhibitLock>;
  /** Follows PrepareForShutdown: `true` when a shutdown starts, `false` when it was cancelled. */
  watchShutdown(onEvent: (shuttingDown: boolean) => void): Promise<ShutdownWatch>;
}

/** The override file's content (upstream's words; whole seconds). */
export function logindOverride(ms: number): string {
  return `# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=${Math.round(ms / 1000)}\n`;
}

/** PrepareForShutdown's argument from a signal's body (pure); undefined for another body. */
export function prepareForShutdownOf(body: readonly unknown[]): boolean | undefined {
  return typeof body[0] === 'boolean' ? body[0] : undefined;
}

/** The PIDs of `who`'s inhibitors of `what`, from ListInhibitors' answer (`a(ssssuu)`; pure). */
export function inhibitorPids(answer: readonly unknown[], who: string, what: string): number[] {
  const list = Array.isArray(answer[0]) ? (answer[0] as unknown[][]) : [];
  return list.filter((i) => i[0] === what && i[1] === who).map((i) => Number(i[5]));
}

/** A call of logind's manager. */
const logindCall = (member: string, signature = '', body: unknown[] = []): DBusCall => ({
  destination: LOGIND[0],
  path: LOGIND[1],
  interface: LOGIND[2],
  member,
  signature,
  body,
});

/** The most of a tool's stderr kept for its error message. */
const MAX_STDERR_BYTES = 4096;

/** Collects what `stream` prints, up to `max` characters (what comes after is dropped); `text()` reads it. */
function collected(stream: NodeJS.ReadableStream, max: number): { text(): string } {
  let text = '';
  stream.on('data', (d: Buffer) => {
    if (text.length < max) text += d.toString('utf8');
  });
  return { text: () => text };
}

/** Resolves after `ms`. */
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether `child` has exited. */
const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/** systemd-logind on the system bus (`bus`) and systemd-inhibit; `configDir`: logind's drop-in directory. */
export function systemdLogind(configDir = '/etc/systemd/logind.conf.d', bus: SystemBus = systemBus()): Logind {
  return {
    async inhibitDelayMs() {
      const [variant] = await bus.call({
        ...logindCall('Get', 'ss', [LOGIND[2], 'InhibitDelayMaxUSec']),
        interface: 'org.freedesktop.DBus.Properties',
      });
      // A variant comes back as [its signature, [its value]].
      return Number((variant as [unknown, unknown[]])[1][0]) / 1000;
    },
    async overrideInhibitDelay(ms) {
      await mkdir(configDir, { recursive: true, mode: 0o755 });
      const path = join(configDir, LOGIND_OVERRIDE_FILE);
      try {
        await writeFile(path, logindOverride(ms), { mode: 0o644 });
      } catch (err) {
        throw new Error(`failed writing logind shutdown inhibit override file ${path}: ${(err as Error).message}`, {
          cause: err,
        });
      }
    },
    async reloadConfig() {
      try {
        await bus.call({
          destination: 'org.freedesktop.systemd1',
          path: '/org/freedesktop/systemd1',
          interface: 'org.freedesktop.systemd1.Manager',
          member: 'KillUnit',
          signature: 'ssi',
          body: ['systemd-logind.service', 'all', 1],
        });
      } catch (err) {
        throw new Error(`unable to reload logind conf: ${(err as Error).message}`, { cause: err });
      }
    },
    async inhibitShutdown() {
      const { what, who, why, mode } = INHIBITOR;
      // `cat` holds the lock for as long as the kubelet's end of its stdin is open.
      const child = spawn(
        'systemd-inhibit',
        [`--what=${what}`, `--who=${who}`, `--why=${why}`, `--mode=${mode}`, 'cat'],
        { stdio: ['pipe', 'ignore', 'pipe'] },
      );
      const err = collected(child.stderr!, MAX_STDERR_BYTES);
      child.stdin!.on('error', () => {});
      const spawned = await new Promise<Error | undefined>((resolve) => {
        child.once('spawn', () => resolve(undefined));
        child.once('error', (e: NodeJS.ErrnoException) => resolve(new Error(`cannot run systemd-inhibit: ${e.code}`)));
      });
      if (spawned) throw new Error(`error creating inhibitor: ${spawned.message}`);
      const release = () => {
        child.stdin!.end();
        child.kill('SIGTERM');
      };
      // Held once logind lists it under the holder's PID (systemd-inhibit execs `cat` in its own process).
      for (let i = 0; i < 100 && !exited(child); i++) {
        const list = await bus.call(logindCall('ListInhibitors')).catch(() => []);
        if (inhibitorPids(list, who, what).includes(child.pid!)) return { release };
        await pause(50);
      }
      release();
      throw new Error(`error creating inhibitor: ${err.text().trim() || 'logind did not list the lock'}`);
    },
    async watchShutdown(onEvent) {
      const match = `type='signal',interface='${LOGIND[2]}',member='PrepareForShutdown',path='${LOGIND[1]}'`;
      try {
        return await watchSignals(match, (signal) => {
          if (signal.member !== 'PrepareForShutdown') return;
          const event = prepareForShutdownOf(signal.body);
          if (event !== undefined) onEvent(event);
        });
      } catch (err) {
        throw new Error(`failed to monitor shutdown: ${(err as Error).message}`, { cause: err });
      }
    },
  };
}
