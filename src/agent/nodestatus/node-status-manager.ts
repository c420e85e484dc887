/**
 * Node registration and status (upstream kubelet_node_status.go):
 * 1. register: POST the initial Node; on 409 AlreadyExists GET it and reconcile the labels the
 *    kubelet owns and the controller-managed attach-detach annotation (merge patch) and its extended resources;
 *    retry with backoff until done;
 * 2. every nodeStatusUpdateFrequency tell the runtime the Node's pod CIDRs (runtime/pod-cidr.ts), compute
 *    the status and PATCH it to the status subresource (strategic merge) only when it changed apart from
 *    heartbeats, or a resource others put in the capacity is not yet allocatable, or the pod CIDRs changed, or
 *    nodeStatusReportFrequency (with upstream's jitter: report-schedule.ts) has passed since the last report —
 *    as upstream with node leases;
 * 3. events, as upstream's: Starting (and CgroupV1 on a v1 host) once; NodeReady / NodeNotReady, the pressure
 *    conditions' and NodeSchedulable / NodeNotSchedulable on transitions; Rebooted on a new boot ID;
 * 4. at start, until the Node is reported Ready or NODE_READY_GRACE_MS have passed, the runtime's readiness is
 *    read every FAST_STATUS_PERIOD_MS and the status reported as soon as it is ready (upstream's
 *    fastStatusUpdateOnce): a node whose CNI configuration arrives after the kubelet started (kubeadm join,
 *    then the network's DaemonSet) turns Ready at once, not at the next status pass.
 */
import type { Clock } from '../../lib/clock.js';
import { periodically } from '../../lib/periodically.js';
import { sleep } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { twoWayMergePatch } from '../status/status-patch.js';
import { apiError, type KubeClient } from '../../lib/kube-client.js';
import { deepEqual } from '../../lib/deep-equal.js';
import { messageOf } from '../../lib/errors.js';
import { nodeRef, type EventSink } from '../events/recorder.js';
import type { MachineInfo } from './machine-info.js';
import type { PodCidr } from '../runtime/pod-cidr.js';
import { sameResources, withAdvertisedResources, zeroedExtendedResources } from './advertised-resources.js';
import { pressureConditionEvents } from './condition-events.js';
import { delayAfterReport, statusReportDue } from './report-schedule.js';
import {
  existingNodeMetadataPatch,
  initialNode,
  nodeLabels,
  nodeStatus,
  withoutHeartbeats,
  type NodeCondition,
  type NodeSettings,
  type NodeStatusInput,
} from './node-object.js';

/** A Node as this manager reads it back (the rest is written, never read). */
interface NodeObject {
  metadata: { uid?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [k: string]: unknown;
}

/** What the manager needs. */
export interface NodeStatusManagerDeps {
  client: KubeClient;
  settings: NodeSettings;
  registerNode: boolean;
  /** Whether an existing Node's extended resources are zeroed at registration (no device checkpoint at start). */
  resetExtendedResources?: () => boolean;
  machine: MachineInfo;
  /** The runtime's current facts for the status. */
  runtime: () => Promise<
    Pick<
      NodeStatusInput,
      'runtimeVersion' | 'runtimeErrors' | 'runtimeHandlers' | 'images' | 'pressure' | 'volumesInUse' | 'devices'
    >
  >;
  events: EventSink;
  clock: Clock;
  logger: Logger;
  updateFrequencyMs: number;
  reportFrequencyMs: number;
  /** The node startup latency gauges (metrics/node-startup-metrics.ts). */
  startup?: { attemptRegister(): void; registeredNew(): void; nodeReady(): void };
  /** The Node's status as the apiserver has it now (the node informer's), when known. */
  apiStatus?: () => Record<string, unknown> | undefined;
  /** The jitter's source (tests pin it). */
  random?: () => number;
  /** Whether the Node is cordoned (spec.unschedulable, the node informer's), when known. */
  unschedulable?: () => boolean | undefined;
  /** The Node's spec.podCIDRs (the node informer's), when known, and the runtime's record of them. */
  podCIDRs?: () => readonly string[] | undefined;
  podCidr?: Pick<PodCidr, 'update'>;
  /** The host's cgroup version: on v1 the Node gets upstream's CgroupV1 warning at start. */
  cgroupVersion?: 1 | 2;
  /**
   * The node's readiness as the status computes it (the Ready condition's errors) and how to read it from the
   * runtime again: the fast status update at start polls them.
   */
  readiness?: { refresh: () => Promise<void>; errors: () => string[] };
}

/** How long after the start the fast status update waits for the node to be ready (upstream nodeReadyGracePeriod). */
export const NODE_READY_GRACE_MS = 120_000;

/** How often the fast status update reads the runtime's readiness (upstream's 100 ms). */
export const FAST_STATUS_PERIOD_MS = 100;

/** Upstream's cm.CgroupV1MaintenanceModeWarning. */
export const CGROUP_V1_WARNING = 'cgroup v1 support is in maintenance mode, please migrate to cgroup v2';

/** Registers the node and keeps its status current. */
export class NodeStatusManager {
  private uid: string | undefined;
  private last: Record<string, unknown> | undefined;
  /** The last report on the monotonic clock; undefined before the first. */
  private lastReportMs: number | undefined;
  /** Added to the next report interval (upstream delayAfterNodeStatusChange). */
  private delayMs = 0;

