/**
 * The prober manager over a long observation with a fake clock: a healthy liveness probe never
 * asks for a restart in an hour; a container that is not running is never probed; a failing one
 * turns the result after failureThreshold probes and then holds; a new container instance starts
 * over from the initial state.
 */
import { describe, expect, it } from 'vitest';
import { ProberManager } from '../../../src/agent/prober/prober-manager.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import type { Pod } from '../../../src/api/types.js';
import type { RuntimeService } from '../../../src/cri/services.js';
import type { PodRuntimeStatus } from '../../../src/agent/runtime/pod-runtime-status.js';

const flush = () => new Promise((r) => setImmediate(r));
const pod: Pod = {
  metadata: { name: 'p', namespace: 'default', uid: 'u1' },
  spec: { containers: [{ name: 'c', image: 'i', livenessProbe: { exec: { command: ['check'] }, periodSeconds: 10, failureThreshold: 3 } }] },
};
const rs = (id: string, state: 'running' | 'exited'): PodRuntimeStatus => ({
  uid: 'u1',
  name: 'p',
  namespace: 'default',
  sandboxes: [{ id: 's', ready: true, createdAt: 0, attempt: 0, ip: '10.0.0.1' }],
  containers: [
    {
      id,
      name: 'c',
      state,
      createdAt: 1,
      startedAt: 1,
      finishedAt: 0,
      exitCode: 0,
      reason: '',
      message: '',
      image: 'i',
      imageRef: 'x',
      hash: '',
      restartCount: 0,
      logPath: '',
      sandboxId: 's',
    },
  ],
});

async function run(clock: FakeClock, seconds: number) {
  for (let i = 0; i < seconds; i++) {
    clock.advance(1000);
    await flush();
  }
}

describe('ProberManager (fake clock)', () => {
  it('a healthy liveness probe over an hour: ~360 probes, never a failure', async () => {
    const clock = new FakeClock(1_000_000);
    let calls = 0;
    const changes: string[] = [];
    const runtime = {
      execSync: async () => {
        calls++;
        return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exit_code: 0 };
      },
    } as unknown as RuntimeService;
    const m = new ProberManager({ runtime, clock, logger: createLogger({ level: 'fatal' }), onChange: (u) => changes.push(u), random: () => 0.5 });
    m.syncPod(pod, rs('c1', 'running'), '10.0.0.1');
    await run(clock, 3600);
    expect(calls).toBeGreaterThanOrEqual(355);
    expect(changes).toEqual([]);
    expect(m.results('u1').liveness('c', 'c1')).toBe('success');
  }, 30_000);

  it('never probes a container that is not running; failing probes turn the result after the threshold and hold; a new instance starts over', async () => {
    const clock = new FakeClock(1_000_000);
    let calls = 0;
    let exit = 1;
    const runtime = {
      execSync: async () => {
        calls++;
        return { stdout: Buffer.from('bad'), stderr: Buffer.alloc(0), exit_code: exit };
      },
    } as unknown as RuntimeService;
    const changes: string[] = [];
    const m = new ProberManager({ runtime, clock, logger: createLogger({ level: 'fatal' }), onChange: (u) => changes.push(u), random: () => 0 });
    m.syncPod(pod, rs('c1', 'exited'), '10.0.0.1');
    await run(clock, 60);
    expect(calls).toBe(0);
    m.syncPod(pod, rs('c1', 'running'), '10.0.0.1');
    await run(clock, 15);
    expect(calls).toBeLessThanOrEqual(2);
    expect(m.results('u1').liveness('c', 'c1')).toBe('success');
    await run(clock, 30);
    expect(calls).toBe(3);
    expect(m.results('u1').liveness('c', 'c1')).toBe('failure');
    expect(changes).toEqual(['u1']);
    const held = calls;
    await run(clock, 60);
    expect(calls).toBe(held);
    exit = 0;
    m.syncPod(pod, rs('c2', 'running'), '10.0.0.1');
    expect(m.results('u1').liveness('c', 'c2')).toBe('success');
    await run(clock, 30);
    expect(calls).toBeGreaterThan(held);
    expect([...m.counts.values()].find((x) => x.labels.result === 'failed')).toMatchObject({
      labels: { probe_type: 'Liveness', container: 'c', pod: 'p', namespace: 'default', pod_uid: 'u1' },
      count: 3,
    });
  });
});
