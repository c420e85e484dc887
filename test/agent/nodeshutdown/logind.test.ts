/**
 * The node shutdown manager's logind client and the manager itself against a real systemd-logind on a private bus
 * (test/fixtures/logind.ts): the inhibit delay read, a delay lock logind lists and drops on release,
 * PrepareForShutdown followed, and the manager's start (its override when logind's delay is short, refused as
 * upstream's when logind cannot be reloaded), its handling of a shutdown (pods killed group by group, the node's
 * status, the state file, the lock released) and of a cancellation (the lock taken again), and its reconnection
 * when the bus comes back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../../../src/api/types.js';
import { realClock } from '../../../src/lib/clock.js';
import { silentLogger } from '../../../src/lib/logger.js';
import { systemdLogind } from '../../../src/agent/nodeshutdown/logind.js';
import {
  NODE_SHUTDOWN_MESSAGE,
  NodeShutdownManager,
  type NodeShutdownDeps,
} from '../../../src/agent/nodeshutdown/node-shutdown-manager.js';
import { ShutdownStateFile } from '../../../src/agent/nodeshutdown/shutdown-state.js';
import { startLogind, type Logind } from '../../fixtures/logind.js';
import { useSystemBusAddress } from '../../fixtures/system-bus-address.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-logind-'));
let logind: Logind;
let restoreBus = () => {};

beforeAll(async () => {
  logind = await startLogind(join(dir, 'logind'), 10);
  restoreBus = useSystemBusAddress(logind.busAddress);
});
afterAll(async () => {
  restoreBus();
  await logind?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const kubeletLocks = () => logind.kubeletLocks();
const emit = (shuttingDown: boolean) => logind.emitPrepareForShutdown(shuttingDown);
const until = async (check: () => boolean, what: string, ms = 10_000) => {
  for (const end = Date.now() + ms; !check();) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('logind on the system bus and systemd-inhibit', () => {
  it('reads InhibitDelayMaxUSec; a delay lock on shutdown is listed under the kubelet until released', async () => {
    const client = systemdLogind(join(dir, 'unused-conf'));
    expect(await client.inhibitDelayMs()).toBe(10_000);
    const listed = logind.busctl([
      'call',
      'org.freedesktop.login1',
      '/org/freedesktop/login1',
      'org.freedesktop.login1.Manager',
      'ListInhibitors',
    ]);
    expect(listed).not.toContain('kubelet');
    const lock = await client.inhibitShutdown();
    expect(kubeletLocks()).toHaveLength(1);
    expect(
      logind.busctl([
        'call',
        'org.freedesktop.login1',
        '/org/freedesktop/login1',
        'org.freedesktop.login1.Manager',
        'ListInhibitors',
      ]),
    ).toContain('"shutdown" "kubelet" "Kubelet needs time to handle node shutdown" "delay"');
    lock.release();
    await until(() => kubeletLocks().length === 0, 'the lock released');
  });

  it("a host without a system bus or systemd's tools: an error saying which (the kubelet logs it and runs on)", async () => {
    const path = process.env.PATH;
    process.env.PATH = join(dir, 'no-such-bin');
    const restore = useSystemBusAddress(`unix:path=${join(dir, 'no-bus')}`);
    try {
      await expect(systemdLogind().inhibitDelayMs()).rejects.toThrow(/^system bus: connect ENOENT/);
      await expect(systemdLogind().watchShutdown(() => {})).rejects.toThrow(
        /^failed to monitor shutdown: system bus: connect ENOENT/,
      );
      await expect(systemdLogind().inhibitShutdown()).rejects.toThrow(
        'error creating inhibitor: cannot run systemd-inhibit: ENOENT',
      );
    } finally {
      process.env.PATH = path;
      restore();
    }
  });

  it('follows PrepareForShutdown both ways until stopped', async () => {
    const seen: boolean[] = [];
    const watch = await systemdLogind().watchShutdown((event) => seen.push(event));
    emit(true);
    emit(false);
    await until(() => seen.length === 2, 'two signals');
    expect(seen).toEqual([true, false]);
    watch.stop();
    await watch.ended;
  });
});

/** A pod of `priority` with `grace` seconds of its own. */
const pod = (name: string, priority: number, grace?: number): Pod =>
  ({
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { containers: [], priority, ...(grace !== undefined ? { terminationGracePeriodSeconds: grace } : {}) },
  }) as unknown as Pod;

function manager(o: { configDir: string; groups: NodeShutdownDeps['groups']; pods?: Pod[]; stateDir?: string }) {
  const killed: { name: string; grace: number; at: number; reason: string; message: string }[] = [];
  const events: { reason: string; message: string }[] = [];
  const gauges = { start: 0, end: 0 };
  let statusSyncs = 0;
  const m = new NodeShutdownManager({
    groups: o.groups,
    logind: systemdLogind(o.configDir),
    activePods: () => o.pods ?? [],
    killPod: (p, grace, verdict) => killed.push({ name: p.metadata.name!, grace, at: Date.now(), ...verdict }),
    // A pod stops a moment after it is killed.
    stopped: (uid) => killed.some((k) => `uid-${k.name}` === uid && Date.now() - k.at > 200),
    syncNodeStatus: () => statusSyncs++,
    events: { record: (_ref, _type, reason, message) => events.push({ reason, message }) },
    node: { kind: 'Node', name: 'n', uid: 'n' },
    record: o.stateDir
      ? {
          state: new ShutdownStateFile(o.stateDir),
          startTime: (s) => (gauges.start = s),
          endTime: (s) => (gauges.end = s),
        }
      : undefined,
    clock: realClock,
    logger: silentLogger,
  });
  return { m, killed, events, gauges, statusSyncs: () => statusSyncs };
}

