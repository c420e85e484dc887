/**
 * The CPU manager (upstream pkg/kubelet/cm/cpumanager, policies `none` and `static` with the
 * options `full-pcpus-only`, `strict-cpu-reservation` and `distribute-cpus-across-numa`). `none`
 * only keeps its state file. `static` gives each container of a Guaranteed pod with an integer CPU
 * request CPUs of its own, taken at admission (takeByTopology) out of the shared pool less the
 * reserved CPUs (reservedSystemCPUs, else the ceiling of kube- plus system-reserved cpu taken by
 * topology); every other container runs on the shared pool, which keeps the reserved CPUs (not
 * with strict-cpu-reservation: they are the system's alone). Containers are created with their
 * cpuset, and the reconcile loop (cpuManagerReconcilePeriod) writes each running container's
 * cpuset again when it changed (UpdateContainerResources) — the shared pool shrinks and grows as
 * exclusive CPUs are taken and freed. CPUs of a pod no longer active go back to the pool. Init
 * containers' CPUs are reused by the pod's app containers (not a sidecar's: it runs beside them).
 * The state survives restarts in `cpu_manager_state` (checkpoint.ts); a state that does not fit
 * the configuration stops the kubelet with upstream's message.
 */
import type { Container, Pod } from '../../api/types.js';
import { milliCpu } from '../../api/quantity.js';
import type { Logger } from '../../lib/logger.js';
import { qosClass } from '../status/qos-class.js';
import { readCheckpoint, writeCheckpoint, type CpuManagerState } from './checkpoint.js';
import { takeByTopology } from './cpu-assignment.js';
import { takeDistributedAcrossNuma } from './cpu-distribution.js';
import { cpuTopologyHints } from './topology-hints.js';
import type { TopologyHint } from '../topologymanager/hint-merge.js';
import { difference, formatCpuSet, union, type CpuSet } from '../../lib/cpuset.js';
import { cpusPerCore, topologyCpus, type CpuTopology } from './topology.js';
import {
  goMap,
  NO_STATIC_POLICY_OPTIONS,
  parseStaticPolicyOptions,
  validateStaticPolicyOptions,
  type StaticPolicyOptions,
} from './policy-options.js';
import type { CpuManagerCounts, RunningContainer } from './views.js';
import { unexpectedAdmissionError, type AllocationRefusal } from '../admission/allocation-refusal.js';
import { validateStaticState } from './validate-state.js';

export interface CpuManagerConfig {
  policy: 'none' | 'static';
  stateFile: string;
  topology: CpuTopology;
  /** reservedSystemCPUs (an explicit set). */
  reservedCpus?: CpuSet;
  /** kube-reserved + system-reserved cpu, in millicores (the static policy needs it above 0). */
  reservedMilli: number;
  /** cpuManagerPolicyOptions and the gates that allow them (policy-options.ts). */
  options?: Readonly<Record<string, string>>;
  optionGates?: { alpha: boolean; beta: boolean };
  /** The topology manager's policy (align-by-socket is refused under single-numa-node). */
  topologyPolicy?: string;
  logger?: Logger;
}

/**
 * A container's exclusive CPU count (upstream guaranteedCPUs): its integer CPU request in a Guaranteed pod, else 0.
 * Pure.
 */
export function guaranteedCpus(pod: Pod, c: Container): number {
  if (qosClass(pod) !== 'Guaranteed') return 0;
  const milli = milliCpu(c.resources?.requests?.cpu) ?? milliCpu(c.resources?.limits?.cpu) ?? 0;
  return milli % 1000 === 0 ? milli / 1000 : 0;
}

export class CpuManager {
  private state: CpuManagerState = { policyName: 'none', defaultCpuSet: [], entries: new Map() };
  private readonly reserved: CpuSet;
  private readonly reuse = new Map<string, CpuSet>();
  /** What each container's cpuset was last written as (upstream lastUpdateState). */
  private readonly written = new Map<string, string>();
  private pinningRequests = 0;
  private pinningErrors = 0;
  /**
   * The pods seen active since start: admission releases only their CPUs (a pod of the state not re-admitted yet after
   * a restart keeps its own).
   */
  private readonly seen = new Set<string>();

