/**
 * The prober manager over a long observation with a fake clock: a healthy liveness probe never
 * asks for a restart in an hour; a container that is not running is never probed; a failing one
 * turns the result after failureThreshold probes and then holds; a new container instance starts
 * over from the initial state.
 */
import { describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from '../../e2e/helpers.js';
import { ProberManager } from '../../../src/agent/prober/prober-manager.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import type { Pod } from '../../../src/api/types.js';
import type { RuntimeService } from '../../../src/cri/services.js';
import type { PodRuntimeStatus } from '../../../src/agent/runtime/pod-runtime-status.js';

const flush = () => new Promise((r) => setImmediate(r));
const pod: Pod = {
  metadata: { name: 'p', namespace: 'default', uid: 'u1' },
  spec: {
    containers: [
      {
        name: 'c',
        image: 'i',
        livenessProbe: { exec: { command: ['check'] }, periodSeconds: 10, failureThreshold: 3 },
      },
    ],
  },
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

/** A runtime whose exec probes succeed, recording the clock's time of each. */
function recordingRuntime(clock: FakeClock): { at: number[]; runtime: RuntimeService } {
  const at: number[] = [];
  const runtime = {
    execSync: async () => {
      at.push(clock.now());
      return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exit_code: 0 };
    },
  } as unknown as RuntimeService;
  return { at, runtime };
}

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
    const m = new ProberManager({
      runtime,
      clock,
      logger: createLogger({ level: 'fatal' }),
      onChange: (u) => changes.push(u),
      random: () => 0.5,
    });
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
    const m = new ProberManager({
      runtime,
      clock,
      logger: createLogger({ level: 'fatal' }),
      onChange: (u) => changes.push(u),
      random: () => 0,
    });
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

  it('probes of many pods share grid points: 100 liveness probes at period 10 s wake the process at most ~10 times per period', async () => {
    const clock = new FakeClock(1_000_123);
    let timers = 0;
    const counting = {
      now: () => clock.now(),
      monotonic: () => clock.monotonic(),
      setTimer: (fn: () => void, ms: number) => {
        timers++;
        return clock.setTimer(fn, ms);
      },
    };
    const { at, runtime } = recordingRuntime(clock);
    let r = 0;
    const m = new ProberManager({
      runtime,
      clock: counting,
      logger: createLogger({ level: 'fatal' }),
      onChange: () => {},
      random: () => (r++ % 97) / 97,
    });
    for (let i = 0; i < 100; i++)
      m.syncPod(
        { ...pod, metadata: { ...pod.metadata, uid: `u${i}` } },
        { ...rs(`c${i}`, 'running'), uid: `u${i}` },
        '10.0.0.1',
      );
    expect(timers).toBeLessThanOrEqual(11);
    await run(clock, 60);
    expect(at.length).toBeGreaterThanOrEqual(500);
    expect(timers).toBeLessThanOrEqual(72);
    expect(at.every((t) => t % 1000 === 0)).toBe(true);
  });

  it('a running container without a readiness result is probed at once (after initialDelaySeconds), not after a period', async () => {
    const clock = new FakeClock(1_000_000);
    const { at, runtime } = recordingRuntime(clock);
    const changes: string[] = [];
    const m = new ProberManager({
      runtime,
      clock,
      logger: createLogger({ level: 'fatal' }),
      onChange: (u) => changes.push(u),
      random: () => 0.99,
    });
    clock.advance(60_000);
    const ready: Pod = {
      ...pod,
      spec: {
        containers: [
          {
            name: 'c',
            image: 'i',
            readinessProbe: { exec: { command: ['check'] }, periodSeconds: 30, initialDelaySeconds: 2 },
          },
        ],
      },
    };
    const started = clock.now();
    m.syncPod(ready, rs('c1', 'exited'), '10.0.0.1');
    const running = rs('c1', 'running');
    running.containers[0].startedAt = started;
    m.syncPod(ready, running, '10.0.0.1');
    m.syncPod(ready, running, '10.0.0.1');
    await run(clock, 1);
    expect(at).toEqual([]);
    await run(clock, 1);
    expect(at).toEqual([started + 2000]);
    expect(m.results('u1').readiness('c', 'c1')).toBe('success');
    expect(changes).toEqual(['u1']);
    await run(clock, 40);
    expect(at.length).toBe(2);
  });
  it('readiness is probed as soon as the startup probe succeeds, not a readiness period later (upstream "should be ready immediately after startupProbe succeeds")', async () => {
    const clock = new FakeClock(1_000_000);
    const probed: { at: number; cmd: string }[] = [];
    let startupPasses = false;
    const runtime = {
      execSync: async (_id: string, cmd: string[]) => {
        probed.push({ at: clock.now(), cmd: cmd[0] });
        const ok = cmd[0] === 'ready' || startupPasses;
        return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exit_code: ok ? 0 : 1 };
      },
    } as unknown as RuntimeService;
    const m = new ProberManager({
      runtime,
      clock,
      logger: createLogger({ level: 'fatal' }),
      onChange: () => {},
      random: () => 0.5,
    });
    const startupPod: Pod = {
      ...pod,
      spec: {
        containers: [
          {
            name: 'c',
            image: 'i',
            startupProbe: { exec: { command: ['started'] }, periodSeconds: 1, failureThreshold: 60 },
            readinessProbe: { exec: { command: ['ready'] }, periodSeconds: 60 },
          },
        ],
      },
    };
    const running = rs('c1', 'running');
    running.containers[0].startedAt = clock.now();
    m.syncPod(startupPod, running, '10.0.0.1');
    await run(clock, 5);
    expect(probed.filter((p) => p.cmd === 'ready')).toEqual([]);
    startupPasses = true;
    const before = clock.now();
    await run(clock, 2);
    const startedAt = probed.find((p) => p.cmd === 'started' && p.at >= before)!.at;
    const readyProbes = probed.filter((p) => p.cmd === 'ready');
    expect(readyProbes.length).toBe(1);
    expect(readyProbes[0].at - startedAt).toBeLessThanOrEqual(1000);
    expect(m.results('u1').readiness('c', 'c1')).toBe('success');
  });

  it('a liveness probe redirected to another host is a success with a ProbeWarning event, as upstream (no restart)', async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(302, { Location: 'http://192.0.2.1:9/elsewhere' });
      res.end('moved');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const clock = new FakeClock(1_000_000);
      const events: { type: string; reason: string; message: string }[] = [];
      const m = new ProberManager({
        runtime: {} as RuntimeService,
        clock,
        logger: createLogger({ level: 'fatal' }),
        onChange: () => {},
        events: { record: (_ref, type, reason, message) => events.push({ type, reason, message }) },
        random: () => 0,
      });
      const redirected: Pod = {
        ...pod,
        spec: {
          containers: [{ name: 'c', image: 'i', livenessProbe: { httpGet: { path: '/', port }, periodSeconds: 1 } }],
        },
      };
      m.syncPod(redirected, rs('c1', 'running'), '127.0.0.1');
      await until(async () => {
        clock.advance(1000);
        await new Promise((r) => setTimeout(r, 20));
        return events.length > 0;
      });
      expect(events[0]).toEqual({
        type: 'Warning',
        reason: 'ProbeWarning',
        message: 'Liveness probe warning: Probe terminated redirects, Response body: moved',
      });
      expect(m.results('u1').liveness('c', 'c1')).toBe('success');
    } finally {
      server.close();
    }
  });

  it('a probe still in flight when its pod is removed leaves no metric series and no result change behind', async () => {
    const clock = new FakeClock(1_000_000);
    let answer: (() => void) | undefined;
    const runtime = {
      execSync: () =>
        new Promise((resolve) => {
          answer = () => resolve({ stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exit_code: 0 });
        }),
    } as unknown as RuntimeService;
    const changes: string[] = [];
    const m = new ProberManager({
      runtime,
      clock,
      logger: createLogger({ level: 'fatal' }),
      onChange: (u) => changes.push(u),
      random: () => 0,
    });
    const one: Pod = {
      ...pod,
      spec: { containers: [{ name: 'c', image: 'i', readinessProbe: { exec: { command: ['check'] } } }] },
    };
    m.syncPod(one, rs('c1', 'running'), '10.0.0.1');
    await run(clock, 2);
    expect(answer).toBeDefined();
    m.removePod('u1');
    answer!();
    await flush();
    expect([...m.counts.values()]).toEqual([]);
    expect(m.durations.family().samples).toEqual([]);
    expect(changes).toEqual([]);
  });
});

