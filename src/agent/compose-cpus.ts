/**
 * The CPU manager's wiring (cpumanager/cpu-manager.ts): made at start from the configuration and
 * the machine's topology (a state that does not fit stops the kubelet, as upstream), asked at
 * admission for a pod's exclusive CPUs, asked for each new container's cpuset, and with the
 * static policy its reconcile loop every cpuManagerReconcilePeriod over the runtime's running
 * containers (UpdateContainerResources with the cpuset).
 */
import { join } from 'node:path';
import type { Pod } from '../api/types.js';
import { milliCpu } from '../api/quantity.js';
import type { RuntimeService } from '../cri/services.js';
import { sleep, type Clock } from '../lib/clock.js';
import { parseCpuSet } from '../lib/cpuset.js';
import { messageOf } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { AgentConfig } from './agent-config.js';
import type { AdmitResult } from './admission/predicate.js';
import { CpuManager, type ContainerCpusets, type PodCpus } from './cpumanager/cpu-manager.js';
import { readCpuTopology } from './cpumanager/topology.js';
import { ContainerNameLabel, PodUidLabel } from './runtime/labels.js';

export function composeCpuManager(
  cfg: AgentConfig,
  d: { runtime: RuntimeService; activePods: () => Pod[]; sourcesSeen: () => boolean; clock: Clock; logger: Logger },
): {
  start(signal: AbortSignal): void;
  admit(pod: Pod, admitted: Pod[]): AdmitResult | undefined;
  cpusets: ContainerCpusets;
  podCpus: PodCpus;
} {
  let m: CpuManager | undefined;
  const c = cfg.cpuManager ?? { policy: 'none', reconcilePeriodMs: 10_000, reservedCpus: '' };
  const reconcile = async () => {
    const update = d.runtime.updateContainerResources?.bind(d.runtime);
    // Not before every pod source has delivered its pods: until then "not active" is not "gone" (upstream sourcesReady).
    if (!m || !update || !d.sourcesSeen()) return;
    const running = (await d.runtime.listContainers({ state: { state: 'CONTAINER_RUNNING' } })).map((x) => ({
      podUid: x.labels?.[PodUidLabel] ?? '',
      name: x.labels?.[ContainerNameLabel] ?? '',
      id: x.id,
    }));
    await m.reconcile(new Set(d.activePods().map((p) => p.metadata.uid!)), running, (id, cpuset) => update(id, { cpuset_cpus: cpuset }));
  };
  return {
    start(signal) {
      const reserved = (r: Record<string, string>) => milliCpu(r.cpu) ?? 0;
      // Upstream's two failures: the policy cannot be made, or its state does not fit it.
      const made = (() => {
        try {
          return new CpuManager({
            policy: c.policy,
            stateFile: join(cfg.rootDir, 'cpu_manager_state'),
            topology: readCpuTopology(),
            reservedCpus: c.reservedCpus ? parseCpuSet(c.reservedCpus) : undefined,
            reservedMilli: reserved(cfg.node.kubeReserved) + reserved(cfg.node.systemReserved),
            logger: d.logger,
          });
        } catch (err) {
          throw new Error(`failed to initialize cpu manager: ${messageOf(err)}`, { cause: err });
        }
      })();
      try {
        made.start();
      } catch (err) {
        throw new Error(`start cpu manager error: ${messageOf(err)}`, { cause: err });
      }
      m = made;
      if (c.policy !== 'static') return;
      void (async () => {
        while (!signal.aborted) {
          await sleep(c.reconcilePeriodMs, signal, d.clock);
          if (!signal.aborted) await reconcile().catch((err: unknown) => d.logger.warn({ err: messageOf(err) }, 'cpu manager reconcile failed'));
        }
      })();
    },
    admit(pod, admitted) {
      const message = m?.allocate(pod, admitted);
      return message === undefined
        ? undefined
        : { admit: false, reason: 'UnexpectedAdmissionError', message: `Allocate failed due to ${message}, which is unexpected` };
    },
    cpusets: {
      cpusetFor: (uid, name) => m?.containerCpuset(uid, name),
      created: (uid, name, id, cpuset) => m?.created(uid, name, id, cpuset),
    },
    podCpus: {
      allocatableCpus: () => m?.allocatableCpus() ?? [],
      exclusiveCpus: (uid, name) => m?.exclusiveCpus(uid, name) ?? [],
      counts: () => m?.counts() ?? { pinningRequests: 0, pinningErrors: 0, sharedPoolMilli: 0, exclusiveCpus: 0 },
    },
  };
}
