/**
 * The CPU, memory and topology managers' wiring (cpumanager/, memorymanager/, topologymanager/):
 * made at start from the configuration and the machine's topology (a state that does not fit
 * stops the kubelet, as upstream), asked at admission for a pod's devices, exclusive CPUs and
 * NUMA memory under the topology policy (topology-admission.ts, with the device manager) and for
 * each new container's cpuset and cpuset.mems, and with the static CPU policy its reconcile loop
 * every cpuManagerReconcilePeriod over the runtime's running containers (UpdateContainerResources
 * with the cpuset).
 */
import { totalmem } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../api/types.js';
import { hugePageResourceName, milliCpu } from '../api/quantity.js';
import type { RuntimeService } from '../cri/services.js';
import type { Clock } from '../lib/clock.js';
import { periodically } from '../lib/periodically.js';
import { parseCpuSet } from '../lib/cpuset.js';
import { messageOf } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { AgentConfig } from './agent-config.js';
import type { AdmitResult } from './admission/predicate.js';
import type { AllocationRefusal } from './admission/allocation-refusal.js';
import { CpuManager } from './cpumanager/cpu-manager.js';
import type { AlignmentCount, AlignmentScope, ContainerCpusets, PodCpus } from './cpumanager/views.js';
import { readCpuTopology } from './cpumanager/topology.js';
import {
  admitWithTopology,
  type DeviceProvider,
  type TopologyManagerConfig,
} from './topologymanager/topology-admission.js';
import { numaNodesOf } from './cpumanager/topology-hints.js';
import { topologyPolicyOptions } from './topologymanager/policy-options.js';
import { readNumaDistances } from './topologymanager/numa-distances.js';
import { ContainerNameLabel, PodUidLabel } from './runtime/labels.js';
import { Histogram } from './metrics/registry.js';
import { MemoryManager, type PodMemory } from './memorymanager/memory-manager.js';
import { listNumaNodes, readNumaNodeMemory } from './memorymanager/memory-topology.js';
import { systemReservedMemory } from './memorymanager/reserved-memory.js';
import type { HugePagePool } from './nodestatus/machine-info.js';

/** What the memory manager needs of the machine beyond its NUMA nodes: the capacity Node Allocatable is taken from. */
export interface MachineMemory {
  memoryBytes: number;
  hugePages?: readonly HugePagePool[];
}

/**
 * The memory manager for `cfg` (upstream memorymanager.NewManager and Start); throws upstream's
 * messages for an unknown policy, reservations that do not fit the machine, or a state that does
 * not fit them.
 */
function startMemoryManager(
  cfg: AgentConfig,
  machine: MachineMemory,
  d: { logger: Logger; sysNodeDir?: string },
): MemoryManager {
  const { policy, reservedMemory } = cfg.memoryManager ?? { policy: 'None', reservedMemory: [] };
  const made = (() => {
    try {
      if (policy === 'None') return { policy, nodes: [], reserved: new Map() } as const;
      // Upstream's BestEffort policy is Windows' only.
      if (policy === 'BestEffort') throw new Error('policy "BestEffort" is not available for platform "linux"');
      if (policy !== 'Static') throw new Error(`unknown policy: "${policy}"`);
      const nodes = readNumaNodeMemory(d.sysNodeDir);
      const reserved = systemReservedMemory(reservedMemory, nodes, {
        kubeReserved: cfg.node.kubeReserved,
        systemReserved: cfg.node.systemReserved,
        memoryEvictionThreshold: cfg.node.evictionHard['memory.available'],
        memoryCapacityBytes: machine.memoryBytes,
        hugePageTypes: (machine.hugePages ?? []).map((p) => hugePageResourceName(p.pageSizeKb)),
      });
      const memory = [...reserved.values()].reduce((sum, byType) => sum + (byType.get('memory') ?? 0), 0);
      if (memory <= 0) throw new Error('[memorymanager] you should specify the system reserved memory');
      return { policy, nodes, reserved } as const;
    } catch (err) {
      throw new Error(`failed to initialize memory manager: ${messageOf(err)}`, { cause: err });
    }
  })();
  const manager = new MemoryManager({
    ...made,
    stateFile: join(cfg.rootDir, 'memory_manager_state'),
    logger: d.logger,
  });
  try {
    manager.start();
  } catch (err) {
    throw new Error(`start memory manager error: ${messageOf(err)}`, { cause: err });
  }
  return manager;
}

