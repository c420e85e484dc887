/**
 * Lifecycle hooks end to end on the embedded runtime against the fake apiserver: postStart runs
 * (an observable file) before the container counts as started; a failing postStart kills the
 * container with FailedPostStartHook; preStop runs before the stop signal (an HTTP call to another
 * pod, then a file) and a failing one is FailedPreStopHook while the stop goes on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundPod, startCluster, type Cluster } from './cluster-helpers.js';
import { until } from './helpers.js';

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
  c = await startCluster({ dir, node });
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
});
