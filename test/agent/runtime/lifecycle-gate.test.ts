/**
 * The runtime's lifecycle calls go through one bounded gate (RunPodSandbox, CreateContainer,
 * StartContainer), the calls that finish pods first; everything else goes straight through; the
 * composed runtime is gated outside its instrumentation (a call is counted when it is sent).
 */
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { composeRuntime } from '../../../src/agent/compose-runtime.js';
import { KubeletMetrics } from '../../../src/agent/metrics/kubelet-metrics.js';
import { gateLifecycleCalls, LIFECYCLE_CALLS_PER_CORE } from '../../../src/agent/runtime/lifecycle-gate.js';
import type { CriRuntime, ImageService, RuntimeService } from '../../../src/cri/services.js';
import type * as cri from '../../../src/cri/types.js';

/** A runtime whose lifecycle calls and StopContainer wait until the test ends them. */
function heldRuntime() {
  const calls: { name: string; end: () => void }[] = [];
  const held = (name: string) => () =>
    new Promise<never>((resolve) => calls.push({ name, end: () => resolve(undefined as never) }));
  const runtime = {
    runPodSandbox: (c: cri.PodSandboxConfig) => held(`sandbox ${c.metadata?.name}`)(),
    createContainer: (id: string) => held(`create ${id}`)(),
    startContainer: (id: string) => held(`start ${id}`)(),
    stopContainer: (id: string) => held(`stop ${id}`)(),
  } as unknown as RuntimeService;
  return { calls, rt: { runtime, images: {} as ImageService } satisfies CriRuntime };
}
const settle = () => new Promise((r) => setImmediate(r));
const sandbox = (name: string) =>
  ({ metadata: { name, namespace: 'ns', uid: name, attempt: 0 } }) as cri.PodSandboxConfig;

describe('gateLifecycleCalls', () => {
  it('keeps `limit` lifecycle calls in flight; a freed slot starts a container before creating one, before another sandbox; other calls are not held', async () => {
    const { calls, rt } = heldRuntime();
    const gated = gateLifecycleCalls(rt, { limit: 2 }).runtime;
    const results = [
      gated.runPodSandbox(sandbox('a')),
      gated.runPodSandbox(sandbox('b')),
      gated.runPodSandbox(sandbox('c')),
      gated.createContainer('a', {} as cri.ContainerConfig, sandbox('a')),
      gated.startContainer('x'),
      gated.stopContainer('y', 30),
    ];
    await settle();
    expect(calls.map((c) => c.name)).toEqual(['sandbox a', 'sandbox b', 'stop y']);
    for (const [ended, next] of [
      ['sandbox a', 'start x'],
      ['sandbox b', 'create a'],
      ['start x', 'sandbox c'],
    ]) {
      calls.find((c) => c.name === ended)!.end();
      await settle();
      expect(calls.at(-1)!.name).toBe(next);
    }
    for (const c of calls) c.end();
    await Promise.all(results);
  });

  it("passes every other property through, Object.prototype's names included", () => {
    const { rt } = heldRuntime();
    Object.assign(rt.runtime, { toString: () => 'the runtime', constructor: 'its own' });
    const gated = gateLifecycleCalls(rt, { limit: 2 }).runtime;
    const own = gated as unknown as { toString(): string; constructor: unknown };
    expect(own.toString()).toBe('the runtime');
    expect(own.constructor).toBe('its own');
    expect(gated.stopContainer).toBe(rt.runtime.stopContainer);
  });
});

describe('composeRuntime', () => {
  it('gates the runtime at LIFECYCLE_CALLS_PER_CORE per core, outside the call metrics', async () => {
    const { calls, rt } = heldRuntime();
    const metrics = new KubeletMetrics({ nodeName: 'n', running: { pods: () => 0, containers: () => ({}) } });
    const composed = composeRuntime({ containerRuntimeEndpoint: '' }, { metrics, given: rt }).runtime;
    const limit = LIFECYCLE_CALLS_PER_CORE * availableParallelism();
    const sent = () =>
      metrics.runtimeOps.family().samples.find((x) => x.labels?.operation_type === 'run_podsandbox')?.value;
    const all = Array.from({ length: limit + 3 }, (_, i) => composed.runtime.runPodSandbox(sandbox(`p${i}`)));
    await settle();
    expect(calls).toHaveLength(limit);
    expect(sent()).toBe(limit);
    while (calls.some((c) => c.end !== undefined)) {
      const c = calls.shift()!;
      c.end();
      await settle();
    }
    await Promise.all(all);
    expect(sent()).toBe(limit + 3);
  });
});