  private readonly options: Readonly<StaticPolicyOptions> = NO_STATIC_POLICY_OPTIONS;
  /** The reserved CPUs' whole cores (full-pcpus-only keeps them out of exclusive allocations). */
  private reservedCores: CpuSet = [];

  /**
   * The policy (static: its options and reserved CPUs); throws upstream's message when they are wrong or cannot be
   * reserved.
   */
  constructor(private readonly c: CpuManagerConfig) {
    const all = topologyCpus(c.topology);
    this.reserved = [];
    const options = c.options ?? {};
    if (c.policy === 'none' && Object.keys(options).length)
      throw new Error(`new none policy error: None policy: received unsupported options=${goMap(options)}`);
    if (c.policy === 'static') {
      try {
        this.options = parseStaticPolicyOptions(options, c.optionGates ?? { alpha: false, beta: true });
        validateStaticPolicyOptions(this.options, {
          topologyPolicy: c.topologyPolicy ?? 'none',
          sockets: new Set([...c.topology.values()].map((cpu) => cpu.socketId)).size,
          numaNodes: new Set([...c.topology.values()].map((cpu) => cpu.numaNodeId)).size,
        });
      } catch (err) {
        throw new Error(`new static policy error: ${(err as Error).message}`, { cause: err });
      }
      if (c.reservedMilli <= 0 && !c.reservedCpus?.length)
        throw new Error(
          '[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero',
        );
      const n = c.reservedCpus?.length ? c.reservedCpus.length : Math.ceil(c.reservedMilli / 1000);
      const taken = c.reservedCpus?.length
        ? { ok: true as const, cpus: c.reservedCpus }
        : // As upstream, the reserved CPUs are taken as the policy takes any (its options included).
          this.takeCpus(all, n);
      if (!taken.ok || taken.cpus.length !== n)
        throw new Error(
          `[cpumanager] unable to reserve the required amount of CPUs (size of ${taken.ok ? formatCpuSet(taken.cpus) : ''} did not equal ${n})`,
        );
      this.reserved = taken.cpus;
      const cores = new Set(this.reserved.map((cpu) => c.topology.get(cpu)?.coreId));
      this.reservedCores = all.filter((cpu) => cores.has(c.topology.get(cpu)?.coreId));
    }
  }

  /**
   * Reads the state and checks it against the configuration (throws upstream's message when they disagree), and writes
   * it back.
   */
  start(): void {
    this.state = readCheckpoint(this.c.stateFile, this.c.policy);
    if (this.c.policy === 'static')
      this.state = validateStaticState(
        this.state,
        this.reserved,
        topologyCpus(this.c.topology),
        this.options.strictCpuReservation,
      );
    this.save();
  }

  private save(): void {
    writeCheckpoint(this.c.stateFile, this.state);
  }

  /**
   * The CPUs exclusive allocations can come from (upstream GetAllocatableCPUs; the pod-resources API's allocatable
   * cpu_ids).
   */
  allocatableCpus(): CpuSet {
    return this.c.policy === 'static' ? difference(topologyCpus(this.c.topology), this.reserved) : [];
  }

  counts(): Omit<CpuManagerCounts, 'topologyAdmissions' | 'topologyErrors' | 'alignment'> & {
    physicalCpuAlignment?: { aligned: number; failed: number };
  } {
    const isStatic = this.c.policy === 'static';
    // Under full-pcpus-only every allocation is one of whole cores, or a failure to make one.
    const full = this.options.fullPhysicalCpusOnly;
    return {
      ...(isStatic
        ? {
            physicalCpuAlignment: {
              aligned: full ? this.pinningRequests - this.pinningErrors : 0,
              failed: full ? this.pinningErrors : 0,
            },
          }
        : {}),
      pinningRequests: this.pinningRequests,
      pinningErrors: this.pinningErrors,
      sharedPoolMilli: isStatic ? difference(this.state.defaultCpuSet, this.reserved).length * 1000 : 0,
      exclusiveCpus: [...this.state.entries.values()].reduce(
        (n, cs) => n + [...cs.values()].reduce((m, set) => m + set.length, 0),
        0,
      ),
      allocatedPerNuma: this.allocatedPerNuma(),
    };
  }

