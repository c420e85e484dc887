/**
 * The physical limit the benchmarks compare against: one pod's start made as the same CRI calls
 * the kubelet makes (ImageStatus, RunPodSandbox, PodSandboxStatus for a CNI pod's IP,
 * CreateContainer, StartContainer), with the configs the kubelet generates.
 */
import { totalmem } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../src/api/types.js';
import type { CriRuntime } from '../src/cri/services.js';
import { generateSandboxConfig } from '../src/agent/runtime/sandbox-config.js';
import { generateContainerConfig } from '../src/agent/runtime/container-config.js';

/** Starts `pod` (which must carry a UID) directly; returns its IDs and the time the calls took. */
export async function directStartPod(
  cri: CriRuntime,
  pod: Pod,
  o: { dir: string; node: string },
): Promise<{ ms: number; sandboxId: string; containerId: string; uid: string }> {
  const c = pod.spec.containers[0];
  const t0 = performance.now();
  const image = await cri.images.imageStatus({ image: c.image! });
  const sb = generateSandboxConfig(pod, 0, {
    podLogsDir: join(o.dir, 'direct-logs'),
    dns: { clusterDNS: [], clusterDomain: '', resolvConf: '' },
    cgroups: { cgroupsPerQOS: true, cgroupRoot: '', cgroupDriver: 'cgroupfs' },
    resources: { cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 },
  });
  if (!sb.ok) throw new Error(sb.message);
  const sbConfig = sb.config;
  const sandboxId = await cri.runtime.runPodSandbox(sbConfig);
  const ip = pod.spec.hostNetwork
    ? '127.0.0.1'
    : ((await cri.runtime.podSandboxStatus(sandboxId)).status.network?.ip ?? '');
  const built = generateContainerConfig(pod, c, 0, image!.id, {
    podIPs: [ip],
    hostIPs: ['127.0.0.1'],
    nodeName: o.node,
    image,
    resources: { memoryCapacityBytes: totalmem(), cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 },
  });
  if (!built.ok) throw new Error(built.message);
  const containerId = await cri.runtime.createContainer(sandboxId, built.config, sbConfig);
  await cri.runtime.startContainer(containerId);
  return { ms: performance.now() - t0, sandboxId, containerId, uid: pod.metadata.uid! };
}