  constructor(private readonly deps: NodeStatusManagerDeps) {}

  /** The Node's UID once registered (for the Lease's owner reference). */
  nodeUid(): string | undefined {
    return this.uid;
  }

  private async register(signal: AbortSignal): Promise<void> {
    const { client, settings: s } = this.deps;
    let delay = 100;
    while (!signal.aborted) {
      try {
        const node = initialNode(s, this.deps.machine);
        this.deps.logger.info({ node: s.nodeName }, 'Attempting to register node');
        this.deps.startup?.attemptRegister();
        const r = await client.request<NodeObject>({ method: 'POST', path: '/api/v1/nodes', body: node, signal });
        if (r.status === 201) {
          this.deps.startup?.registeredNew();
          // No event: RegisteredNode is the node lifecycle controller's ("Registered Node … in Controller").
          this.deps.logger.info({ node: s.nodeName }, 'Successfully registered node');
          this.uid = r.body!.metadata.uid;
          return;
        }
        if (r.status === 409) {
          const cur = await client.request<NodeObject>({ path: `/api/v1/nodes/${s.nodeName}`, signal });
          if (cur.status === 200 && cur.body) {
            const metadata = existingNodeMetadataPatch(
              nodeLabels({ ...s, nodeLabels: {} }, this.deps.machine),
              cur.body.metadata,
            );
            if (metadata) {
              const patched = await client.request({
                method: 'PATCH',
                path: `/api/v1/nodes/${s.nodeName}`,
                contentType: 'application/merge-patch+json',
                body: { metadata },
                signal,
              });
              if (patched.status !== 200) throw apiError('updating the registered node', patched);
            }
            await this.zeroExtendedResources(cur.body, signal);
            // Upstream's words for both ways: the Node was created, or the one there was taken over.
            this.deps.logger.info({ node: s.nodeName }, 'Successfully registered node');
            this.uid = cur.body.metadata.uid;
            return;
          }
        }
        throw apiError('registering node', r);
      } catch (err) {
        if (signal.aborted) return;
        // Upstream's line, which an operator looks for when the apiserver cannot be reached.
        this.deps.logger.error({ err: messageOf(err), node: s.nodeName }, 'Unable to register node with API server');
        await sleep(delay, signal, this.deps.clock);
        delay = Math.min(delay * 2, 7000);
      }
    }
  }

  /** The Node's status as the apiserver last answered it: the base of the next two-way patch. */
  private apiStatus: Record<string, unknown> | undefined;

  /** Whether the Node was cordoned when last looked at (upstream's lastNodeUnschedulable, false at start). */
  private lastUnschedulable = false;
  /** The update running now: the periodic and the fast update take turns (upstream's syncNodeStatusMux). */
  private updating: Promise<unknown> = Promise.resolve();

  /** Computes the status and PATCHes it when due; returns whether it was sent. One at a time. */
  updateOnce(signal?: AbortSignal): Promise<boolean> {
    const run = this.updating.then(() => this.update(signal));
    this.updating = run.catch(() => undefined);
    return run;
  }

  /** Whether the last status reported said Ready. */
  private reportedReady(): boolean {
    return (this.last?.conditions as NodeCondition[] | undefined)?.find((c) => c.type === 'Ready')?.status === 'True';
  }

