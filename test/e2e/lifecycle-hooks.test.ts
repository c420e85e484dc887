/**
 * Lifecycle hooks end to end on the embedded runtime against the fake apiserver: postStart runs
 * (an observable file) before the container counts as started; a failing postStart kills the
 * container with FailedPostStartHook; preStop runs before the stop signal (an HTTP call to another
 * pod, then a file) and a failing one is FailedPreStopHook while the stop goes on; sleep hooks as upstream's
 * "Lifecycle sleep action" specs (scaled down): the container stops after the sleep, or at the grace period a
 * delete gives when that is shorter (counted in kubelet_sleep_action_terminated_early_total), zero seconds at once;
 * with ContainerStopSignals on, `lifecycle.stopSignal` is the signal that stops the container and its status names it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundPod, kubectl, startCluster, type Cluster } from './cluster-helpers.js';
import { httpGet, until } from './helpers.js';

const node = 'hook-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-hooks-'));
let c: Cluster;
let peer: http.Server;
let peerPort: number;
const calls: string[] = [];
type Obj = Record<string, any>;
const pod = (name: string) => c.api.store.get('pods', 'default', name) as Obj | undefined;
const events = (name: string) => c.api.store.list('events', (e: Obj) => e.involvedObject?.name === name) as Obj[];

beforeAll(async () => {
  peer = http.createServer((req, res) => {
    calls.push(req.url ?? '');
    res.end('ok');
  });
  await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
  peerPort = (peer.address() as AddressInfo).port;
  c = await startCluster({ dir, node, extra: ['--feature-gates=ContainerStopSignals=true'] });
  await until(() => c.api.store.get('nodes', '', node), 20_000, 'node registered');
}, 30_000);
afterAll(async () => {
  await c?.close();
  peer.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('lifecycle hooks', () => {
  it('postStart runs before the container is reported started; preStop runs before the stop signal', async () => {
    const out = join(dir, 'hooks.log');
    c.api.store.create(
      'pods',
      boundPod('hooked', node, {
        terminationGracePeriodSeconds: 10,
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sh', '-c', `trap 'echo term >> ${out}; exit 0' TERM; while true; do sleep 0.1; done`],
            lifecycle: {
              postStart: { exec: { command: ['sh', '-c', `echo post-start >> ${out}`] } },
              preStop: { httpGet: { path: '/pre-stop', port: peerPort, host: '127.0.0.1' } },
            },
          },
        ],
      }),
    );
    await until(() => pod('hooked')?.status?.containerStatuses?.[0]?.started, 20_000, 'started');
    expect(readFileSync(out, 'utf8')).toBe('post-start\n');
    c.api.store.remove('pods', 'default', 'hooked', {});
    await until(() => existsSync(out) && readFileSync(out, 'utf8').includes('term'), 20_000, 'stopped');
    expect(calls).toContain('/pre-stop');
    expect(readFileSync(out, 'utf8')).toBe('post-start\nterm\n');
  }, 40_000);

  it('stopSignal (ContainerStopSignals): the container is stopped with it, and each status names its signal', async () => {
    const out = join(dir, 'stop-signals.log');
    const trapSet = join(dir, 'stop-signals-trap-set');
    const trapping = (name: string) => ({
      name,
      image: 'busybox',
      command: [
        'sh',
        '-c',
        `trap 'echo ${name} >> ${out}; exit 0' USR1; echo ${name} >> ${trapSet}; while true; do sleep 0.1; done`,
      ],
    });
    c.api.store.create(
      'pods',
      boundPod('stop-signals', node, {
        terminationGracePeriodSeconds: 10,
        containers: [{ ...trapping('usr1'), lifecycle: { stopSignal: 'SIGUSR1' } }, trapping('plain')],
      }),
    );
    await until(() => pod('stop-signals')?.status?.containerStatuses?.every((s: Obj) => s.started), 20_000, 'started');
    await until(
      () => existsSync(trapSet) && readFileSync(trapSet, 'utf8').split('\n').length === 3,
      10_000,
      'traps set',
    );
    const signals = Object.fromEntries(
      pod('stop-signals')!.status.containerStatuses.map((s: Obj) => [s.name, s.stopSignal]),
    );
    expect(signals).toEqual({ usr1: 'SIGUSR1', plain: 'SIGTERM' });
    c.api.store.remove('pods', 'default', 'stop-signals', {});
    await until(() => existsSync(out), 20_000, 'a trap ran');
    // The SIGUSR1 container ran its trap; the other was ended by SIGTERM, which it does not trap.
    expect(readFileSync(out, 'utf8')).toBe('usr1\n');
  }, 40_000);

  it('a failing postStart kills the container (FailedPostStartHook); a failing preStop is FailedPreStopHook and the stop goes on', async () => {
    c.api.store.create(
      'pods',
      boundPod('bad-post', node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            lifecycle: {
              postStart: { exec: { command: ['sh', '-c', 'echo nope; exit 3'] } },
              preStop: { httpGet: { path: '/bad-post-pre-stop', port: peerPort, host: '127.0.0.1' } },
            },
          },
        ],
      }),
    );
    const ev = await until(
      () => events('bad-post').find((e) => e.reason === 'FailedPostStartHook'),
      20_000,
      'FailedPostStartHook',
    );
    // The container is stopped as upstream's killContainer does it, with the hook's name as the Killing message ...
    await until(
      () => events('bad-post').find((e) => e.reason === 'Killing' && e.message === 'FailedPostStartHook'),
      10_000,
      'Killing FailedPostStartHook',
    );
    // ... and its preStop hook runs first, as killContainer runs it.
    await until(() => calls.includes('/bad-post-pre-stop'), 10_000, 'the preStop hook of a failed postStart');
    expect(ev.message).toMatch(
      /^Exec lifecycle hook \(\[sh -c echo nope; exit 3\]\) for Container "main" in Pod "bad-post_default\([^)]+\)" failed - error: command 'sh -c echo nope; exit 3' exited with 3: , message: "nope\\n"$/,
    );
    await until(
      () =>
        (pod('bad-post')?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ||
        pod('bad-post')?.status?.containerStatuses?.[0]?.state?.waiting,
      20_000,
      'not running',
    );
    c.api.store.create(
      'pods',
      boundPod('bad-pre', node, {
        terminationGracePeriodSeconds: 5,
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            lifecycle: { preStop: { exec: { command: ['false'] } } },
          },
        ],
      }),
    );
    await until(() => pod('bad-pre')?.status?.containerStatuses?.[0]?.state?.running, 20_000, 'bad-pre running');
    c.api.store.remove('pods', 'default', 'bad-pre', {});
    const failed = await until(
      () => events('bad-pre').find((e) => e.reason === 'FailedPreStopHook'),
      20_000,
      'FailedPreStopHook',
    );
    // Upstream's words, without the hook's output (it may carry secrets).
    expect(failed).toMatchObject({ type: 'Warning', message: 'PreStopHook failed' });
    await until(() => !pod('bad-pre'), 30_000, 'bad-pre deleted');
  }, 60_000);

  it('sleep hooks as upstream: the stop waits for the sleep; a delete with a shorter grace period cuts it (counted); zero seconds does not wait', async () => {
    const finalizer = 'test/finalizer';
    const sleeper = (name: string, seconds: number, grace: number) => {
      const p = boundPod(name, node, {
        terminationGracePeriodSeconds: grace,
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            lifecycle: { preStop: { sleep: { seconds } } },
          },
        ],
      }) as Obj;
      p.metadata.finalizers = [finalizer];
      c.api.store.create('pods', p);
    };
    // Upstream's way of reading it: the pod kept by a finalizer, the container's finishedAt against the time of
    // the delete (deletionTimestamp less the grace period the delete gave).
    const sleptFor = async (name: string, graceGiven: number) => {
      const terminated = await until(
        () => pod(name)?.status?.containerStatuses?.[0]?.state?.terminated,
        40_000,
        `${name} terminated`,
      );
      const deletedAt = Date.parse(pod(name)!.metadata.deletionTimestamp) - graceGiven * 1000;
      return (Date.parse(terminated.finishedAt) - deletedAt) / 1000;
    };
    sleeper('sleep-valid', 3, 30);
    sleeper('sleep-cut', 3600, 100);
    sleeper('sleep-zero', 0, 30);
    for (const name of ['sleep-valid', 'sleep-cut', 'sleep-zero'])
      await until(() => pod(name)?.status?.containerStatuses?.[0]?.state?.running, 20_000, `${name} running`);
    for (const [name, grace] of [
      ['sleep-valid', 30],
      ['sleep-cut', 3],
      ['sleep-zero', 30],
    ] as const) {
      const deleted = await kubectl(c, ['delete', 'pod', name, `--grace-period=${grace}`, '--wait=false']);
      expect(deleted.code, deleted.stderr).toBe(0);
    }
    // Timestamps are in whole seconds: a second either way.
    const valid = await sleptFor('sleep-valid', 30);
    expect(valid).toBeGreaterThanOrEqual(3 - 1);
    expect(valid).toBeLessThan(30);
    // Cut at the delete's 3 s (then the minimum grace of 2 s for the stop), far from the hour it asked for.
    const cut = await sleptFor('sleep-cut', 3);
    expect(cut).toBeGreaterThanOrEqual(3 - 1);
    expect(cut).toBeLessThan(3 + 2 + 10);
    expect(await sleptFor('sleep-zero', 30)).toBeLessThan(30);
    expect(events('sleep-cut').find((e) => e.reason === 'FailedPreStopHook')).toMatchObject({
      message: 'PreStopHook failed',
    });
    expect(events('sleep-valid').some((e) => e.reason === 'FailedPreStopHook')).toBe(false);
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    expect(metrics).toContain('\nkubelet_sleep_action_terminated_early_total 1\n');
    for (const name of ['sleep-valid', 'sleep-cut', 'sleep-zero']) {
      // A JSON patch (RFC 6902), as kubectl sends one; a path that is not there is the apiserver's 422.
      const missing = await kubectl(c, [
        'patch',
        'pod',
        name,
        '--type=json',
        '-p',
        '[{"op":"remove","path":"/metadata/nothing"}]',
      ]);
      expect(missing.code).not.toBe(0);
      expect(missing.stderr).toContain('the server rejected our request due to an error in our request');
      const removed = await kubectl(c, [
        'patch',
        'pod',
        name,
        '--type=json',
        '-p',
        '[{"op":"remove","path":"/metadata/finalizers"}]',
      ]);
      expect(removed.code, removed.stderr).toBe(0);
    }
    // Without their finalizer the deleted pods go.
    for (const name of ['sleep-valid', 'sleep-cut', 'sleep-zero'])
      await until(() => !pod(name), 10_000, `${name} gone`);
  }, 90_000);
});
