/**
 * Runonce mode's decisions (agent/run-once.ts): when a pod counts as started, finished or failed, and what the run
 * gives back — upstream's errors for no update, failed pods and pods that never run.
 */
import { describe, expect, it } from 'vitest';
import type { Pod, PodStatus } from '../../src/api/types.js';
import { FakeClock } from '../../src/lib/clock.js';
import type { PodRuntimeStatus } from '../../src/agent/runtime/pod-runtime-status.js';
import { silentLogger as logger } from '../../src/lib/logger.js';
import {
  RUN_ONCE_MANIFEST_DELAY_MS,
  RUN_ONCE_MAX_RETRIES,
  RUN_ONCE_RETRY_DELAY_MS,
  runOnce,
  runOnceVerdict,
} from '../../src/agent/run-once.js';

const pod = (name: string, containers = ['main', 'side']): Pod => ({
  metadata: { name, namespace: 'default', uid: `uid-${name}` },
  spec: { containers: containers.map((c) => ({ name: c, image: 'busybox' })) },
});
const running = { running: { startedAt: '2026-11-30T00:00:00Z' } };
const waiting = (reason: string) => ({ waiting: { reason } });
const status = (states: Record<string, object>, phase = 'Pending', init: Record<string, object> = {}): PodStatus =>
  ({
    phase,
    initContainerStatuses: Object.entries(init).map(([name, state]) => ({ name, state })),
    containerStatuses: Object.entries(states).map(([name, state]) => ({ name, state })),
  }) as PodStatus;

describe('runOnceVerdict', () => {
  it('is running only when every container of the spec runs', () => {
    expect(runOnceVerdict(pod('a'), undefined)).toEqual({ kind: 'pending' });
    expect(runOnceVerdict(pod('a'), status({ main: running, side: waiting('ContainerCreating') }))).toEqual({
      kind: 'pending',
    });
    expect(runOnceVerdict(pod('a'), status({ main: running }))).toEqual({ kind: 'pending' });
    expect(runOnceVerdict(pod('a'), status({ main: running, side: running }, 'Running'))).toEqual({ kind: 'running' });
  });

  it('is failed when a container waits on an error, naming it; init containers too', () => {
    expect(runOnceVerdict(pod('a'), status({ main: running, side: waiting('ImagePullBackOff') }))).toEqual({
      kind: 'failed',
      containers: ['side'],
    });
    expect(
      runOnceVerdict(
        pod('a'),
        status({ main: waiting('PodInitializing'), side: waiting('PodInitializing') }, 'Pending', {
          setup: waiting('CrashLoopBackOff'),
        }),
      ),
    ).toEqual({ kind: 'failed', containers: ['setup'] });
  });

  it('is finished for a terminal pod (rejected at admission, or run to its end)', () => {
    expect(runOnceVerdict(pod('a'), status({}, 'Failed'))).toEqual({ kind: 'finished' });
    expect(runOnceVerdict(pod('a'), status({ main: { terminated: { exitCode: 0 } } }, 'Succeeded'))).toEqual({
      kind: 'finished',
    });
  });
});

/**
 * A run over `pods` whose statuses the test sets; `update` resolves the first update. The runtime agrees with the
 * kubelet's status unless the test says which of a pod's containers it runs (`runtimeRuns`).
 */