  /**
   * Upstream's fastStatusUpdateOnce: every FAST_STATUS_PERIOD_MS, until a status that says Ready was reported or
   * NODE_READY_GRACE_MS passed since `startedMs`, the runtime's readiness is read again; once nothing holds the
   * node back the status goes out at once, and the fast update is over.
   */
  private async untilReady(
    readiness: NonNullable<NodeStatusManagerDeps['readiness']>,
    startedMs: number,
    signal: AbortSignal,
  ) {
    const { clock, logger } = this.deps;
    while (!signal.aborted && !this.reportedReady()) {
      if (clock.monotonic() - startedMs >= NODE_READY_GRACE_MS) {
        logger.error('Node not becoming ready in time after startup');
        return;
      }
      await sleep(FAST_STATUS_PERIOD_MS, signal, clock);
      if (signal.aborted) return;
      await readiness.refresh().catch(() => undefined);
      if (readiness.errors().length > 0 || this.lastReportMs === undefined) continue;
      // One report, as upstream's: should it fail, the status passes retry it.
      logger.info('Fast updating node status as it just became ready');
      await this.updateOnce(signal).catch((err: unknown) => {
        if (!signal.aborted) logger.error({ err: messageOf(err) }, 'Error updating node status, will retry');
      });
      return;
    }
  }

  /**
   * Upstream's reconcileExtendedResource: an existing Node's extended resources zeroed when the kubelet started
   * without a device checkpoint (a new root dir, a recreated node), so that no pod is scheduled on devices that may
   * be gone; their plugins set them again as they register.
   */
  private async zeroExtendedResources(node: NodeObject, signal: AbortSignal): Promise<void> {
    if (!this.deps.resetExtendedResources?.()) return;
    const zeroed = zeroedExtendedResources((node.status ?? {}) as { capacity?: unknown });
    if (!zeroed) return;
    for (const name of Object.keys(zeroed.capacity))
      this.deps.logger.info(
        { resourceName: name, node: this.deps.settings.nodeName },
        'Zero out resource capacity in existing node',
      );
    const r = await this.deps.client.request({
      method: 'PATCH',
      path: `/api/v1/nodes/${this.deps.settings.nodeName}/status`,
      contentType: 'application/strategic-merge-patch+json',
      body: { status: zeroed },
      signal,
    });
    if (r.status !== 200) throw apiError('zeroing extended resources', r);
    this.apiStatus = undefined;
  }

