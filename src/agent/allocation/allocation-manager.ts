/**
 * The allocation manager (upstream pkg/kubelet/allocation): what each pod's containers are
 * allocated and what was last applied to them, kept in upstream's checkpoints, and the in-place
 * resize of a running pod — admitted by resize.ts, then actuated through the runtime
 * (UpdateContainerResources, or a restart for a resource whose resizePolicy is RestartContainer),
 * the pod cgroup before the containers when limits grow and after them when they shrink. Each
 * sync of a running pod runs one pass; what is left (a Deferred resize, a failed update) is tried
 * again on the next.
 */
import type { Pod } from '../../api/types.js';
import type { RuntimeService } from '../../cri/services.js';
import type * as cri from '../../cri/types.js';
import type { Logger } from '../../lib/logger.js';
import { KubeletError, messageOf } from '../../lib/errors.js';
import type { AdmissionNode } from '../admission/predicate.js';
import { linuxContainerResources, type ResourceContext } from '../runtime/linux-resources.js';
import { latestContainer, type PodRuntimeStatus } from '../runtime/pod-runtime-status.js';
import { podRef, type EventSink } from '../events/recorder.js';
import {
  ACTUATED_FILE,
  ALLOCATED_FILE,
  POD_LEVEL,
  readAllocations,
  writeAllocations,
  type ContainerResources,
  type PodAllocations,
} from './checkpoint.js';
import type { ResizeState } from './resize-state.js';
import { PodUidLabel } from '../runtime/labels.js';
import type { ResizeMetrics } from '../metrics/resize-metrics.js';
import {
  RESIZE_COMPLETED,
  RESIZE_DEFERRED,
  RESIZE_ERROR,
  RESIZE_INFEASIBLE,
  RESIZE_STARTED,
  requestedResizes,
  resizeMessage,
} from './resize-events.js';
import {
  actuationOf,
  admitResizeInOrder,
  type ExclusivePolicies,
  allocatedContainers,
  allocationsDiffer,
  changedResources,
  memoryDecreaseRefusal,
  podCgroupFirst,
  RESIZED_RESOURCES,
  specResources,
  withResourceOf,
  withResources,
  type PendingResize,
} from './resize.js';

/** What the manager needs. */
export interface AllocationManagerDeps {
  rootDir: string;
  runtime: RuntimeService;
  resources: ResourceContext;
  /** The node's allocatable (undefined until known: resizes wait). */
  allocatable: () => AdmissionNode['allocatable'] | undefined;
  /** The other pods that hold resources on the node. */
  activePods: () => Pod[];
  podCgroups?: { resize(pod: Pod): Promise<void> };
  /**
   * The pod's resources as the runtime is told them after its cgroup changed (pod-resource-config.ts sandboxResources).
   */
  sandboxResources?: (pod: Pod) => cri.LinuxContainerResources;
  events?: EventSink;
  /** Upstream's resize metrics (metrics/resize-metrics.ts). */
  metrics?: ResizeMetrics;
  /**
   * Whether the CPU and memory managers run their static policies (a Guaranteed pod's pinned resources do not resize).
   */
  exclusive?: ExclusivePolicies;
  logger: Logger;
}

export class AllocationManager {
  private allocated: PodAllocations = new Map();
  private actuated: PodAllocations = new Map();
  private readonly states = new Map<string, ResizeState>();
  /** Each pod's desired resources when last seen (a change is a requested resize). */
  private readonly seenDesired = new Map<string, ReadonlyMap<string, ContainerResources>>();
  /** Pods whose accepted resize is not applied yet (ResizeCompleted once it is). */
  private readonly resizing = new Set<string>();
  /** The pods whose resize is Deferred, for upstream's order of retries. */
  private readonly pending = new Map<string, PendingResize>();
  /** The desired resources last found infeasible, per pod (counted once each). */
  private readonly infeasibleFor = new Map<string, string>();
  private writes: Promise<void> = Promise.resolve();
  /** Each pod object's effective pod, for as long as its allocation is the same. */
  private readonly effectiveOf = new WeakMap<Pod, { allocation: ReadonlyMap<string, ContainerResources>; pod: Pod }>();

  constructor(private readonly deps: AllocationManagerDeps) {}

  /** Reads the checkpoints (a Go kubelet's as well as ours). */
  async load(): Promise<void> {
    [this.allocated, this.actuated] = await Promise.all([
      readAllocations(this.deps.rootDir, ALLOCATED_FILE),
      readAllocations(this.deps.rootDir, ACTUATED_FILE),
    ]);
  }

