/**
 * The kubelet and systemd's notify protocol, as upstream's: "READY=1" once started, and with a unit's
 * `WatchdogSec=` (WATCHDOG_USEC) "WATCHDOG=1" every half of it while healthy, each sent as the
 * kubelet's own process (NotifyAccess=main); watchdog settings systemd would not give stop the start
 * with upstream's message. The notify socket is a real Unix datagram socket; `systemd-notify` sends;
 * and a real systemd runs the kubelet as a `Type=notify` service with `WatchdogSec=`.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNotifySocket } from '../fixtures/notify-socket.js';
import { canRunSystemd, startSystemd } from '../fixtures/systemd.js';
import { freeKubeletPorts, kubeletArgs, runKubelet, startKubelet, until, withHostArgs } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-watchdog-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `fn` with `env` set in this process's environment (which the spawned kubelet inherits). */
async function withEnv<T>(env: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
}

describe('systemd notifications', () => {
  it('READY=1 once started, then WATCHDOG=1 every half of WatchdogSec, all from the kubelet', async () => {
    const socket = await startNotifySocket(join(dir, 'notify.sock'));
    const ports = await freeKubeletPorts();
    const k = await withEnv({ NOTIFY_SOCKET: socket.path, WATCHDOG_USEC: '2000000' }, async () =>
      startKubelet(kubeletArgs({ dir: join(dir, 'a'), ports, node: 'watchdog-node' })),
    );
    try {
      // What the kubelet said and sent by the deadline, not when the wait began (a CI run once timed out here with
      // neither to go on; the cause was not reproduced).
      await until(
        () => socket.messages.filter((m) => m.state === 'WATCHDOG=1').length >= 3,
        20_000,
        'three watchdog notifications',
      ).catch((err: unknown) => {
        const sent = socket.messages.map((m) => m.state).join(', ');
        throw new Error(`${(err as Error).message}; sent: [${sent}]; output: ${k.output().slice(-2000)}`);
      });
      expect(socket.messages.map((m) => m.state)).toContain('READY=1');
      expect(new Set(socket.messages.map((m) => m.pid))).toEqual(new Set([k.proc.pid]));
      expect(k.output()).toContain('Starting systemd watchdog with interval');
    } finally {
      await k.stop();
      socket.close();
    }
  }, 40_000);

  it("another process's watchdog (WATCHDOG_PID) is not the kubelet's: READY=1 only", async () => {
    const socket = await startNotifySocket(join(dir, 'notify-other.sock'));
    const ports = await freeKubeletPorts();
    const k = await withEnv(
      { NOTIFY_SOCKET: socket.path, WATCHDOG_USEC: '2000000', WATCHDOG_PID: String(process.pid) },
      async () => startKubelet(kubeletArgs({ dir: join(dir, 'b'), ports, node: 'watchdog-node' })),
    );
    try {
      await until(() => socket.messages.some((m) => m.state === 'READY=1'), 20_000, 'ready');
      await new Promise((r) => setTimeout(r, 2500));
      expect(socket.messages.map((m) => m.state)).toEqual(['READY=1']);
    } finally {
      await k.stop();
      socket.close();
    }
  }, 40_000);

  it('a watchdog timeout of 1 s or less, or one that is no number, stops the start with upstream’s message', async () => {
    const ports = await freeKubeletPorts();
    const run = (usec: string) =>
      withEnv({ WATCHDOG_USEC: usec }, () => runKubelet(kubeletArgs({ dir: join(dir, 'c'), ports, node: 'n' })));
    const small = await run('800000');
    expect(small.code).toBe(1);
    expect(small.output).toContain(
      'failed to run Kubelet: create health checker: configure watchdog timeout too small: 800ms',
    );
    const text = await run('soon');
    expect(text.code).toBe(1);
    expect(text.output).toContain(
      'create health checker: configure watchdog: error converting WATCHDOG_USEC: strconv.Atoi: parsing \\"soon\\": invalid syntax',
    );
  }, 40_000);
});

describe.runIf(canRunSystemd())('under a real systemd', () => {
  it('a Type=notify service with WatchdogSec=3s becomes active and stays up: systemd hears the kubelet', async () => {
    const root = mkdtempSync('/var/tmp/tsk-watchdog-systemd-');
    const systemd = await startSystemd(root, `tsk-watchdog-${process.pid}`);
    const [enter, ...enterArgs] = systemd.enter();
    try {
      const ports = await freeKubeletPorts();
      execFileSync(enter, [
        ...enterArgs,
        'systemd-run',
        '--unit=tsk-kubelet',
        ...['-p', 'Type=notify', '-p', 'WatchdogSec=3s', '-p', 'Restart=no', '-p', 'DefaultDependencies=no'],
        process.execPath,
        join(import.meta.dirname, '../../bin/tskubelet.js'),
        ...withHostArgs(kubeletArgs({ dir: root, ports, node: 'watchdog-node' })),
      ]);
      const show = (name: string) => systemd.property('tsk-kubelet.service', name);
      // Active only once the kubelet said READY=1 (systemd-run waits for nothing: it is polled).
      await until(() => show('ActiveState') === 'active', 20_000, `active (${show('ActiveState')})`);
      const firstBeat = show('WatchdogTimestampMonotonic');
      // Past two watchdog timeouts: a service that stopped notifying would be killed (Result=watchdog) by now.
      await new Promise((r) => setTimeout(r, 7000));
      expect([show('ActiveState'), show('Result'), show('NRestarts')]).toEqual(['active', 'success', '0']);
      expect(Number(show('WatchdogTimestampMonotonic'))).toBeGreaterThan(Number(firstBeat));
    } finally {
      await systemd.stop();
      rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);
});
