/**
 * The sleep lifecycle hook as upstream's runSleepHandler: it sleeps its seconds (zero returns at once); cut off by
 * its context (the grace period of a preStop hook) it fails with "container terminated before sleep hook finished"
 * and counts in kubelet_sleep_action_terminated_early_total, and the preStop caller reports FailedPreStopHook.
 */
import { describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../../src/api/types.js';
import type { RuntimeService } from '../../../src/cri/services.js';
import { preStop, runHook } from '../../../src/agent/runtime/lifecycle-hooks.js';
import { MIN_GRACE_SECONDS } from '../../../src/agent/runtime/grace-period.js';

const pod = {
  metadata: { name: 'sleeper', namespace: 'default', uid: 'u1' },
  spec: { containers: [] },
} as unknown as Pod;

const sleeping = (seconds: number): Container => ({
  name: 'main',
  image: 'busybox',
  lifecycle: { preStop: { sleep: { seconds } }, postStart: { sleep: { seconds } } },
});

function reporting() {
  const counted = { httpFallback: 0, sleepTerminatedEarly: 0 };
  const events: { reason: string; type: string; message: string }[] = [];
  return {
    counted,
    events,
    hook: {
      runtime: {} as RuntimeService,
      containerId: 'c1',
      podIP: '127.0.0.1',
      events: {
        record: (_ref: unknown, type: string, reason: string, message: string) =>
          events.push({ reason, type, message }),
      },
      counters: {
        httpFallback: () => counted.httpFallback++,
        sleepTerminatedEarly: () => counted.sleepTerminatedEarly++,
      },
    },
  };
}

describe('sleep lifecycle hooks', () => {
  it('a sleep within its time succeeds and counts nothing; zero seconds returns at once', async () => {
    const r = reporting();
    expect(await runHook('postStart', pod, sleeping(0), { ...r.hook, timeoutMs: 5_000 })).toBeUndefined();
    expect(await runHook('preStop', pod, sleeping(0.05), { ...r.hook, timeoutMs: 5_000 })).toBeUndefined();
    expect(r.counted.sleepTerminatedEarly).toBe(0);
  });

  it("a sleep longer than its time is cut off with upstream's error and counted", async () => {
    const r = reporting();
    // An hour-long sleep: a hook that was not cut off would outlast the test's timeout.
    const message = await runHook('preStop', pod, sleeping(3600), { ...r.hook, timeoutMs: 20 });
    expect(message).toBe(
      'Sleep lifecycle hook (3600) for Container "main" in Pod "sleeper_default(u1)" failed - error: container terminated before sleep hook finished',
    );
    expect(r.counted).toEqual({ httpFallback: 0, sleepTerminatedEarly: 1 });
  });

  it('a preStop sleep past the grace period: FailedPreStopHook without the detail, the minimum grace left for the stop', async () => {
    const r = reporting();
    const left = await preStop(pod, sleeping(3600), { ...r.hook, graceSeconds: 1 });
    expect(left).toBe(MIN_GRACE_SECONDS);
    expect(r.events).toEqual([{ type: 'Warning', reason: 'FailedPreStopHook', message: 'PreStopHook failed' }]);
    expect(r.counted.sleepTerminatedEarly).toBe(1);
  });
});
