/**
 * The agent's configuration from flags and the config file: upstream's defaults in the agent's units, and overrides
 * carried through.
 */
import { describe, expect, it } from 'vitest';
import { parseFlags } from '../../src/config/flags.js';
import { loadConfig } from '../../src/config/load.js';
import { agentConfigOf } from '../../src/config/agent-config-of.js';

describe('agentConfigOf', () => {
  it("turns the Go kubelet's defaults into the agent's units", async () => {
    const a = agentConfigOf(await loadConfig(parseFlags(['--hostname-override', 'n1', '--node-ip', '10.0.0.5'])));
    expect(a).toMatchObject({
      nodeName: 'n1',
      nodeIP: '10.0.0.5',
      containerRuntimeEndpoint: '',
      runtimeRequestTimeoutMs: 120_000,
      cpuCFSQuota: true,
      cpuCFSQuotaPeriodUs: 100_000,
      imageGc: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000 },
      nodeStatusUpdateFrequencyMs: 10_000,
      nodeStatusReportFrequencyMs: 300_000,
      nodeLeaseDurationSeconds: 40,
      containerLogs: { maxSizeBytes: 10 * 1024 * 1024, maxFiles: 5, monitorIntervalMs: 10_000 },
      node: { nodeName: 'n1', nodeIP: '10.0.0.5', port: 10250, maxPods: 110 },
    });
    expect(a.node.kubeletVersion).toMatch(/^v1\.\d+\.\d+/);
  });

  it('ClusterTrustBundleProjection is off unless set, as in v1.36 (beta, off by default)', async () => {
    expect(agentConfigOf(await loadConfig(parseFlags([]))).clusterTrustBundleProjection).toBe(false);
    const on = await loadConfig(parseFlags(['--feature-gates=ClusterTrustBundleProjection=true']));
    expect(agentConfigOf(on).clusterTrustBundleProjection).toBe(true);
    // Read, so set without a warning.
    expect(on.warnings.join()).not.toContain('ClusterTrustBundleProjection');
  });

  it('PLEGOnDemandRelist is off unless set, as in v1.36 (beta, switched off by default: kubernetes#137909)', async () => {
    expect(agentConfigOf(await loadConfig(parseFlags([]))).plegOnDemandRelist).toBe(false);
    const on = await loadConfig(parseFlags(['--feature-gates=PLEGOnDemandRelist=true']));
    expect(agentConfigOf(on).plegOnDemandRelist).toBe(true);
    expect(on.warnings.join()).not.toContain('PLEGOnDemandRelist');
  });

  it('carries flags through: runtime endpoint and request timeout, log rotation, CFS period, streaming idle timeout', async () => {
    const a = agentConfigOf(
      await loadConfig(
        parseFlags([
          '--container-runtime-endpoint=unix:///run/containerd/containerd.sock',
          '--container-log-max-size=1Mi',
          '--container-log-max-files=3',
          '--cpu-cfs-quota-period=50ms',
          '--streaming-connection-idle-timeout=5m',
          '--runtime-request-timeout=45s',
          '--max-pods=20',
        ]),
      ),
    );
    expect(a.containerRuntimeEndpoint).toBe('unix:///run/containerd/containerd.sock');
    expect(a.containerLogs).toMatchObject({ maxSizeBytes: 1024 * 1024, maxFiles: 3 });
    expect(a.cpuCFSQuotaPeriodUs).toBe(50_000);
    expect(a.streamingIdleTimeoutMs).toBe(300_000);
    expect(a.runtimeRequestTimeoutMs).toBe(45_000);
    expect(a.node.maxPods).toBe(20);
  });

  it('reservedSystemCPUs stands for the reserved cpu: system-reserved is its size, kube-reserved has none (as upstream)', async () => {
    const a = agentConfigOf(
      await loadConfig(
        parseFlags([
          '--reserved-cpus=0,2',
          '--kube-reserved=cpu=500m,memory=1Gi',
          '--system-reserved=cpu=1,memory=2Gi',
          '--cpu-manager-policy=static',
        ]),
      ),
    );
    expect([a.node.kubeReserved, a.node.systemReserved]).toEqual([{ memory: '1Gi' }, { cpu: '2', memory: '2Gi' }]);
    expect(a.cpuManager).toEqual({
      policy: 'static',
      reconcilePeriodMs: 10_000,
      reservedCpus: '0,2',
      optionGates: { alpha: false, beta: true },
    });
  });
});