  /** The CPUs of every exclusive assignment, each once, counted by NUMA node. */
  private allocatedPerNuma(): Map<number, number> {
    const allocated = new Set<number>();
    for (const containers of this.state.entries.values())
      for (const set of containers.values()) for (const cpu of set) allocated.add(cpu);
    const perNode = new Map<number, number>();
    for (const cpu of allocated) {
      const node = this.c.topology.get(cpu)?.numaNodeId ?? 0;
      perNode.set(node, (perNode.get(node) ?? 0) + 1);
    }
    return perNode;
  }

  /** A container's exclusive CPUs (empty when it runs on the shared pool). */
  exclusiveCpus(podUid: string, name: string): CpuSet {
    return this.state.entries.get(podUid)?.get(name) ?? [];
  }

  /**
   * Whether the pod (any container of it) or its container `name` holds exclusive CPUs (upstream PodHasExclusiveCPUs /
   * ContainerHasExclusiveCPUs).
   */
  hasExclusiveCpus(podUid: string, name?: string): boolean {
    const containers = this.state.entries.get(podUid);
    if (!containers) return false;
    if (name !== undefined) return (containers.get(name)?.length ?? 0) > 0;
    return [...containers.values()].some((set) => set.length > 0);
  }

  /** The cpuset a container is created with (upstream GetCPUSetOrDefault); undefined under `none`. */
  containerCpuset(podUid: string, name: string): string | undefined {
    if (this.c.policy !== 'static') return undefined;
    const set = this.state.entries.get(podUid)?.get(name) ?? this.state.defaultCpuSet;
    return set.length ? formatCpuSet(set) : undefined;
  }

  /** A container was created with `cpuset` (upstream AddContainer's lastUpdateState): the reconcile loop leaves it. */
  created(podUid: string, name: string, id: string, cpuset: string): void {
    this.written.set(`${podUid}/${name}/${id}`, cpuset);
  }

