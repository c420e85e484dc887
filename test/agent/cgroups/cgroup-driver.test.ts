/**
 * The cgroup driver adopted from the runtime (KubeletCgroupDriverFromCRI): the answer's mapping,
 * the fallback to the configuration for a runtime that does not say, the retries for one that is
 * still starting, and a start that fails for one that never answers or answers nonsense.
 */
import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { cgroupDriverFromRuntime, driverOfAnswer } from '../../../src/agent/cgroups/cgroup-driver.js';
import { createLogger } from '../../../src/lib/logger.js';
import { KubeletError } from '../../../src/lib/errors.js';
import type * as cri from '../../../src/cri/types.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _e, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: createLogger({ destination, level: 'info' }), lines };
}

/** A runtimeConfig that plays `script` in order (an Error is thrown, anything else answered). */
function scripted(script: (cri.RuntimeConfigResponse | Error)[]) {
  let calls = 0;
  return {
    get calls() {
      return calls;
    },
    runtimeConfig: async () => {
      const next = script[Math.min(calls++, script.length - 1)];
      if (next instanceof Error) throw next;
      return next;
    },
  };
}

describe('driverOfAnswer', () => {
  it('maps the CRI enum, reads an empty Linux part as SYSTEMD (the zero value) and no Linux part as no answer', () => {
    expect(driverOfAnswer({ linux: { cgroup_driver: 'SYSTEMD' } })).toBe('systemd');
    expect(driverOfAnswer({ linux: { cgroup_driver: 'CGROUPFS' } })).toBe('cgroupfs');
    expect(driverOfAnswer({ linux: {} })).toBe('systemd');
    expect(driverOfAnswer({ linux: null })).toBeUndefined();
    expect(driverOfAnswer({})).toBeUndefined();
    expect(() => driverOfAnswer({ linux: { cgroup_driver: '7' as never } })).toThrow(
      'runtime returned an unknown cgroup driver 7',
    );
  });
});

describe('cgroupDriverFromRuntime', () => {
  it("adopts the runtime's driver and says so as upstream does", async () => {
    const { logger, lines } = capture();
    expect(await cgroupDriverFromRuntime(scripted([{ linux: { cgroup_driver: 'SYSTEMD' } }]), { logger })).toEqual({
      driver: 'systemd',
      fellBack: false,
    });
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: 'Using cgroup driver setting received from the CRI runtime',
        cgroupDriver: 'systemd',
      }),
    );
  });

  it('falls back to the configuration at once for a runtime without RuntimeConfig (containerd before 2.0)', async () => {
    const { logger, lines } = capture();
    const rt = scripted([new KubeletError('NotImplemented', 'RuntimeConfig: unknown method')]);
    // A fallback, which kubelet_cri_losing_support reports.
    expect(await cgroupDriverFromRuntime(rt, { logger, retryDelayMs: 1 })).toEqual({ fellBack: true });
    expect(rt.calls).toBe(1);
    expect(String(lines.at(-1)?.msg)).toContain('Falling back to using cgroupDriver from kubelet config.');
    // A runtime that has no RuntimeConfig to ask (the embedded one) is no fallback.
    expect(await cgroupDriverFromRuntime({}, { logger })).toEqual({ fellBack: false });
  });

  it('asks again while the runtime is not answering, and fails the start after three tries', async () => {
    const { logger } = capture();
    const down = new KubeletError('Unavailable', 'connect ENOENT /run/containerd/containerd.sock');
    const late = scripted([down, down, { linux: { cgroup_driver: 'CGROUPFS' } }]);
    expect(await cgroupDriverFromRuntime(late, { logger, retryDelayMs: 1 })).toEqual({
      driver: 'cgroupfs',
      fellBack: false,
    });
    expect(late.calls).toBe(3);
    const never = scripted([down]);
    await expect(cgroupDriverFromRuntime(never, { logger, retryDelayMs: 1 })).rejects.toThrow(
      'failed to get the cgroup driver from the container runtime: connect ENOENT /run/containerd/containerd.sock',
    );
    expect(never.calls).toBe(3);
  });

  it('fails the start on a driver CRI does not define, without asking again', async () => {
    const { logger } = capture();
    const rt = scripted([{ linux: { cgroup_driver: '9' as never } }]);
    await expect(cgroupDriverFromRuntime(rt, { logger, retryDelayMs: 1 })).rejects.toThrow('unknown cgroup driver 9');
    expect(rt.calls).toBe(1);
  });
});