  /** The pod's containers' resources as allocated (the spec's before the pod has an allocation). */
  allocatedResources(pod: Pod): ReadonlyMap<string, ContainerResources> {
    return this.allocated.get(pod.metadata.uid!) ?? specResources(pod);
  }

  /** The resources last applied to the pod's containers, when known. */
  actuatedResources(uid: string): ReadonlyMap<string, ContainerResources> | undefined {
    return this.actuated.get(uid);
  }

  /** Where the pod's resize stands. */
  stateOf(uid: string): ResizeState {
    return this.states.get(uid) ?? {};
  }

  /** Where every pod's resize stands (the pending and in-progress gauges). */
  resizeStates(): Iterable<ResizeState> {
    return this.states.values();
  }

  /**
   * `pod` with its containers' resources as allocated: what its containers are made with. The pod
   * itself when they are its spec's (the usual case: what is derived from a pod object stays cached).
   */
  effective(pod: Pod): Pod {
    const allocation = this.allocated.get(pod.metadata.uid!);
    if (!allocation) return pod;
    const cached = this.effectiveOf.get(pod);
    if (cached?.allocation === allocation) return cached.pod;
    const result = allocationsDiffer(specResources(pod), allocation) ? withResources(pod, allocation) : pod;
    this.effectiveOf.set(pod, { allocation, pod: result });
    return result;
  }

  /** Forgets a pod that is gone. */
  async remove(uid: string): Promise<void> {
    this.states.delete(uid);
    this.seenDesired.delete(uid);
    this.resizing.delete(uid);
    this.infeasibleFor.delete(uid);
    this.pending.delete(uid);
    if (this.allocated.delete(uid) || this.actuated.delete(uid)) await this.persist();
  }

  /** Writes both checkpoints, one write at a time, in the order the changes happened. */
  private persist(): Promise<void> {
    const allocated = new Map(this.allocated);
    const actuated = new Map(this.actuated);
    this.writes = this.writes
      .then(async () => {
        await writeAllocations(this.deps.rootDir, ALLOCATED_FILE, allocated);
        await writeAllocations(this.deps.rootDir, ACTUATED_FILE, actuated);
      })
      .catch((err: unknown) =>
        this.deps.logger.warn({ err: messageOf(err) }, 'failed to write the allocation checkpoints'),
      );
    return this.writes;
  }

  /** One resize pass for a running pod: admit a changed spec, then apply what is allocated. */
  async sync(pod: Pod, rs: PodRuntimeStatus): Promise<{ state: ResizeState; changed: boolean }> {
    const uid = pod.metadata.uid!;
    const allocated = this.allocated.get(uid);
    const before = this.states.get(uid);
    // Every periodic sync of a pod that asks for what it has, all applied, nothing pending: nothing to do.
    if (
      allocated &&
      this.actuated.has(uid) &&
      !before?.pending &&
      !before?.inProgress &&
      !allocationsDiffer(specResources(pod), allocated) &&
      !this.unapplied(pod, rs).length &&
      !this.podLevelUnapplied(uid).length
    )
      return { state: before ?? {}, changed: false };
    const snapshot = () => JSON.stringify([[...(this.allocated.get(uid) ?? [])], [...(this.actuated.get(uid) ?? [])]]);
    const was = snapshot();
    const desired = specResources(pod);
    const seen = this.seenDesired.get(uid) ?? allocated;
    const resized = !!seen && allocationsDiffer(seen, desired);
    if (resized) this.deps.metrics?.requested(requestedResizes(seen, desired));
    this.seenDesired.set(uid, desired);
    // A pod first seen (admitted now, or running before this kubelet started): its spec is its allocation.
    if (!this.allocated.has(uid)) this.allocated.set(uid, specResources(pod));
    const state: ResizeState = {};
    const allocatable = this.deps.allocatable();
    if (allocatable) {
      const candidate = {
        pod,
        allocated: this.allocated.get(uid)!,
        deferredSinceMs: this.pending.get(uid)?.deferredSinceMs ?? Date.now(),
      };
      // Other pods' Deferred resizes ranked before this one take their room first, as upstream's ordered retry.
      const verdict = admitResizeInOrder({
        candidate,
        pending: [...this.pending.values()],
        active: this.deps.activePods().map((p) => this.effective(p.metadata.uid === uid ? pod : p)),
        allocatable,
        exclusive: this.deps.exclusive,
      });
      if (verdict.kind === 'deferred') this.pending.set(uid, candidate);
      else this.pending.delete(uid);
      if (verdict.kind === 'accepted') {
        if (before?.pending) this.deps.metrics?.deferredAccepted(resized ? 'pod_resized' : 'periodic_retry');
        this.allocated.set(uid, desired);
        this.resizing.add(uid);
        this.deps.events?.record(podRef(pod), 'Normal', RESIZE_STARTED, resizeMessage('Pod resize started', pod));
      } else if (verdict.kind === 'deferred' || verdict.kind === 'infeasible') {
        state.pending = { reason: verdict.kind === 'deferred' ? 'Deferred' : 'Infeasible', message: verdict.message };
        // Told once per reason and message, as the pending condition changes (upstream PodResizePendingMsg).
        if (before?.pending?.reason !== state.pending.reason || before.pending.message !== state.pending.message)
          this.deps.events?.record(
            podRef(pod),
            verdict.kind === 'deferred' ? 'Normal' : 'Warning',
            verdict.kind === 'deferred' ? RESIZE_DEFERRED : RESIZE_INFEASIBLE,
            resizeMessage(`Pod resize ${state.pending.reason}`, pod, state.pending.message),
          );
        const key = JSON.stringify([...desired]);
        if (verdict.kind === 'infeasible' && this.infeasibleFor.get(uid) !== key) {
          this.infeasibleFor.set(uid, key);
          this.deps.metrics?.infeasible(verdict.detail);
        }
      }
    }
    const error = await this.actuate(pod, rs);
    const unapplied = this.unapplied(pod, rs).length > 0 || this.podLevelUnapplied(uid).length > 0;
    if (error !== undefined || unapplied) state.inProgress = error ? { error } : {};
    const allocatedPod = () => withResources(pod, this.allocated.get(uid)!);
    if (error !== undefined && error !== before?.inProgress?.error)
      this.deps.events?.record(
        podRef(pod),
        'Warning',
        RESIZE_ERROR,
        resizeMessage('Pod resize error', allocatedPod(), error),
      );
    if (error === undefined && !unapplied && this.resizing.delete(uid))
      this.deps.events?.record(
        podRef(pod),
        'Normal',
        RESIZE_COMPLETED,
        resizeMessage('Pod resize completed', allocatedPod()),
      );
    this.states.set(uid, state);
    const changed = snapshot() !== was;
    if (changed) await this.persist();
    return { state, changed: changed || JSON.stringify(state) !== JSON.stringify(before ?? {}) };
  }