describe('the node shutdown manager on logind', () => {
  it("a logind delay shorter than the groups need: the override written, and upstream's error when logind cannot be reloaded (no systemd here)", async () => {
    const configDir = join(dir, 'override');
    const { m } = manager({ configDir, groups: [{ priority: 0, graceSeconds: 15 }] });
    const abort = new AbortController();
    await expect(m.start(abort.signal)).rejects.toThrow(
      /^unable to reload logind conf: The name org.freedesktop.systemd1 was not provided/,
    );
    expect(readFileSync(join(configDir, '99-kubelet.conf'), 'utf8')).toBe(
      '# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=15\n',
    );
    expect(kubeletLocks()).toEqual([]);
    abort.abort();
  });

  it('a shutdown: the node shutting down, pods killed group by group with their grace, the state kept, the lock released; a cancellation takes it again', async () => {
    const stateDir = join(dir, 'state');
    const pods = [pod('regular', 0, 30), pod('short', 0, 1), pod('critical', 2_000_000_000)];
    const t = manager({
      configDir: join(dir, 'unused'),
      groups: [
        { priority: 0, graceSeconds: 4 },
        { priority: 2_000_000_000, graceSeconds: 2 },
      ],
      pods,
      stateDir,
    });
    const abort = new AbortController();
    await t.m.start(abort.signal);
    expect(kubeletLocks()).toHaveLength(1);
    expect(t.m.shutdownStatus()).toBeUndefined();
    expect(t.m.admit()).toBeUndefined();
    const before = Date.now() / 1000;
    emit(true);
    await until(() => t.m.shutdownStatus() === 'node is shutting down', 'shutting down');
    expect(t.m.admit()).toEqual({
      admit: false,
      reason: 'NodeShutdown',
      message: 'Pod was rejected as the node is shutting down.',
    });
    await until(() => kubeletLocks().length === 0, 'the lock released after the pods');
    // The regular pods first (each its own grace when shorter than the group's), then the critical one.
    expect(t.killed.map((k) => [k.name, k.grace])).toEqual([
      ['regular', 4],
      ['short', 1],
      ['critical', 2],
    ]);
    expect(t.killed[2].at).toBeGreaterThanOrEqual(Math.max(t.killed[0].at, t.killed[1].at) + 200);
    expect(new Set(t.killed.map((k) => `${k.reason}: ${k.message}`))).toEqual(
      new Set([`Terminated: ${NODE_SHUTDOWN_MESSAGE}`]),
    );
    expect(t.events).toEqual([{ reason: 'NodeShutdown', message: 'Shutdown manager detected shutdown event' }]);
    expect(t.statusSyncs()).toBe(1);
    const state = JSON.parse(readFileSync(join(stateDir, 'graceful_node_shutdown_state'), 'utf8')) as Record<
      string,
      string
    >;
    expect(Object.keys(state)).toEqual(['startTime', 'endTime']);
    expect(Date.parse(state.endTime)).toBeGreaterThanOrEqual(Date.parse(state.startTime));
    expect(t.gauges.start).toBeGreaterThanOrEqual(Math.floor(before));
    expect(t.gauges.end).toBeGreaterThanOrEqual(t.gauges.start);
    emit(false);
    await until(() => kubeletLocks().length === 1, 'the lock taken again');
    expect(t.m.shutdownStatus()).toBeUndefined();
    expect(t.events.at(-1)).toEqual({
      reason: 'NodeShutdown',
      message: 'Shutdown manager detected shutdown cancellation',
    });
    abort.abort();
    await until(() => kubeletLocks().length === 0, 'the lock released when the kubelet stops');
    // The next kubelet reports the last shutdown's times from the file.
    const next = manager({ configDir: join(dir, 'unused'), groups: [{ priority: 0, graceSeconds: 4 }], stateDir });
    const again = new AbortController();
    await next.m.start(again.signal);
    expect(next.gauges).toEqual({ start: Date.parse(state.startTime) / 1000, end: Date.parse(state.endTime) / 1000 });
    again.abort();
  }, 30_000);

  it('a system bus that went away and came back: the watch set up again, the lock taken anew, shutdowns followed', async () => {
    const t = manager({ configDir: join(dir, 'unused'), groups: [{ priority: 0, graceSeconds: 2 }] });
    const abort = new AbortController();
    await t.m.start(abort.signal);
    expect(kubeletLocks()).toHaveLength(1);
    await logind.restart();
    // Upstream's reconnect: a second after the watch ended.
    await until(() => kubeletLocks().length === 1, 'the lock on the new logind');
    emit(true);
    await until(() => t.m.shutdownStatus() === 'node is shutting down', 'the shutdown seen on the new bus');
    emit(false);
    await until(() => t.m.shutdownStatus() === undefined && kubeletLocks().length === 1, 'the cancellation');
    abort.abort();
    await until(() => kubeletLocks().length === 0, 'the lock released');
  }, 30_000);
});