describe('a kubelet restart (ChangeContainerStatusOnKubeletRestart off, the v1.36 default)', () => {
  const probed: Pod = {
    ...pod,
    spec: {
      containers: [
        {
          name: 'c',
          image: 'i',
          readinessProbe: { exec: { command: ['check'] }, periodSeconds: 10 },
          startupProbe: { exec: { command: ['check'] }, periodSeconds: 10 },
        },
      ],
    },
  };
  const reported = (containerID: string, ready: boolean) =>
    ({
      ...probed,
      status: {
        containerStatuses: [
          {
            name: 'c',
            containerID,
            ready,
            started: ready,
            restartCount: 0,
            image: 'i',
            imageID: '',
            state: {},
            lastState: {},
          },
        ],
      },
    }) as Pod;
  const manager = () =>
    new ProberManager({
      runtime: { execSync: () => new Promise(() => {}) } as unknown as RuntimeService,
      clock: new FakeClock(1_000_000),
      logger: createLogger({ level: 'fatal' }),
      onChange: () => {},
      random: () => 0.5,
    });

  it('keeps a running container ready and started as its last status said, before any probe answers', () => {
    const m = manager();
    m.syncPod(reported('containerd://c1', true), rs('c1', 'running'), '10.0.0.1');
    expect([m.results('u1').readiness('c', 'c1'), m.results('u1').startup('c', 'c1')]).toEqual(['success', 'success']);
  });

  it('starts a container it did not report, or reported unready, from the initial results', () => {
    const other = manager();
    other.syncPod(reported('containerd://old', true), rs('c1', 'running'), '10.0.0.1');
    expect([other.results('u1').readiness('c', 'c1'), other.results('u1').startup('c', 'c1')]).toEqual([
      'failure',
      'unknown',
    ]);
    const unready = manager();
    unready.syncPod(reported('containerd://c1', false), rs('c1', 'running'), '10.0.0.1');
    expect(unready.results('u1').readiness('c', 'c1')).toBe('failure');
  });
});