  /**
   * Allocates the pod's exclusive CPUs at admission, init containers first (upstream: the
   * topology manager's admit handler calling the policy's Allocate for each container, with the
   * NUMA nodes `affinity` gives it, topologymanager/topology-admission.ts); the refusal, or undefined.
   * Assignments of pods seen active and no longer so are released first.
   */
  allocate(
    pod: Pod,
    active: readonly Pod[],
    affinity: (c: Container) => readonly number[] | undefined = () => undefined,
  ): AllocationRefusal | undefined {
    this.beginAdmission(pod, active);
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
      const refused = this.allocateContainer(pod, c, affinity(c));
      if (refused) return refused;
    }
    return undefined;
  }

  /** The start of a pod's admission: the pods seen active noted, the stale assignments released. */
  beginAdmission(pod: Pod, active: readonly Pod[]): void {
    if (this.c.policy !== 'static') return;
    const activeUids = new Set([...active, pod].map((p) => p.metadata.uid!));
    for (const u of activeUids) this.seen.add(u);
    this.removeStale(activeUids, true);
  }

  /**
   * The CPUs of `available` on the topology manager's `numaNodes` (upstream getAlignedCPUs), or on
   * their whole sockets with align-by-socket.
   */
  private alignedCpus(available: CpuSet, numaNodes: readonly number[]): CpuSet {
    const info = (cpu: number) => this.c.topology.get(cpu);
    if (!this.options.alignBySocket) return available.filter((cpu) => numaNodes.includes(info(cpu)?.numaNodeId ?? -1));
    const sockets = new Set(
      [...this.c.topology.values()].filter((x) => numaNodes.includes(x.numaNodeId)).map((x) => x.socketId),
    );
    return available.filter((cpu) => sockets.has(info(cpu)?.socketId ?? -1));
  }

  /** The CPUs exclusive allocations can take now, with those `pod` may reuse (its init containers'). */
  private available(uid: string): CpuSet {
    return union(difference(this.state.defaultCpuSet, this.reserved), this.reuse.get(uid) ?? []);
  }

  /**
   * One container's allocation (upstream staticPolicy.Allocate), aligned to `numaNodes` first when given; the refusal,
   * or undefined.
   */
  allocateContainer(pod: Pod, c: Container, numaNodes?: readonly number[]): AllocationRefusal | undefined {
    const n = this.c.policy === 'static' ? guaranteedCpus(pod, c) : 0;
    if (!n) return undefined;
    const uid = pod.metadata.uid!;
    this.pinningRequests++;
    const smt = this.smtAlignmentError(n);
    if (smt) {
      this.pinningErrors++;
      return { reason: 'SMTAlignmentError', message: smt };
    }
    let set = this.state.entries.get(uid)?.get(c.name);
    if (!set) {
      const available = this.available(uid);
      const aligned = numaNodes ? this.alignedCpus(available, numaNodes) : [];
      const first = this.takeCpus(aligned, Math.min(n, aligned.length));
      const rest = first.ok ? this.takeCpus(difference(available, first.cpus), n - first.cpus.length) : first;
      if (!first.ok || !rest.ok) {
        this.pinningErrors++;
        const message = !rest.ok ? rest.message : 'failed to allocate cpus';
        this.c.logger?.error(
          { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, containerName: c.name, numCPUs: n, err: message },
          'Unable to allocate CPUs',
        );
        this.save();
        return unexpectedAdmissionError(message);
      }
      set = union(first.cpus, rest.cpus);
      this.state.defaultCpuSet = difference(this.state.defaultCpuSet, set);
      if (!this.state.entries.has(uid)) this.state.entries.set(uid, new Map());
      this.state.entries.get(uid)!.set(c.name, set);
    }
    // upstream updateCPUsToReuse: only this pod's entry; a (non-sidecar) init container's CPUs are reusable, an app
    // container's are not.
    for (const k of this.reuse.keys()) if (k !== uid) this.reuse.delete(k);
    const init = (pod.spec.initContainers ?? []).some((x) => x.name === c.name);
    const reusable = init && c.restartPolicy !== 'Always';
    this.reuse.set(uid, reusable ? union(this.reuse.get(uid) ?? [], set) : difference(this.reuse.get(uid) ?? [], set));
    this.save();
    return undefined;
  }

  /**
   * `n` CPUs out of `available` (upstream staticPolicy.takeByTopology): spread over NUMA nodes with
   * distribute-cpus-across-numa (whole cores at a time with full-pcpus-only), else packed (aligned to uncore caches
   * with prefer-align-cpus-by-uncorecache; over cores with distribute-cpus-across-cores).
   */
  private takeCpus(available: CpuSet, n: number) {
    if (!this.options.distributeCpusAcrossNuma)
      return takeByTopology(this.c.topology, available, n, {
        preferAlignByUncoreCache: this.options.preferAlignByUncoreCache,
        spread: this.options.distributeCpusAcrossCores,
      });
    const groupSize = this.options.fullPhysicalCpusOnly ? cpusPerCore(this.c.topology) : 1;
    return takeDistributedAcrossNuma(this.c.topology, available, n, groupSize);
  }

  /** full-pcpus-only's refusal of `n` CPUs (upstream SMTAlignmentError), or undefined. */
  private smtAlignmentError(n: number): string | undefined {
    const perCore = cpusPerCore(this.c.topology);
    if (!this.options.fullPhysicalCpusOnly || perCore < 1) return undefined;
    if (n % perCore !== 0) return `SMT Alignment Error: requested ${n} cpus not multiple cpus per core = ${perCore}`;
    const physical = difference(this.state.defaultCpuSet, this.reservedCores).length;
    if (n > physical)
      return `SMT Alignment Error: not enough free physical CPUs: available physical CPUs = ${physical}, requested CPUs = ${n}, CPUs per core = ${perCore}`;
    return undefined;
  }

  /**
   * The container's topology hints (upstream GetTopologyHints): undefined for no preference (not exclusive); an
   * assigned container's again.
   */
  containerHints(pod: Pod, c: Container): TopologyHint[] | undefined {
    const n = this.c.policy === 'static' ? guaranteedCpus(pod, c) : 0;
    if (!n) return undefined;
    const assigned = this.state.entries.get(pod.metadata.uid!)?.get(c.name);
    if (assigned)
      return assigned.length === n
        ? cpuTopologyHints(this.c.topology, assigned, [], n, this.options.alignBySocket)
        : [];
    return cpuTopologyHints(
      this.c.topology,
      difference(this.state.defaultCpuSet, this.reserved),
      this.reuse.get(pod.metadata.uid!) ?? [],
      n,
      this.options.alignBySocket,
    );
  }

  /**
   * The pod's topology hints for the pod scope (upstream GetPodTopologyHints): for the most of its init containers' or
   * the sum of its app containers' CPUs.
   */
  podHints(pod: Pod): TopologyHint[] | undefined {
    if (this.c.policy !== 'static') return undefined;
    const of = (cs: Container[] = []) => cs.map((c) => guaranteedCpus(pod, c));
    const requested = Math.max(
      0,
      ...of(pod.spec.initContainers),
      of(pod.spec.containers).reduce((a, b) => a + b, 0),
    );
    if (!requested) return undefined;
    let assigned: CpuSet = [];
    for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
      const set = this.state.entries.get(pod.metadata.uid!)?.get(c.name);
      if (set && set.length !== guaranteedCpus(pod, c)) return [];
      if (set) assigned = union(assigned, set);
    }
    const bySocket = this.options.alignBySocket;
    if (assigned.length === requested) return cpuTopologyHints(this.c.topology, assigned, [], requested, bySocket);
    const reusable = union(this.reuse.get(pod.metadata.uid!) ?? [], assigned);
    const free = difference(this.state.defaultCpuSet, this.reserved);
    return cpuTopologyHints(this.c.topology, free, reusable, requested, bySocket);
  }

  /**
   * Releases the CPUs of every pod not in `activeUids` to the shared pool (upstream
   * removeStaleState); `seenOnly`: only of pods seen active since start (admission's, which can
   * run before every pod of the state has been admitted again after a restart).
   */
  removeStale(activeUids: ReadonlySet<string>, seenOnly = false): void {
    let changed = false;
    for (const [uid, cs] of this.state.entries) {
      if (activeUids.has(uid) || (seenOnly && !this.seen.has(uid))) continue;
      this.state.defaultCpuSet = union(this.state.defaultCpuSet, ...cs.values());
      this.state.entries.delete(uid);
      changed = true;
    }
    for (const key of this.written.keys())
      if (!activeUids.has(key.slice(0, key.indexOf('/')))) this.written.delete(key);
    // Bounded: only pods still active or still holding CPUs stay noted as seen.
    for (const uid of this.seen) if (!activeUids.has(uid) && !this.state.entries.has(uid)) this.seen.delete(uid);
    if (changed) this.save();
  }

  /**
   * One reconcile pass (upstream reconcileState; the caller runs it once every pod source has
   * delivered its pods): stale assignments released, then every running
   * container whose cpuset differs from what was last written gets it written. Returns the
   * containers it failed to update.
   */
  async reconcile(
    activeUids: ReadonlySet<string>,
    running: readonly RunningContainer[],
    update: (id: string, cpuset: string) => Promise<void>,
  ): Promise<RunningContainer[]> {
    if (this.c.policy !== 'static') return [];
    for (const u of activeUids) this.seen.add(u);
    this.removeStale(activeUids);
    const failed: RunningContainer[] = [];
    for (const r of running) {
      if (!activeUids.has(r.podUid)) continue;
      const cpuset = this.containerCpuset(r.podUid, r.name);
      const key = `${r.podUid}/${r.name}/${r.id}`;
      if (!cpuset || this.written.get(key) === cpuset) continue;
      try {
        await update(r.id, cpuset);
        this.written.set(key, cpuset);
      } catch (err) {
        this.c.logger?.error(
          { containerID: r.id, cpuSet: cpuset, err: (err as Error).message },
          'ReconcileState: failed to update container',
        );
        failed.push(r);
      }
    }
    return failed;
  }
}
