/**
 * systemd-logind on the system bus, as upstream's node shutdown manager uses it (nodeshutdown/systemd): the
 * longest delay logind lets an inhibitor hold a shutdown (InhibitDelayMaxUSec), the kubelet's override of it in
 * logind's configuration and the reload that applies it, a delay inhibitor lock on shutdown, and the
 * PrepareForShutdown signal.
 *
 * Through systemd's own tools rather than a D-Bus library: an inhibitor lock is a file descriptor logind passes
 * over the bus (SCM_RIGHTS), which Node's sockets cannot receive, and `systemd-inhibit` exists to hold one for a
 * process. `busctl` (systemd ≥ 240 for `--json`) reads the property, makes the reload call and follows the signal.
 * Both are on every systemd host; the bus is the system bus, or DBUS_SYSTEM_BUS_ADDRESS as for any client. The
 * lock's holder reads the kubelet's pipe, so a kubelet that dies releases it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { busctl, collected, MAX_OUTPUT_BYTES, MAX_STDERR_BYTES } from '../../lib/busctl.js';

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

/** PrepareForShutdown's argument from one line of `busctl --json=short monitor` (pure); undefined for another. */
export function prepareForShutdownOf(line: string): boolean | undefined {
  let message: { member?: unknown; payload?: { data?: unknown } };
  try {
    message = JSON.parse(line) as typeof message;
  } catch {
    return undefined;
  }
  const data = message.payload?.data;
  return message.member === 'PrepareForShutdown' && Array.isArray(data) && typeof data[0] === 'boolean'
    ? data[0]
    : undefined;
}

/** The PIDs of `who`'s inhibitors of `what`, from `busctl --json=short call … ListInhibitors` (pure). */
export function inhibitorPids(json: string, who: string, what: string): number[] {
  const answer = JSON.parse(json) as { data?: unknown[] };
  const list = (answer.data?.[0] ?? []) as unknown[][];
  return list.filter((i) => i[0] === what && i[1] === who).map((i) => Number(i[5]));
}

/**
 * `command` run so that the kernel kills it when the kubelet dies (util-linux `setpriv --pdeathsig`, where it is on
 * the PATH): `busctl monitor` writes only when a signal comes, so a kubelet killed outside systemd would otherwise
 * leave it behind until then.
 */
function dyingWithParent(command: string, args: string[]): [string, string[]] {
  const setpriv = (process.env.PATH ?? '')
    .split(':')
    .map((dir) => join(dir || '.', 'setpriv'))
    .find((path) => existsSync(path));
  return setpriv ? [setpriv, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, args];
}

/** Resolves after `ms`. */
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether `child` has exited. */
const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/** systemd-logind through busctl and systemd-inhibit; `configDir`: logind's drop-in directory. */
export function systemdLogind(configDir = '/etc/systemd/logind.conf.d'): Logind {
  return {
    async inhibitDelayMs() {
      const answer = JSON.parse(await busctl(['get-property', ...LOGIND, 'InhibitDelayMaxUSec'])) as { data: unknown };
      return Number(answer.data) / 1000;
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
        await busctl([
          'call',
          'org.freedesktop.systemd1',
          '/org/freedesktop/systemd1',
          'org.freedesktop.systemd1.Manager',
          'KillUnit',
          'ssi',
          'systemd-logind.service',
          'all',
          '1',
        ]);
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
        const list = await busctl(['call', ...LOGIND, 'ListInhibitors']).catch(() => '');
        if (list && inhibitorPids(list, who, what).includes(child.pid!)) return { release };
        await pause(50);
      }
      release();
      throw new Error(`error creating inhibitor: ${err.text().trim() || 'logind did not list the lock'}`);
    },
    async watchShutdown(onEvent) {
      const match = `type='signal',interface='${LOGIND[2]}',member='PrepareForShutdown',path='${LOGIND[1]}'`;
      const [command, args] = dyingWithParent('busctl', ['--system', '--json=short', 'monitor', `--match=${match}`]);
      const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      const ended = new Promise<void>((resolve) => child.once('close', () => resolve()));
      let pending = '';
      child.stdout!.on('data', (d: Buffer) => {
        pending += d.toString('utf8');
        let newline: number;
        while ((newline = pending.indexOf('\n')) >= 0) {
          const event = prepareForShutdownOf(pending.slice(0, newline));
          pending = pending.slice(newline + 1);
          if (event !== undefined) onEvent(event);
        }
        // A line longer than any signal's is not one of ours: dropped, so that the buffer stays bounded.
        if (pending.length > MAX_OUTPUT_BYTES) pending = '';
      });
      // busctl says it is following the bus on stderr; until then a signal could be missed.
      const err = collected(child.stderr!, MAX_STDERR_BYTES);
      const ready = await new Promise<string | undefined>((resolve) => {
        child.stderr!.on('data', () => {
          if (err.text().includes('Monitoring bus message stream')) resolve(undefined);
        });
        child.once('error', (e: NodeJS.ErrnoException) => resolve(`cannot run busctl: ${e.code}`));
        void ended.then(() => resolve(err.text().trim() || 'busctl monitor ended'));
      });
      if (ready !== undefined) {
        child.kill('SIGKILL');
        throw new Error(`failed to monitor shutdown: ${ready}`);
      }
      return { ended, stop: () => child.kill('SIGTERM') };
    },
  };
}