function harness() {
  const clock = new FakeClock();
  const statuses = new Map<string, PodStatus>();
  const runtimeRuns = new Map<string, string[]>();
  const runtimeStatus = async (p: Pod): Promise<PodRuntimeStatus> => {
    const uid = p.metadata.uid!;
    const runs =
      runtimeRuns.get(uid) ??
      (statuses.get(uid)?.containerStatuses ?? []).filter((c) => c.state?.running).map((c) => c.name);
    const containers = p.spec.containers.map((c) => ({
      name: c.name,
      state: runs.includes(c.name) ? ('running' as const) : ('exited' as const),
    }));
    return {
      uid,
      name: p.metadata.name!,
      namespace: 'default',
      sandboxes: [],
      containers,
    } as unknown as PodRuntimeStatus;
  };
  const listeners: ((uid: string) => void)[] = [];
  let deliver!: (pods: Pod[]) => void;
  const firstUpdate = new Promise<Pod[]>((resolve) => (deliver = resolve));
  const run = runOnce({
    firstUpdate,
    status: (uid) => statuses.get(uid),
    runtimeStatus,
    onStatusChange: (fn) => listeners.push(fn),
    clock,
    logger,
  });
  let finished = false;
  const outcome = run.then(
    () => 'ok',
    (err: Error) => err.message,
  );
  void outcome.then(() => (finished = true));
  const set = (p: Pod, s: PodStatus) => {
    statuses.set(p.metadata.uid!, s);
    for (const l of listeners) l(p.metadata.uid!);
  };
  return { clock, deliver, set, outcome, done: () => finished, runtimeRuns };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('runOnce', () => {
  it("fails with upstream's error when the sources give no update within a second", async () => {
    const h = harness();
    h.clock.advance(RUN_ONCE_MANIFEST_DELAY_MS);
    expect(await h.outcome).toBe('no pod manifest update after 1s');
  });

  it('resolves once every pod runs or has finished, a running one when upstream would look: a second after', async () => {
    const h = harness();
    const [a, b] = [pod('a'), pod('b', ['only'])];
    h.deliver([a, b]);
    await settle();
    h.set(a, status({ main: running, side: running }, 'Running'));
    h.set(b, status({}, 'Failed'));
    await settle();
    expect(h.done()).toBe(false);
    h.clock.advance(RUN_ONCE_RETRY_DELAY_MS);
    expect(await h.outcome).toBe('ok');
  });

  it('does not take a container that crashes at once for started', async () => {
    const h = harness();
    const a = pod('a', ['main']);
    h.deliver([a]);
    await settle();
    h.set(a, status({ main: running }, 'Running'));
    h.clock.advance(RUN_ONCE_RETRY_DELAY_MS / 2);
    h.set(a, status({ main: waiting('CrashLoopBackOff') }, 'Running'));
    h.clock.advance(RUN_ONCE_RETRY_DELAY_MS);
    expect(await h.outcome).toBe('error running pods: [a_default(uid-a)]');
  });

  it('does not take a pod for started while the runtime says its container has exited, though its status still says running', async () => {
    const h = harness();
    const a = pod('a', ['main']);
    h.deliver([a]);
    await settle();
    // The container crashed at once; the kubelet's status is a relist behind.
    h.set(a, status({ main: running }, 'Running'));
    h.runtimeRuns.set(a.metadata.uid!, []);
    h.clock.advance(RUN_ONCE_RETRY_DELAY_MS);
    await settle();
    expect(h.done()).toBe(false);
    h.set(a, status({ main: waiting('CrashLoopBackOff') }, 'Running'));
    expect(await h.outcome).toBe('error running pods: [a_default(uid-a)]');
  });

  it('names the pods that failed, as upstream formats them, once every pod has settled', async () => {
    const h = harness();
    const [a, b] = [pod('a'), pod('b', ['only'])];
    h.deliver([a, b]);
    await settle();
    h.set(b, status({ only: waiting('ErrImagePull') }));
    h.set(a, status({ main: running, side: running }, 'Running'));
    h.clock.advance(RUN_ONCE_RETRY_DELAY_MS);
    expect(await h.outcome).toBe('error running pods: [b_default(uid-b)]');
  });

  it('gives up on a pod still not running after upstream’s retries, 1,023 s', async () => {
    const h = harness();
    const [a, b] = [pod('a'), pod('b')];
    h.deliver([a, b]);
    await settle();
    h.set(a, status({ main: running, side: running }, 'Running'));
    h.set(b, status({ main: running, side: waiting('ContainerCreating') }));
    // 1 s, then 2, 4, … 512 s: ten looks.
    const budget = RUN_ONCE_RETRY_DELAY_MS * (2 ** RUN_ONCE_MAX_RETRIES - 1);
    expect(budget).toBe(1_023_000);
    // Each look reads the runtime before it sets the next: the clock moves on one look at a time.
    let delay = RUN_ONCE_RETRY_DELAY_MS;
    for (let look = 1; look < RUN_ONCE_MAX_RETRIES; look++, delay *= 2) {
      h.clock.advance(delay);
      await settle();
    }
    h.clock.advance(delay - 1);
    await settle();
    expect(h.done()).toBe(false);
    h.clock.advance(1);
    expect(await h.outcome).toBe('error running pods: [b_default(uid-b)]');
  });
});
