/**
 * The wall clock stepped back (NTP correcting a clock that ran ahead, `date -s`, a hardware clock kept in local
 * time): the kubelet's own waits go on, as the Go kubelet's do on the monotonic readings of time.Now. Before, each
 * wait measured on the wall clock was held back by the step: an hour back, and no pod was synced again, no probe
 * ran, no unchanged node status was reported and a failed image pull was not tried again for an hour.
 */
import { describe, expect, it } from 'vitest';
import { SyncLoop, type SyncLoopDeps } from '../../src/agent/sync/sync-loop.js';
import { WorkQueue } from '../../src/agent/sync/work-queue.js';
import { PodManager } from '../../src/agent/pods/pod-manager.js';
import { ProberManager } from '../../src/agent/prober/prober-manager.js';
import { ImageManager } from '../../src/agent/images/image-manager.js';
import { backoffRemaining, nextBackoff } from '../../src/agent/sync/backoff.js';
import { newestFirst } from '../../src/agent/runtime/runtime-manager.js';
import type { RuntimeContainer } from '../../src/agent/runtime/pod-runtime-status.js';
import { NodeStatusManager } from '../../src/agent/nodestatus/node-status-manager.js';
import type { PodRuntimeStatus } from '../../src/agent/runtime/pod-runtime-status.js';
import type { Pod } from '../../src/api/types.js';
import type { ImageService, RuntimeService } from '../../src/cri/services.js';
import { createKubeClient } from '../../src/lib/kube-client.js';
import { FakeClock } from '../../src/lib/clock.js';
import { silentLogger as logger } from '../../src/lib/logger.js';
import { useFakeApiserver } from '../fixtures/apiserver/suite.js';
import { testMachine, testNodeSettings } from './nodestatus/node-fixture.js';

const fake = useFakeApiserver();
const HOUR = 3_600_000;
const flush = () => new Promise((resolve) => setImmediate(resolve));

/** Advances the fake clock `seconds` seconds, a second at a time, letting what each second started run. */
async function run(clock: FakeClock, seconds: number) {
  for (let i = 0; i < seconds; i++) {
    clock.advance(1000);
    await flush();
  }
}

const pod: Pod = {
  metadata: { name: 'p', namespace: 'default', uid: 'u1' },
  spec: {
    containers: [{ name: 'c', image: 'i', livenessProbe: { exec: { command: ['check'] }, periodSeconds: 10 } }],
  },
};

