/**
 * The device manager (upstream pkg/kubelet/cm/devicemanager): the devices of the plugins
 * (device-plugins.ts) as the node's capacity and the healthy ones as allocatable; at admission
 * (the topology manager's, container by container) a container that asks for N of them gets N
 * healthy devices no other container holds (device-allocation.ts: an init container's reused, the
 * chosen NUMA nodes' first, those the plugin prefers when it offers GetPreferredAllocation), and
 * the plugin's Allocate for them (else upstream's UnexpectedAdmissionError); its answer — env,
 * mounts, device nodes, annotations, CDI devices — goes into the container's CRI config, after
 * PreStartContainer when the plugin asks for it. Every pod's devices and answers are kept in
 * upstream's checkpoint (device-checkpoint.ts): a restarted kubelet holds them.
 */
import { mkdir } from 'node:fs/promises';
import type { Container, Pod } from '../../api/types.js';
import type { Logger } from '../../lib/logger.js';
import type { Clock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import { unexpectedAdmissionError, type AllocationRefusal } from '../admission/allocation-refusal.js';
import type { DevicePluginMetrics } from '../metrics/device-plugin-metrics.js';
import type { ResourceHints } from '../topologymanager/hint-merge.js';
import {
  asksForDevices,
  containerDeviceRequests,
  finishDevices,
  planDevices,
  podDeviceRequests,
  type DeviceHealth,
} from './device-allocation.js';
import { readDeviceCheckpoint, writeDeviceCheckpoint, type DeviceEntry } from './device-checkpoint.js';
import { DevicePlugins } from './device-plugins.js';
import { byNumaNode, resourceHints } from './device-topology.js';

/** What a plugin answers for one container (ContainerAllocateResponse). */
export interface ContainerDevices {
  envs?: Record<string, string>;
  mounts?: { container_path: string; host_path: string; read_only?: boolean }[];
  devices?: { container_path: string; host_path: string; permissions: string }[];
  annotations?: Record<string, string>;
  cdi_devices?: { name: string }[];
}

/** One container's devices: their IDs by resource, and each plugin's answer once asked. */
interface Allocation {
  ids: Map<string, string[]>;
  /** The IDs of each resource by NUMA node, as the checkpoint and pod-resources report them (byNumaNode). */
  byNuma?: Map<string, Record<string, string[]>>;
  answers?: Record<string, ContainerDevices>;
  pending?: Promise<ContainerDevices>;
}

export interface DeviceManagerDeps {
  /** `<root-dir>/device-plugins`. */
  dir: string;
  logger: Logger;
  /** Told when a resource's devices or their health changed (the node status follows). */
  onChange?: () => void;
  /** Upstream's metrics (metrics/device-plugin-metrics.ts). */
  metrics?: DevicePluginMetrics;
  /** The clock of the plugins' stop grace period. */
  clock?: Clock;
}

export class DeviceManager {
  private readonly plugins: DevicePlugins;
  /** Pod UID → container name → its devices. */
  private readonly allocations = new Map<string, Map<string, Allocation>>();
  /**
   * The pod being admitted: what its containers took so far, and the devices of its init
   * containers the next containers reuse, by resource.
   */
  private admission?: { uid: string; containers: Map<string, Allocation>; reuse: Map<string, string[]> };
  private writes: Promise<void> = Promise.resolve();
  /** Whether the kubelet started without a checkpoint (a new root dir, or a recreated node). */
  private startedWithoutCheckpoint = false;

  constructor(private readonly deps: DeviceManagerDeps) {
    this.plugins = new DevicePlugins({
      dir: deps.dir,
      logger: deps.logger,
      metrics: deps.metrics,
      clock: deps.clock,
      // A new list is kept in the checkpoint's RegisteredDevices.
      onChange: (listed) => {
        if (listed) this.persist();
        this.deps.onChange?.();
      },
    });
  }

  /**
   * Restores the checkpoint, then serves Registration on kubelet.sock (made anew: plugins watch for it and register
   * again).
   */
  async start(): Promise<void> {
    await mkdir(this.deps.dir, { recursive: true, mode: 0o750 });
    const saved = await readDeviceCheckpoint(this.deps.dir);
    this.startedWithoutCheckpoint = saved.missing === true;
    if (saved.unusable)
      this.deps.logger.error(
        { err: saved.unusable },
        'Continue after failing to read checkpoint file. Device allocation info may NOT be up-to-date',
      );
    this.plugins.restore(saved.registered);
    for (const e of saved.entries) {
      const pod = this.allocations.get(e.podUid) ?? new Map<string, Allocation>();
      const a: Allocation = pod.get(e.container) ?? { ids: new Map<string, string[]>(), byNuma: new Map() };
      a.ids.set(e.resource, e.ids);
      if (e.byNuma) (a.byNuma ??= new Map()).set(e.resource, e.byNuma);
      if (e.answer?.length) a.answers = { ...a.answers, [e.resource]: this.decodeAnswer(e.answer) };
      pod.set(e.container, a);
      this.allocations.set(e.podUid, pod);
    }
    await this.plugins.serve();
  }

  async stop(): Promise<void> {
    await this.plugins.stop();
    await this.writes;
  }

  /** Writes the checkpoint (one write at a time, each with the state when it was asked for). */
  private persist(): void {
    const entries: DeviceEntry[] = [];
    for (const [podUid, containers] of this.allocations)
      for (const [container, a] of containers)
        for (const [resource, ids] of a.ids)
          entries.push({
            podUid,
            container,
            resource,
            ids,
            ...(a.byNuma?.get(resource) ? { byNuma: a.byNuma.get(resource) } : {}),
            ...(a.answers?.[resource] ? { answer: this.encodeAnswer(a.answers[resource]) } : {}),
          });
    const registered = this.plugins.registered();
    this.writes = this.writes
      .then(() => writeDeviceCheckpoint(this.deps.dir, { entries, registered }))
      .catch((err: unknown) => this.deps.logger.warn({ err: messageOf(err) }, 'failed to write the device checkpoint'));
  }

  /**
   * A ContainerAllocateResponse as protobuf bytes (the checkpoint's AllocResp): the one field of an AllocateResponse.
   */
  private encodeAnswer(answer: ContainerDevices): Buffer {
    const whole = this.plugins.methods.Allocate.responseSerialize({ container_responses: [answer] });
    let at = 1;
    while (whole[at] & 0x80) at++;
    return whole.subarray(at + 1);
  }

  private decodeAnswer(bytes: Buffer): ContainerDevices {
    const length: number[] = [];
    for (let n = bytes.length; ; n >>>= 7) {
      length.push(n > 0x7f ? (n & 0x7f) | 0x80 : n);
      if (n <= 0x7f) break;
    }
    const whole = Buffer.concat([Buffer.from([0x0a, ...length]), bytes]);
    const res = this.plugins.methods.Allocate.responseDeserialize(whole) as {
      container_responses?: ContainerDevices[];
    };
    return res.container_responses?.[0] ?? {};
  }

  /**
   * The devices held by every container but those of the pod being admitted, plus what that
   * pod's containers took so far in its admission, by resource.
   */
  private inUse(resource: string): Set<string> {
    const out = new Set<string>();
    const admitting = this.admission;
    for (const [uid, containers] of this.allocations)
      if (uid !== admitting?.uid)
        for (const a of containers.values()) for (const id of a.ids.get(resource) ?? []) out.add(id);
    for (const a of admitting?.containers.values() ?? []) for (const id of a.ids.get(resource) ?? []) out.add(id);
    return out;
  }

  /** The resource's healthy devices no container holds. */
  private available(resource: string): string[] {
    const used = this.inUse(resource);
    return this.plugins.healthy(resource).filter((id) => !used.has(id));
  }

  /** Each resource's devices (the node's capacity). */
  capacity(): Record<string, number> {
    return this.plugins.capacity();
  }

  /** Each resource's healthy devices (the node's allocatable). */
  allocatable(): Record<string, number> {
    return this.plugins.allocatable();
  }

  /**
   * Whether an existing Node's extended resources are to be zeroed until their plugins register (upstream
   * ShouldResetExtendedResourceCapacity): the kubelet started without a checkpoint, so what the Node advertises is
   * not known to be there.
   */
  shouldResetExtendedResources(): boolean {
    return this.startedWithoutCheckpoint;
  }

  /** The resources removed after their plugin stayed away for the grace period: the Node drops them. */
  removedResources(): string[] {
    return this.plugins.removedResources();
  }

  /** Each resource's healthy devices with their NUMA nodes (pod-resources GetAllocatableResources). */
  healthyDevices(): ReturnType<DevicePlugins['healthyDevices']> {
    return this.plugins.healthyDevices();
  }

  /** Whether the pod asks for devices it does not hold yet (a pod admitted before a restart holds them). */
  needsDevices(pod: Pod): boolean {
    return !this.allocations.has(pod.metadata.uid!) && asksForDevices(pod, this.plugins.resources());
  }

  /**
   * The start of a pod's admission (upstream's allocate admit handler, run by the topology
   * manager container by container): what its containers take is held apart until it ends.
   * Once every pod source has delivered its pods, the devices of pods no longer active — finished
   * ones the API still shows (a Job's), or gone — are free again (upstream UpdateAllocatedDevices).
   */
  beginAdmission(pod: Pod, active: readonly Pod[], sourcesSeen: boolean): void {
    if (sourcesSeen) {
      const keep = new Set([...active, pod].map((p) => p.metadata.uid!));
      const gone = [...this.allocations.keys()].filter((uid) => !keep.has(uid));
      if (gone.length) {
        this.deps.logger.debug({ podUIDs: gone }, 'Pods to be removed');
        for (const uid of gone) this.allocations.delete(uid);
        this.persist();
      }
    }
    this.admission = { uid: pod.metadata.uid!, containers: new Map(), reuse: new Map() };
  }

  /**
   * The container's topology hints, one list per device resource it asks for (upstream
   * GetTopologyHints; device-topology.ts).
   */
  containerHints(pod: Pod, c: Container, numaNodes: readonly number[]): ResourceHints[] {
    const uid = pod.metadata.uid!;
    return containerDeviceRequests(c, this.plugins.resources()).map((r) =>
      resourceHints(numaNodes, this.plugins.numaOf(r.resource), {
        request: r.count,
        held: this.allocations.get(uid)?.get(c.name)?.ids.get(r.resource) ?? [],
        available: this.available(r.resource),
        reusable: this.admission?.uid === uid ? (this.admission.reuse.get(r.resource) ?? []) : [],
      }),
    );
  }

  /** The pod's topology hints for the pod scope (upstream GetPodTopologyHints). */
  podHints(pod: Pod, numaNodes: readonly number[]): ResourceHints[] {
    const held = this.allocations.get(pod.metadata.uid!);
    return [...podDeviceRequests(pod, this.plugins.resources())].map(([resource, request]) =>
      resourceHints(numaNodes, this.plugins.numaOf(resource), {
        request,
        held: [...new Set([...(held?.values() ?? [])].flatMap((a) => a.ids.get(resource) ?? []))],
        available: this.available(resource),
        reusable: [],
      }),
    );
  }

  /**
   * One container's devices (upstream Allocate): chosen for each resource it asks for, aligned
   * to `affinity` (planDevices), and the plugins' Allocate answers for them. A refusal at once
   * when too few are free; otherwise the promise of the plugins' answers.
   */
  allocateContainer(
    pod: Pod,
    c: Container,
    affinity: readonly number[] | undefined,
  ): AllocationRefusal | undefined | Promise<AllocationRefusal | undefined> {
    const uid = pod.metadata.uid!;
    if (this.allocations.has(uid)) return undefined;
    if (this.admission?.uid !== uid) this.beginAdmission(pod, [], false);
    const admission = this.admission!;
    const initContainer = (pod.spec.initContainers ?? []).find((x) => x.name === c.name);
    const requests = containerDeviceRequests(c, this.plugins.resources());
    if (!requests.length) return undefined;
    const plans = requests.map((r) => ({
      resource: r.resource,
      count: r.count,
      plan: planDevices(
        r.count,
        admission.reuse.get(r.resource) ?? [],
        this.available(r.resource),
        this.plugins.numaOf(r.resource),
        affinity,
      ),
    }));
    for (const { resource, plan } of plans) if ('shortfall' in plan) return refusal({ resource, ...plan.shortfall });
    return (async (): Promise<AllocationRefusal | undefined> => {
      const allocation: Allocation = { ids: new Map() };
      admission.containers.set(c.name, allocation);
      try {
        for (const { resource, count, plan } of plans) {
          if ('shortfall' in plan) continue;
          const preferred = plan.ask ? await this.preferred(resource, plan.ask) : [];
          const ids = finishDevices(plan, count, preferred);
          allocation.ids.set(resource, ids);
          (allocation.byNuma ??= new Map()).set(resource, byNumaNode(ids, this.plugins.numaOf(resource)));
        }
        // A (non-sidecar) init container's devices are the next containers' to reuse; any other's are its own.
        const reusable = !!initContainer && initContainer.restartPolicy !== 'Always';
        for (const [resource, ids] of allocation.ids) {
          const before = admission.reuse.get(resource) ?? [];
          admission.reuse.set(
            resource,
            reusable ? [...new Set([...before, ...ids])] : before.filter((id) => !ids.includes(id)),
          );
        }
        await this.answersFor(allocation);
        return undefined;
      } catch (err) {
        admission.containers.delete(c.name);
        return unexpectedAdmissionError(messageOf(err));
      }
    })();
  }

  /** The end of the pod's admission: what its containers took is held when it was admitted, else let go. */
  endAdmission(pod: Pod, admitted: boolean): void {
    const admission = this.admission;
    if (!admission || admission.uid !== pod.metadata.uid) return;
    this.admission = undefined;
    if (!admitted || !admission.containers.size) return;
    this.allocations.set(admission.uid, admission.containers);
    this.persist();
  }

  /** The plugin's GetPreferredAllocation, when it offers one (else no preference). */
  private async preferred(
    resource: string,
    ask: { available: string[]; mustInclude: string[]; size: number },
  ): Promise<readonly string[]> {
    if (!this.plugins.offers(resource, 'get_preferred_allocation_available')) return [];
    const res = (await this.plugins.call(resource, 'GetPreferredAllocation', {
      container_requests: [
        { available_deviceIDs: ask.available, must_include_deviceIDs: ask.mustInclude, allocation_size: ask.size },
      ],
    })) as { container_responses?: { deviceIDs?: string[] }[] };
    return res.container_responses?.[0]?.deviceIDs ?? [];
  }

  /** The plugins' Allocate answers for one container's devices, asked once per resource. */
  private async answersFor(allocation: Allocation): Promise<ContainerDevices> {
    const merged: Required<ContainerDevices> = { envs: {}, mounts: [], devices: [], annotations: {}, cdi_devices: [] };
    for (const [resource, ids] of allocation.ids) {
      let answer = allocation.answers?.[resource];
      if (!answer) {
        const began = performance.now();
        const res = (await this.plugins.call(resource, 'Allocate', { container_requests: [{ devices_ids: ids }] })) as {
          container_responses?: ContainerDevices[];
        };
        this.deps.metrics?.allocated(resource, (performance.now() - began) / 1000);
        answer = res.container_responses?.[0] ?? {};
        allocation.answers = { ...allocation.answers, [resource]: answer };
      }
      Object.assign(merged.envs, answer.envs);
      Object.assign(merged.annotations, answer.annotations);
      merged.mounts.push(...(answer.mounts ?? []));
      merged.devices.push(...(answer.devices ?? []));
      merged.cdi_devices.push(...(answer.cdi_devices ?? []));
    }
    return merged;
  }

  /**
   * What goes into the container's CRI config for its devices (upstream
   * GetDeviceRunContainerOptions): the answers given at admission (asked again only for an
   * allocation restored without them), after PreStartContainer for each plugin that asks for it.
   */
  async containerDevices(pod: Pod, c: Container): Promise<ContainerDevices[]> {
    const allocation = this.allocations.get(pod.metadata.uid!)?.get(c.name);
    if (!allocation) return [];
    for (const [resource, ids] of allocation.ids) {
      if (this.plugins.offers(resource, 'pre_start_required'))
        await this.plugins.call(resource, 'PreStartContainer', { devices_ids: ids });
    }
    const hadAnswers = allocation.ids.size === Object.keys(allocation.answers ?? {}).length;
    allocation.pending ??= this.answersFor(allocation).catch((err: unknown) => {
      allocation.pending = undefined;
      throw err;
    });
    const merged = await allocation.pending;
    if (!hadAnswers) this.persist();
    return [merged];
  }

  /** The devices a container holds, by resource (pod-resources, allocatedResourcesStatus). */
  devicesOf(uid: string, container: string): { resource: string; ids: string[]; health: DeviceHealth[] }[] {
    const a = this.allocations.get(uid)?.get(container);
    return [...(a?.ids ?? [])].map(([resource, ids]) => ({
      resource,
      ids,
      health: ids.map((id) => this.plugins.healthOf(resource, id)),
    }));
  }

  /**
   * A container's devices as pod-resources lists them: per resource and NUMA node (upstream's
   * DevicesPerNUMA; `numaNode` absent for those without one).
   */
  deviceGroupsOf(uid: string, container: string): { resource: string; ids: string[]; numaNode?: number }[] {
    const a = this.allocations.get(uid)?.get(container);
    return [...(a?.ids ?? [])].flatMap(([resource, ids]) =>
      Object.entries(a?.byNuma?.get(resource) ?? { '-1': ids }).map(([node, grouped]) => ({
        resource,
        ids: grouped,
        ...(node === '-1' ? {} : { numaNode: Number(node) }),
      })),
    );
  }

  /** The pods that hold devices (a health change reaches their statuses). */
  podsWithDevices(): string[] {
    return [...this.allocations.keys()];
  }

  /** Frees the devices of a pod that is gone. */
  release(uid: string): void {
    if (this.allocations.delete(uid)) this.persist();
  }
}

/** Upstream's refusal of a container asking for more devices than are free. */
const refusal = (s: { resource: string; requested: number; available: number }): AllocationRefusal =>
  unexpectedAdmissionError(
    `requested number of devices unavailable for ${s.resource}. Requested: ${s.requested}, Available: ${s.available}`,
  );