  private async update(signal?: AbortSignal): Promise<boolean> {
    const { client, settings: s } = this.deps;
    // Upstream's recordNodeSchedulableEvent: kubectl cordon and uncordon show on the Node.
    const unschedulable = this.deps.unschedulable?.();
    if (unschedulable !== undefined && unschedulable !== this.lastUnschedulable) {
      const reason = unschedulable ? 'NodeNotSchedulable' : 'NodeSchedulable';
      this.deps.events.record(nodeRef(s.nodeName), 'Normal', reason, `Node ${s.nodeName} status is now: ${reason}`);
      this.lastUnschedulable = unschedulable;
    }
    // Upstream's updateNode: the runtime is told the Node's pod CIDRs first, and a change is reported at once.
    const cidrs = this.deps.podCIDRs?.();
    const podCidrChanged = cidrs?.length ? ((await this.deps.podCidr?.update(cidrs.join(','))) ?? false) : false;
    const now = this.deps.clock.now();
    const rt = await this.deps.runtime();
    const next = nodeStatus(s, {
      machine: this.deps.machine,
      ...rt,
      previous: this.last?.conditions as NodeCondition[] | undefined,
      nowMs: now,
    });
    // As upstream PatchNodeStatus: a two-way patch from the Node's status in the apiserver (the
    // node informer's, else the last answer), whose conditions set by others (e.g.
    // NetworkUnavailable) and resources others advertise are kept.
    const live = this.deps.apiStatus?.();
    if (!this.apiStatus && !live) {
      const got = await client.request<{ status?: Record<string, unknown> }>({
        path: `/api/v1/nodes/${s.nodeName}`,
        signal,
      });
      this.apiStatus = got.status === 200 ? (got.body?.status ?? {}) : {};
    }
    const base = live ?? this.apiStatus ?? {};
    const resources = withAdvertisedResources(base, next, rt.devices?.removed);
    const advertised =
      !sameResources(base.capacity, resources.capacity) || !sameResources(base.allocatable, resources.allocatable);
    const changed =
      !this.last || !deepEqual(withoutHeartbeats(this.last), withoutHeartbeats(next)) || advertised || podCidrChanged;
    const frequencyMs = this.deps.reportFrequencyMs;
    // The status's times are wall times (`now`); its report schedule runs on the monotonic clock.
    const monotonicMs = this.deps.clock.monotonic();
    const due = statusReportDue({
      changed,
      nowMs: monotonicMs,
      lastReportMs: this.lastReportMs,
      frequencyMs,
      delayMs: this.delayMs,
    });
    if (!due) return false;
    const causedByChange = changed || this.lastReportMs === undefined;
    const mine = new Set((next.conditions as NodeCondition[]).map((c) => c.type));
    const others = ((base.conditions ?? []) as NodeCondition[]).filter((c) => !mine.has(c.type));
    const desired: Record<string, unknown> = {
      ...base,
      ...next,
      ...resources,
      conditions: [...others, ...(next.conditions as NodeCondition[])],
    };
    // With an external cloud provider, addresses the cloud controller manager set win (upstream's setter returns
    // early).
    if (s.externalCloudProvider && Array.isArray(base.addresses) && base.addresses.length)
      desired.addresses = base.addresses;
    const patch = twoWayMergePatch(base, desired);
    const r = await client.request<{ status?: Record<string, unknown> }>({
      method: 'PATCH',
      path: `/api/v1/nodes/${s.nodeName}/status`,
      contentType: 'application/strategic-merge-patch+json',
      body: { status: patch },
      signal,
    });
    if (r.status !== 200) {
      this.apiStatus = undefined;
      throw apiError('patching node status', r);
    }
    this.apiStatus = r.body?.status ?? desired;
    const wasReady = (this.last?.conditions as NodeCondition[] | undefined)?.find((c) => c.type === 'Ready')?.status;
    const ready = (next.conditions as NodeCondition[]).find((c) => c.type === 'Ready')!;
    if (ready.status === 'True') this.deps.startup?.nodeReady();
    // As upstream's machine info setter: a boot ID other than the Node's means the machine rebooted.
    const bootBefore = (base.nodeInfo as { bootID?: string } | undefined)?.bootID;
    const bootNow = (next.nodeInfo as { bootID?: string } | undefined)?.bootID;
    if (bootBefore && bootNow && bootBefore !== bootNow)
      this.deps.events.record(
        nodeRef(s.nodeName),
        'Warning',
        'Rebooted',
        `Node ${s.nodeName} has been rebooted, boot id: ${bootNow}`,
      );
    for (const reason of pressureConditionEvents(
      base.conditions as NodeCondition[] | undefined,
      next.conditions as NodeCondition[],
    ))
      this.deps.events.record(nodeRef(s.nodeName), 'Normal', reason, `Node ${s.nodeName} status is now: ${reason}`);
    if (ready.status !== wasReady)
      this.deps.events.record(
        nodeRef(s.nodeName),
        'Normal',
        ready.status === 'True' ? 'NodeReady' : 'NodeNotReady',
        `Node ${s.nodeName} status is now: ${ready.status === 'True' ? 'NodeReady' : 'NodeNotReady'}`,
      );
    this.last = next;
    this.lastReportMs = monotonicMs;
    this.delayMs = delayAfterReport(causedByChange, frequencyMs, this.deps.random ?? Math.random);
    return true;
  }

  /** Starts registration and the status loop. */
  start({ signal }: { signal: AbortSignal }): void {
    const startedMs = this.deps.clock.monotonic();
    void (async () => {
      const node = nodeRef(this.deps.settings.nodeName);
      this.deps.events.record(node, 'Normal', 'Starting', 'Starting kubelet.');
      if (this.deps.cgroupVersion === 1) this.deps.events.record(node, 'Warning', 'CgroupV1', CGROUP_V1_WARNING);
      if (this.deps.registerNode) await this.register(signal);
      periodically(() => this.updateOnce(signal), {
        periodMs: this.deps.updateFrequencyMs,
        signal,
        clock: this.deps.clock,
        immediately: true,
        onError: (err) => {
          if (!signal.aborted)
            this.deps.logger.error({ err: messageOf(err) }, 'Error updating node status, will retry');
        },
      });
      if (this.deps.readiness) await this.untilReady(this.deps.readiness, startedMs, signal);
    })();
  }
}