describe('a wall clock stepped back an hour', () => {
  it('does not hold back a pod sync due in 10 s', async () => {
    const clock = new FakeClock(1_000_000_000);
    const podManager = new PodManager();
    podManager.addOrUpdate(pod);
    const synced: string[] = [];
    const workQueue = new WorkQueue(clock);
    const loop = new SyncLoop({
      podConfig: { onUpdate: () => {}, allSourcesSeen: () => false },
      pleg: { onEvent: () => {} },
      podManager,
      workers: { update: (u: { pod: Pod }) => synced.push(u.pod.metadata.uid!) },
      workQueue,
      clock,
      logger,
      housekeeping: async () => {},
    } as unknown as SyncLoopDeps);
    const stop = new AbortController();
    loop.start({ signal: stop.signal });
    workQueue.enqueue('u1', clock.now() + 10_000);
    clock.stepWall(-HOUR);
    await run(clock, 9);
    expect(synced).toEqual([]);
    await run(clock, 2);
    expect(synced).toEqual(['u1']);
    // And the sync loop's health is measured on the same clock: it ran a second ago, not an hour ahead.
    expect(clock.monotonic() - loop.lastIterationAt()).toBeLessThanOrEqual(1000);
    stop.abort();
  });

  it('does not stop a liveness probe with a 10 s period', async () => {
    const clock = new FakeClock(1_000_000_000);
    let probes = 0;
    const runtime = {
      execSync: async () => {
        probes++;
        return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exit_code: 0 };
      },
    } as unknown as RuntimeService;
    const prober = new ProberManager({ runtime, clock, logger, onChange: () => {}, random: () => 0 });
    const status: PodRuntimeStatus = {
      uid: 'u1',
      name: 'p',
      namespace: 'default',
      sandboxes: [{ id: 's', ready: true, createdAt: 0, attempt: 0, ip: '10.0.0.1' }],
      containers: [
        {
          ...{ id: 'c1', name: 'c', state: 'running', createdAt: 1, startedAt: clock.now() - 60_000, finishedAt: 0 },
          ...{ exitCode: 0, reason: '', message: '', image: 'i', imageRef: 'x', hash: '', restartCount: 0 },
          ...{ logPath: '', sandboxId: 's' },
        },
      ],
    };
    prober.syncPod(pod, status, '10.0.0.1');
    await run(clock, 30);
    const before = probes;
    expect(before).toBeGreaterThanOrEqual(2);
    clock.stepWall(-HOUR);
    await run(clock, 60);
    // Six more periods: about six more probes (not none until the wall clock is back where it was).
    expect(probes - before).toBeGreaterThanOrEqual(5);
    prober.removePod('u1');
  });

  it('does not hold back the unchanged node status report due after nodeStatusReportFrequency', async () => {
    fake.api.store.create('nodes', { metadata: { name: 'stepped' }, status: {} });
    const clock = new FakeClock(1_000_000_000);
    const manager = new NodeStatusManager({
      client: await createKubeClient(fake.kubeconfigFor('system:node:stepped'), { timeoutMs: 3000 }),
      settings: testNodeSettings('stepped'),
      registerNode: false,
      machine: testMachine(),
      runtime: async () => ({ runtimeVersion: 'containerd://1.6', runtimeErrors: [], images: [] }),
      events: { record: () => {} },
      clock,
      logger,
      updateFrequencyMs: 10_000,
      reportFrequencyMs: 60_000,
      // No jitter after a report: the next unchanged one is due exactly a report period later.
      random: () => 0.5,
    });
    expect(await manager.updateOnce()).toBe(true);
    clock.stepWall(-HOUR);
    clock.advance(30_000);
    expect(await manager.updateOnce()).toBe(false);
    clock.advance(31_000);
    expect(await manager.updateOnce()).toBe(true);
  });

  it('does not stretch an image pull back-off of 10 s to an hour', async () => {
    const clock = new FakeClock(1_000_000_000);
    let pulls = 0;
    const images = {
      listImages: async () => [],
      imageStatus: async () => null,
      pullImage: async () => {
        pulls++;
        throw new Error('failed to resolve reference: not found');
      },
      removeImage: async () => {},
      imageFsInfo: async () => ({ image_filesystems: [] }),
    } as unknown as ImageService;
    const manager = new ImageManager({ images, clock, serializeImagePulls: false });
    const container = { name: 'c', image: 'registry.example.com/app:1', imagePullPolicy: 'IfNotPresent' as const };
    expect(await manager.ensureImageExists(pod, container, { auth: [] })).toMatchObject({ reason: 'ErrImagePull' });
    clock.stepWall(-HOUR);
    clock.advance(5_000);
    expect(await manager.ensureImageExists(pod, container, { auth: [] })).toMatchObject({ reason: 'ImagePullBackOff' });
    clock.advance(6_000);
    expect(await manager.ensureImageExists(pod, container, { auth: [] })).toMatchObject({ reason: 'ErrImagePull' });
    expect(pulls).toBe(2);
  });

  it("does not hold a crashed container's restart back until the wall clock has caught up", () => {
    const exitedAt = 1_000_000_000;
    const entry = nextBackoff(undefined, exitedAt, exitedAt);
    expect(backoffRemaining(entry, exitedAt, exitedAt + 4_000)).toBe(6_000);
    // The wall clock stepped back an hour after the exit: the restart is not put off by an hour.
    expect(backoffRemaining(entry, exitedAt, exitedAt + 4_000 - HOUR)).toBe(0);
  });

  it("takes a container's later attempt for its newest instance, though the runtime's clock created it earlier", () => {
    const T = 1_000_000_000;
    const instance = (name: string, restartCount: number, createdAt: number) =>
      ({ id: `${name}-${restartCount}`, name, restartCount, createdAt }) as RuntimeContainer;
    const order = newestFirst([
      instance('main', 3, T),
      instance('sidecar', 0, T - HOUR / 2),
      // Made after the runtime's wall clock was stepped back an hour.
      instance('main', 4, T + 5_000 - HOUR),
    ]).map((c) => c.id);
    expect(order).toEqual(['main-4', 'sidecar-0', 'main-3']);
  });
});
