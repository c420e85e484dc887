/** The CRI client as the metrics see it: every call counted and timed under upstream's operation_type, failures counted. */
import { describe, expect, it } from 'vitest';
import { instrumentCri, operationType } from '../../../src/agent/metrics/instrument.js';
import { KubeletMetrics } from '../../../src/agent/metrics/kubelet-metrics.js';
import type { CriRuntime } from '../../../src/cri/services.js';

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
});
