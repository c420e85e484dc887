/**
 * The CRI client as the metrics see it: every call counted and timed under upstream's operation_type, failures counted.
 */
import { describe, expect, it } from 'vitest';
import { instrumentCri, operationType } from '../../../src/agent/metrics/instrument.js';
import { KubeletMetrics } from '../../../src/agent/metrics/kubelet-metrics.js';
import type { CriRuntime } from '../../../src/cri/services.js';
import { createLogger, setVerbosity } from '../../../src/lib/logger.js';

describe('instrumentCri', () => {
  it("counts each call under upstream's operation_type, failures too, and keeps one wrapper per method", async () => {
    expect(operationType('listPodSandbox')).toBe('list_podsandbox');
    expect(operationType('createContainer')).toBe('create_container');
    const metrics = new KubeletMetrics({ nodeName: 'n', running: { pods: () => 0, containers: () => ({}) } });
    let fail = false;
    const runtime = {
      version: async () => ({ version: '1' }),
      stopPodSandbox: async () => {
        if (fail) throw new Error('boom');
      },
    };
    const cri = instrumentCri({ runtime, images: {} } as unknown as CriRuntime, metrics);
    expect(cri.runtime.stopPodSandbox).toBe(cri.runtime.stopPodSandbox);
    await cri.runtime.stopPodSandbox('s1');
    await cri.runtime.stopPodSandbox('s2');
    fail = true;
    await expect(cri.runtime.stopPodSandbox('s3')).rejects.toThrow('boom');
    await cri.runtime.version('v1');
    const text = metrics.text();
    expect(text).toMatch(/^kubelet_runtime_operations_total\{operation_type="stop_podsandbox"\} 3$/m);
    expect(text).toMatch(/^kubelet_runtime_operations_total\{operation_type="version"\} 1$/m);
    expect(text).toMatch(/^kubelet_runtime_operations_errors_total\{operation_type="stop_podsandbox"\} 1$/m);
    expect(text).toMatch(/^kubelet_runtime_operations_duration_seconds_count\{operation_type="stop_podsandbox"\} 3$/m);
  });

  it('times and counts RunPodSandbox by runtime handler, its failures too', async () => {
    const metrics = new KubeletMetrics({ nodeName: 'n', running: { pods: () => 0, containers: () => ({}) } });
    const runtime = {
      runPodSandbox: async (_config: unknown, handler?: string) => {
        if (handler === 'broken') throw new Error('no such handler');
        return 'sandbox';
      },
    };
    const cri = instrumentCri({ runtime, images: {} } as unknown as CriRuntime, metrics);
    await cri.runtime.runPodSandbox({} as never);
    await cri.runtime.runPodSandbox({} as never, 'kata');
    await expect(cri.runtime.runPodSandbox({} as never, 'broken')).rejects.toThrow('no such handler');
    const text = metrics.text();
    expect(text).toMatch(/^kubelet_run_podsandbox_duration_seconds_count\{runtime_handler=""\} 1$/m);
    expect(text).toMatch(/^kubelet_run_podsandbox_duration_seconds_count\{runtime_handler="kata"\} 1$/m);
    expect(text).toMatch(/^kubelet_run_podsandbox_errors_total\{runtime_handler="broken"\} 1$/m);
    expect(text).not.toMatch(/^kubelet_run_podsandbox_errors_total\{runtime_handler="kata"\}/m);
  });

  it('logs each call going out and coming back at --v=10, and nothing below it', async () => {
    const metrics = new KubeletMetrics({ nodeName: 'n', running: { pods: () => 0, containers: () => ({}) } });
    const lines: string[] = [];
    const logger = createLogger({ verbosity: 9, destination: { write: (s: string) => void lines.push(s) } });
    const runtime = {
      startContainer: async () => undefined,
      stopContainer: async () => {
        throw new Error('gone');
      },
    };
    const images = { imageStatus: async () => null };
    const cri = instrumentCri(
      { runtime, images } as unknown as CriRuntime,
      metrics,
      logger.child({ component: 'remote_runtime' }),
    );
    await cri.runtime.startContainer('c0');
    expect(lines).toEqual([]);
    setVerbosity(logger, 10);
    await cri.runtime.startContainer('c1');
    await expect(cri.runtime.stopContainer('c2', 5)).rejects.toThrow('gone');
    await cri.images.imageStatus({ image: 'busybox' });
    const got = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(got.map((l) => [l.component, l.msg, l.containerID ?? l.image, l.err])).toEqual([
      ['remote_runtime', '[RemoteRuntimeService] StartContainer', 'c1', undefined],
      ['remote_runtime', '[RemoteRuntimeService] StartContainer Response', 'c1', undefined],
      ['remote_runtime', '[RemoteRuntimeService] StopContainer', 'c2', undefined],
      ['remote_runtime', '[RemoteRuntimeService] StopContainer Response', 'c2', 'gone'],
      ['remote_runtime', '[RemoteImageService] ImageStatus', 'busybox', undefined],
      ['remote_runtime', '[RemoteImageService] ImageStatus Response', 'busybox', undefined],
    ]);
    expect(got[1].duration).toMatch(/^[0-9.]+(ns|µs|ms|s)$/);
    expect(metrics.text()).toMatch(/^kubelet_runtime_operations_errors_total\{operation_type="stop_container"\} 1$/m);
  });
});