/** Upstream's buckets for the topology manager's admission time: ExponentialBuckets(.05, 2, 15), in ms. */
const TOPOLOGY_ADMISSION_BUCKETS_MS = Array.from({ length: 15 }, (_, i) => 0.05 * 2 ** i);

export function composeResourceManagers(
  cfg: AgentConfig,
  d: {
    runtime: RuntimeService;
    /** The device manager, the topology manager's other hint provider. */
    devices?: DeviceProvider;
    activePods: () => Pod[];
    sourcesSeen: () => boolean;
    clock: Clock;
    logger: Logger;
    /**
     * Where the NUMA nodes' distances and memory are read (default /sys/devices/system/node; tests point it
     * elsewhere).
     */
    sysNodeDir?: string;
  },
): {
  /**
   * Starts the managers; `machine` is the capacity Node Allocatable takes the memory manager's reservations from
   * (default: the memory the OS reports, no huge pages).
   */
  start(signal: AbortSignal, machine?: MachineMemory): void;
  admit(pod: Pod, admitted: Pod[]): AdmitResult | undefined | Promise<AdmitResult | undefined>;
  cpusets: ContainerCpusets;
  /**
   * Whether a pod (no container named) or a container holds exclusive CPUs, where that takes its CFS quota away
   * (DisableCPUQuotaWithExclusiveCPUs on); undefined with the gate off.
   */
  exclusiveCpus?: (podUid: string, containerName?: string) => boolean;
  podCpus: PodCpus;
  podMemory: PodMemory;
  /** kubelet_topology_manager_admission_duration_ms, for the metrics registry. */
  topologyAdmissionDuration: Histogram;
} {
  let m: CpuManager | undefined;
  let memory: MemoryManager | undefined;
  let topology: TopologyManagerConfig | undefined;
  let topologyAdmissions = 0;
  let topologyErrors = 0;
  const numaAlignment: Record<AlignmentScope, AlignmentCount> = {
    container: { aligned: 0, failed: 0 },
    pod: { aligned: 0, failed: 0 },
  };
  const alignment = {
    aligned: (scope: AlignmentScope) => void numaAlignment[scope].aligned++,
    failed: (scope: AlignmentScope) => void numaAlignment[scope].failed++,
  };
  const topologyAdmissionDuration = new Histogram(
    'kubelet_topology_manager_admission_duration_ms',
    '[ALPHA] Duration in milliseconds to serve a pod admission request.',
    [],
    TOPOLOGY_ADMISSION_BUCKETS_MS,
  );
  const c = cfg.cpuManager ?? { policy: 'none', reconcilePeriodMs: 10_000, reservedCpus: '' };
  const reconcile = async () => {
    const update = d.runtime.updateContainerResources?.bind(d.runtime);
    // Not before every pod source has delivered its pods: until then "not active" is not "gone" (upstream
    // sourcesReady).
    if (!m || !update || !d.sourcesSeen()) return;
    const running = (await d.runtime.listContainers({ state: { state: 'CONTAINER_RUNNING' } })).map((x) => ({
      podUid: x.labels?.[PodUidLabel] ?? '',
      name: x.labels?.[ContainerNameLabel] ?? '',
      id: x.id,
    }));
    await m.reconcile(new Set(d.activePods().map((p) => p.metadata.uid!)), running, (id, cpuset) =>
      update(id, { cpuset_cpus: cpuset }),
    );
  };
  return {
    start(signal, machine = { memoryBytes: totalmem() }) {
      const reserved = (r: Record<string, string>) => milliCpu(r.cpu) ?? 0;
      const cpuTopology = readCpuTopology();
      // The topology manager is made first, as upstream's container manager makes it.
      const t = cfg.topologyManager ?? { policy: 'none', scope: 'container' };
      const options = topologyPolicyOptions(t.options);
      // The machine's NUMA nodes as cAdvisor gives them to upstream's topology manager: memory-only ones included.
      const inSysfs = listNumaNodes(d.sysNodeDir);
      const numaNodes = inSysfs.length ? inSysfs : numaNodesOf(cpuTopology);
      // The merge tries every combination of NUMA nodes: upstream's limit for the policies that compare them.
      if (t.policy !== 'none' && numaNodes.length > options.maxAllowableNumaNodes)
        throw new Error(`unsupported on machines with more than ${options.maxAllowableNumaNodes} NUMA Nodes`);
      const distances = options.preferClosestNuma ? readNumaDistances(numaNodes, d.sysNodeDir) : undefined;
      // Upstream's two failures: the policy cannot be made, or its state does not fit it.
      const made = (() => {
        try {
          return new CpuManager({
            policy: c.policy,
            stateFile: join(cfg.rootDir, 'cpu_manager_state'),
            topology: cpuTopology,
            reservedCpus: c.reservedCpus ? parseCpuSet(c.reservedCpus) : undefined,
            reservedMilli: reserved(cfg.node.kubeReserved) + reserved(cfg.node.systemReserved),
            options: c.options,
            optionGates: c.optionGates,
            topologyPolicy: t.policy,
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
      // The memory manager comes after the CPU manager, as upstream's container manager makes them.
      memory = startMemoryManager(cfg, machine, { logger: d.logger, sysNodeDir: d.sysNodeDir });
      topology = { policy: t.policy, scope: t.scope, numaNodes, distances };
      if (c.policy !== 'static') return;
      periodically(reconcile, {
        periodMs: c.reconcilePeriodMs,
        signal,
        clock: d.clock,
        onError: (err) => d.logger.warn({ err: messageOf(err) }, 'cpu manager reconcile failed'),
      });
    },
    admit(pod, admitted) {
      // Before the start (no CPU manager yet) only devices, without topology.
      const t = topology ?? { policy: 'none' as const, scope: 'container' as const, numaNodes: [] };
      if (topology) topologyAdmissions++;
      const startedAt = performance.now();
      const counted = (refused: AllocationRefusal | undefined): AdmitResult | undefined => {
        // Whole milliseconds, as upstream's time.Since(start).Milliseconds().
        if (topology) topologyAdmissionDuration.observe(undefined, Math.trunc(performance.now() - startedAt));
        if (!refused) return undefined;
        if (topology) topologyErrors++;
        return { admit: false, ...refused };
      };
      const result = admitWithTopology(
        { cpus: m, devices: d.devices, memory },
        t,
        pod,
        admitted,
        alignment,
        d.sourcesSeen(),
      );
      return result instanceof Promise ? result.then(counted) : counted(result);
    },
    cpusets: {
      cpusetFor: (uid, name) => m?.containerCpuset(uid, name),
      created: (uid, name, id, cpuset) => m?.created(uid, name, id, cpuset),
    },
    ...(cfg.disableCpuQuotaWithExclusiveCpus
      ? { exclusiveCpus: (uid: string, name?: string) => m?.hasExclusiveCpus(uid, name) ?? false }
      : {}),
    podCpus: {
      allocatableCpus: () => m?.allocatableCpus() ?? [],
      exclusiveCpus: (uid, name) => m?.exclusiveCpus(uid, name) ?? [],
      counts: () => {
        const { physicalCpuAlignment, ...counts } = m?.counts() ?? {
          pinningRequests: 0,
          pinningErrors: 0,
          sharedPoolMilli: 0,
          exclusiveCpus: 0,
          allocatedPerNuma: new Map<number, number>(),
        };
        return {
          ...counts,
          topologyAdmissions,
          topologyErrors,
          alignment: { numaNode: numaAlignment, physicalCpu: physicalCpuAlignment },
        };
      },
    },
    podMemory: {
      cpusetMems: (uid, name) => memory?.numaNodesOf(uid, name)?.join(','),
      memoryOf: (uid, name) => memory?.memoryOf(uid, name) ?? [],
      allocatableMemory: () => memory?.allocatableMemory() ?? [],
      counts: () => memory?.counts() ?? { pinningRequests: 0, pinningErrors: 0 },
    },
    topologyAdmissionDuration,
  };
}