  /** The running containers whose applied resources are not the allocated ones. */
  private unapplied(pod: Pod, rs: PodRuntimeStatus): { name: string; id: string; changed: string[] }[] {
    const uid = pod.metadata.uid!;
    const allocation = this.allocated.get(uid)!;
    const applied = this.actuated.get(uid);
    return allocatedContainers(pod).flatMap((c) => {
      const inst = latestContainer(rs, c.name);
      if (!inst || inst.state !== 'running') return [];
      // A container started without a record was started with its allocation.
      const changed = applied?.has(c.name) ? changedResources(applied.get(c.name), allocation.get(c.name)) : [];
      return changed.length ? [{ name: c.name, id: inst.id, changed }] : [];
    });
  }

  /** The pod-level resources whose applied value is not the allocated one (none before the pod cgroup has a record). */
  private podLevelUnapplied(uid: string): string[] {
    const applied = this.actuated.get(uid);
    if (!applied?.has(POD_LEVEL)) return [];
    return changedResources(applied.get(POD_LEVEL), this.allocated.get(uid)?.get(POD_LEVEL));
  }

  /** Each running container's memory usage (CRI ContainerStats), by container name. */
  private async memoryUsage(uid: string): Promise<Map<string, number>> {
    const stats = await this.deps.runtime.listContainerStats({ label_selector: { [PodUidLabel]: uid } });
    return new Map(
      stats.map((s) => [
        s.attributes.metadata.name,
        Number(s.memory?.usage_bytes?.value ?? s.memory?.working_set_bytes?.value ?? 0),
      ]),
    );
  }

  /**
   * Tells the runtime the pod's new resources (UpdatePodSandboxResources). After the kubelet
   * resized the pod cgroup it is upstream's notice, best effort: a failure is only logged. Where
   * the runtime's sandbox cgroup is the pod's (`required`), it is the resize, and a failure fails
   * it. A runtime without the call (Unimplemented: containerd before 2.0) is left alone.
   */
  private async tellRuntime(pod: Pod, rs: PodRuntimeStatus, o: { required: boolean }): Promise<void> {
    const sandbox = rs.sandboxes.find((s) => s.ready);
    if (!sandbox || !this.deps.runtime.updatePodSandboxResources || !this.deps.sandboxResources) return;
    try {
      await this.deps.runtime.updatePodSandboxResources({
        pod_sandbox_id: sandbox.id,
        resources: this.deps.sandboxResources(pod),
      });
    } catch (err) {
      if (err instanceof KubeletError && err.code === 'NotImplemented') return;
      if (o.required) throw err;
      this.deps.logger.warn(
        { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, err: messageOf(err) },
        'failed to update the pod sandbox resources',
      );
    }
  }

  /** Applies the allocation to the running containers and the pod cgroup; the first failure's message, if any. */
  private async actuate(pod: Pod, rs: PodRuntimeStatus): Promise<string | undefined> {
    const uid = pod.metadata.uid!;
    const allocation = this.allocated.get(uid)!;
    const applied = new Map(this.actuated.get(uid) ?? []);
    const todo = this.unapplied(pod, rs);
    const podLevelChanged = this.podLevelUnapplied(uid);
    // Containers not running take their allocation when they start; a pod cgroup without a record was made with it.
    for (const c of allocatedContainers(pod)) {
      const inst = latestContainer(rs, c.name);
      if (!inst || inst.state !== 'running' || !applied.has(c.name)) applied.set(c.name, allocation.get(c.name) ?? {});
    }
    if (!applied.has(POD_LEVEL) && allocation.has(POD_LEVEL)) applied.set(POD_LEVEL, allocation.get(POD_LEVEL)!);
    if (!todo.length && !podLevelChanged.length) {
      this.actuated.set(uid, applied);
      return undefined;
    }
    const before = withResources(pod, applied);
    const after = withResources(pod, allocation);
    const containerOf = (p: Pod, name: string) => allocatedContainers(p).find((c) => c.name === name)!;
    const [updates, restarts] = [
      todo.filter((t) => actuationOf(containerOf(after, t.name), t.changed) === 'update'),
      todo.filter((t) => actuationOf(containerOf(after, t.name), t.changed) === 'restart'),
    ];
    const began = performance.now();
    let failure: string | undefined;
    try {
      // Memory limits never go below what is in use: nothing is written, the resize stays in progress with the reason.
      const updated = updates.filter((t) => t.changed.includes('memory')).map((t) => t.name);
      const refusal =
        updated.length || podLevelChanged.includes('memory')
          ? memoryDecreaseRefusal({ before, after, updated, usage: await this.memoryUsage(uid) })
          : undefined;
      if (refusal) throw new Error(refusal);
      // Without the kubelet's pod cgroups (the embedded runtime), the runtime's sandbox cgroup is the pod's.
      const resizePodCgroup = (target: Pod) =>
        this.deps.podCgroups ? this.deps.podCgroups.resize(target) : this.tellRuntime(target, rs, { required: true });
      // One resource at a time, as upstream: the pod cgroup before its containers when it grows, after them when it
      // shrinks.
      let current = before;
      for (const resource of RESIZED_RESOURCES) {
        if (!todo.some((t) => t.changed.includes(resource)) && !podLevelChanged.includes(resource)) continue;
        const target = withResourceOf(current, after, resource);
        const first = podCgroupFirst(current, target, resource);
        if (first) await resizePodCgroup(target);
        for (const t of updates.filter((u) => u.changed.includes(resource))) {
          if (!this.deps.runtime.updateContainerResources)
            throw new Error('the container runtime cannot update the resources of a running container');
          await this.deps.runtime.updateContainerResources(
            t.id,
            linuxContainerResources(target, containerOf(target, t.name), this.deps.resources),
          );
        }
        if (!first) await resizePodCgroup(target);
        current = target;
      }
      // A resource whose resizePolicy is RestartContainer: the container is restarted, and starts with its allocation.
      for (const t of restarts) {
        this.deps.events?.record(
          podRef(pod, { name: t.name }),
          'Normal',
          'Killing',
          `Container ${t.name} resize requires restart`,
        );
        await this.deps.runtime.stopContainer(t.id, 0);
      }
      for (const t of todo) applied.set(t.name, allocation.get(t.name) ?? {});
      if (allocation.has(POD_LEVEL)) applied.set(POD_LEVEL, allocation.get(POD_LEVEL)!);
      if (this.deps.podCgroups) await this.tellRuntime(after, rs, { required: false });
    } catch (err) {
      failure = messageOf(err);
      this.deps.logger.warn(
        { pod: `${pod.metadata.namespace}/${pod.metadata.name}`, err: failure },
        'pod resize failed',
      );
    }
    this.deps.metrics?.actuated(Math.round(performance.now() - began), failure === undefined);
    this.actuated.set(uid, applied);
    return failure;
  }
}
