/**
 * Dynamic Resource Allocation on the node (upstream pkg/kubelet/cm/dra, resource.k8s.io/v1):
 * DRA drivers register through the plugin watcher (type `DRAPlugin`, version `v1.DRAPlugin`, else
 * `v1beta1.DRAPlugin`: the same messages under the v1beta1 package);
 * before a pod's containers start, each ResourceClaim it uses — allocated by the scheduler and
 * reserved for the pod — is prepared by its drivers (NodePrepareResources), and the CDI device IDs
 * they answer go to the containers that use the claim (CRI CDI devices); when the last pod using a
 * claim is gone it is unprepared (NodeUnprepareResources). What is prepared is kept in upstream's
 * `dra_manager_state` checkpoint, so a restarted kubelet knows it.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Container, Pod } from '../../api/types.js';
import type { KubeClient } from '../../lib/kube-client.js';
import type { Logger } from '../../lib/logger.js';
import { realClock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import { writeFileAtomic } from '../../lib/fs-util.js';
import { serviceMethods } from '../../cri/proto.js';
import { unaryChannel, type UnaryChannel } from '../../cri/grpc-channel.js';
import { GrpcCallError } from '../../cri/grpc-status.js';
import { goCodeName } from '../../cri/unary-caller.js';
import type { DraMetrics } from '../metrics/dra-metrics.js';
import type { PluginHandler } from '../pluginmanager/plugin-watcher.js';
import { crc32 } from './crc32.js';
import { cdiAnnotation } from './cdi-annotations.js';
import { DraHealth, type DeviceHealthStatus } from './dra-health.js';
import {
  dynamicResourceOf,
  preparedDevices,
  usesDevice,
  type AllocationResult,
  type ClaimInfo,
  type DriverDevice,
  type DynamicResource,
} from './claim-info.js';
import { aggregateMessage } from '../../lib/aggregate-message.js';

const PROTO = 'dra/v1/api.proto';
const SERVICE = 'k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin';
/** The plugin API versions the kubelet speaks, preferred first (v1beta1: the same messages under its own package). */
const SUPPORTED = ['v1.DRAPlugin', 'v1beta1.DRAPlugin'];
const CALL_TIMEOUT_MS = 45_000;
export const DRA_CHECKPOINT = 'dra_manager_state';

/** The pod's key for the claim of its DRA-backed extended resources (not a name a pod can give). */
const EXTENDED_RESOURCES_REF = '<extended resources>';

/** The scheduler's claim for the pod's extended resources backed by DRA (pod.status.extendedResourceClaimStatus). */
function extendedClaimOf(pod: Pod):
  | {
      resourceClaimName: string;
      requestMappings: { containerName: string; resourceName: string; requestName: string }[];
    }
  | undefined {
  const status = (pod.status as { extendedResourceClaimStatus?: Record<string, unknown> } | undefined)
    ?.extendedResourceClaimStatus;
  if (!status || typeof status.resourceClaimName !== 'string' || !status.resourceClaimName) return undefined;
  const mappings = Array.isArray(status.requestMappings) ? status.requestMappings : [];
  return {
    resourceClaimName: status.resourceClaimName,
    requestMappings: mappings as { containerName: string; resourceName: string; requestName: string }[],
  };
}

/** A ResourceClaim as the apiserver returns it (the fields the node reads). */
interface ResourceClaim {
  metadata: { name: string; namespace: string; uid: string };
  status?: {
    allocation?: { devices?: { results?: AllocationResult[] } };
    reservedFor?: { resource?: string; name?: string; uid?: string }[];
  };
}

export interface DraManagerDeps {
  rootDir: string;
  /** The plugins_registry directory drivers' sockets are named relative to (absolute endpoints as given). */
  client?: KubeClient;
  /** Upstream's DRA histograms (metrics/dra-metrics.ts). */
  metrics?: DraMetrics;
  /** The pods holding a device whose health changed (their allocatedResourcesStatus). */
  onHealthChange?: (podUids: string[]) => void;
  /** A monotonic clock in ms (a Clock's `monotonic`) for the devices' health timeouts. */
  now?: () => number;
  logger: Logger;
}

/** A container's resource status as the pod status carries it (allocatedResourcesStatus). */
export interface ClaimResourceStatus {
  name: string;
  resources: { resourceID: string; health: DeviceHealthStatus; message?: string }[];
}

export class DraManager {
  private readonly drivers = new Map<string, { channel: UnaryChannel; version: string }>();
  private readonly claims = new Map<string, ClaimInfo>();
  /** The claims this run prepared (by UID); those only the checkpoint knows are not, until prepared again. */
  private readonly prepared = new Set<string>();
  private readonly methods = serviceMethods(PROTO, SERVICE);
  private writes: Promise<void> = Promise.resolve();
  /** The unprepare running, which the next one waits for. */
  private unpreparing: Promise<void> = Promise.resolve();

  /** The drivers' device health (dra-health.ts). */
  private readonly health: DraHealth;

  constructor(private readonly deps: DraManagerDeps) {
    this.health = new DraHealth({
      logger: deps.logger,
      now: deps.now ?? realClock.monotonic,
      onChange: (driver) => deps.onHealthChange?.(this.podsUsing(driver)),
    });
  }

  /** The plugin watcher's handler for `DRAPlugin`. */
  readonly handler: PluginHandler = {
    validate: (name, _endpoint, versions) => {
      if (!SUPPORTED.some((v) => versions.includes(v)))
        throw new Error(
          `none of the versions supported by the plugin ${name} (${versions.join(', ')}) is supported: ${SUPPORTED.join(', ')}`,
        );
    },
    register: async (name, endpoint, versions) => {
      this.drivers.get(name)?.channel.close();
      // grpc-js's default limit on what a driver answers.
      const channel = unaryChannel(`unix://${endpoint}`, { maxReceiveBytes: 4 * 1024 * 1024 });
      const version = SUPPORTED.find((v) => versions.includes(v))!;
      this.drivers.set(name, { channel, version });
      this.health.watch(name, endpoint);
      this.deps.logger.info({ driver: name, endpoint, version }, 'DRA driver registered');
    },
    deregister: async (name) => {
      this.drivers.get(name)?.channel.close();
      this.drivers.delete(name);
      this.health.stop(name);
      this.deps.onHealthChange?.(this.podsUsing(name));
    },
  };

  /** The pods holding a claim the driver prepared. */
  private podsUsing(driver: string): string[] {
    const uids = new Set<string>();
    for (const info of this.claims.values())
      if (info.DriverState[driver]) for (const uid of Object.keys(info.PodUIDs)) uids.add(uid);
    return [...uids];
  }

  /**
   * The health of the devices each of the container's claims (and request) holds, as upstream's
   * allocatedResourcesStatus names them: `claim:<claim>[/<request>]`, each device by
   * `<driver>/<pool>/<device>` (ResourceHealthStatus).
   */
  resourceStatuses(pod: Pod, c: Container): ClaimResourceStatus[] {
    const names = this.claimNames(pod);
    const refs = ((c.resources as { claims?: { name: string; request?: string }[] } | undefined)?.claims ?? []) as {
      name: string;
      request?: string;
    }[];
    return refs.flatMap((ref) => {
      const claimName = names.get(ref.name);
      const info = this.preparedClaim(pod, claimName);
      if (!info) return [];
      const resources = Object.entries(info.DriverState).flatMap(([driver, state]) =>
        state.Devices.filter((d) => usesDevice(d, ref.request)).map((d) => ({
          resourceID: `${driver}/${d.PoolName}/${d.DeviceName}`,
          ...this.health.healthOf(driver, d.PoolName, d.DeviceName),
        })),
      );
      return resources.length ? [{ name: `claim:${ref.name}${ref.request ? `/${ref.request}` : ''}`, resources }] : [];
    });
  }

  /** Stops following the drivers' health (the kubelet stops). */
  close(): void {
    this.health.close();
  }

  /** Reads the checkpoint (ours or a Go kubelet's). */
  async load(): Promise<void> {
    try {
      const file = JSON.parse(await readFile(join(this.deps.rootDir, DRA_CHECKPOINT), 'utf8')) as { Data?: string };
      const data = JSON.parse(file.Data ?? '{}') as { ClaimInfoStateList?: ClaimInfo[] };
      for (const c of data.ClaimInfoStateList ?? []) this.claims.set(c.ClaimUID, c);
    } catch {
      // None yet.
    }
  }

  private persist(): Promise<void> {
    const data = JSON.stringify({
      kind: 'DRACheckpoint',
      apiVersion: 'checkpoint.dra.kubelet.k8s.io/v1',
      ClaimInfoStateList: [...this.claims.values()],
    });
    this.writes = this.writes
      .then(() =>
        writeFileAtomic(
          join(this.deps.rootDir, DRA_CHECKPOINT),
          JSON.stringify({ Data: data, Checksum: crc32(Buffer.from(data, 'utf8')) }),
          0o600,
        ),
      )
      .catch((err: unknown) => this.deps.logger.warn({ err: messageOf(err) }, 'failed to write the DRA checkpoint'));
    return this.writes;
  }

  private call(driver: string, method: string, req: object): Promise<unknown> {
    const registered = this.drivers.get(driver);
    if (!registered) return Promise.reject(new Error(`DRA driver ${driver} is not registered`));
    const m = this.methods[method];
    const path = registered.version === 'v1.DRAPlugin' ? m.path : m.path.replace('.dra.v1.', '.dra.v1beta1.');
    const began = performance.now();
    const observe = (err?: unknown) =>
      this.deps.metrics?.call(driver, path, goCodeName(err), (performance.now() - began) / 1000);
    return registered.channel.call({ ...m, path }, req, CALL_TIMEOUT_MS).then(
      (answer) => {
        observe();
        return answer;
      },
      (err: unknown) => {
        observe(err);
        throw new Error(`${driver}: ${err instanceof GrpcCallError && err.details ? err.details : messageOf(err)}`);
      },
    );
  }

  /** The claim name of each of the pod's resource claims (a template's from the pod's resourceClaimStatuses). */
  private claimNames(pod: Pod): Map<string, string | undefined> {
    const statuses = ((pod.status as { resourceClaimStatuses?: { name: string; resourceClaimName?: string }[] })
      ?.resourceClaimStatuses ?? []) as { name: string; resourceClaimName?: string }[];
    const refs = ((pod.spec as { resourceClaims?: { name: string; resourceClaimName?: string }[] }).resourceClaims ??
      []) as { name: string; resourceClaimName?: string }[];
    const names = new Map(
      refs.map((r) => [r.name, r.resourceClaimName ?? statuses.find((s) => s.name === r.name)?.resourceClaimName]),
    );
    // The claim the scheduler made for the pod's DRA-backed extended resources (DRAExtendedResource).
    const extended = extendedClaimOf(pod);
    if (extended) names.set(EXTENDED_RESOURCES_REF, extended.resourceClaimName);
    return names;
  }

  /**
   * The claims (by name) and requests a container uses: those its `resources.claims` name, and
   * the requests the scheduler mapped its DRA-backed extended resources to.
   */
  private usesOf(pod: Pod, c: Container): { claimName: string | undefined; request?: string }[] {
    const names = this.claimNames(pod);
    const uses = (c.resources as { claims?: { name: string; request?: string }[] } | undefined)?.claims ?? [];
    const extended = extendedClaimOf(pod);
    return [
      ...uses.map((use) => ({ claimName: names.get(use.name), request: use.request })),
      ...(extended?.requestMappings ?? [])
        .filter((m) => m.containerName === c.name)
        .map((m) => ({ claimName: extended!.resourceClaimName, request: m.requestName })),
    ];
  }

  /**
   * Prepares every claim of the pod before its containers start; an error says why not yet (a
   * claim not created, not allocated, not reserved for the pod, a driver's failure).
   */
  async prepare(pod: Pod): Promise<void> {
    const names = this.claimNames(pod);
    if (!names.size) return;
    // Timed when it does something (a claim prepared, a pod added to one) or fails, not each sync of a prepared pod.
    const began = performance.now();
    const seconds = () => (performance.now() - began) / 1000;
    let changed: boolean;
    try {
      changed = await this.prepareClaims(pod, names);
    } catch (err) {
      this.deps.metrics?.operation('PrepareResources', true, seconds());
      throw err;
    }
    if (changed) this.deps.metrics?.operation('PrepareResources', false, seconds());
  }

  /** Prepares the claims the pod does not hold yet; whether anything changed. */
  private async prepareClaims(pod: Pod, names: Map<string, string | undefined>): Promise<boolean> {
    const ns = pod.metadata.namespace ?? 'default';
    const uid = pod.metadata.uid!;
    let changed = false;
    for (const [ref, name] of names) {
      if (!name) throw new Error(`waiting for the ResourceClaim of "${ref}" to be created`);
      if (!this.deps.client) throw new Error('resource claims need an apiserver');
      const got = await this.deps.client.request<ResourceClaim>({
        path: `/apis/resource.k8s.io/v1/namespaces/${encodeURIComponent(ns)}/resourceclaims/${encodeURIComponent(name)}`,
      });
      if (got.status !== 200 || !got.body) throw new Error(`failed to fetch ResourceClaim ${name}: HTTP ${got.status}`);
      const claim = got.body;
      if (!claim.status?.allocation) throw new Error(`ResourceClaim ${name} is not allocated`);
      if (!(claim.status.reservedFor ?? []).some((r) => r.uid === uid))
        throw new Error(`pod ${pod.metadata.name} (${uid}) is not allowed to use ResourceClaim ${name}`);
      const known = this.claims.get(claim.metadata.uid);
      if (known && this.prepared.has(claim.metadata.uid)) {
        if (!known.PodUIDs[uid]) {
          known.PodUIDs[uid] = {};
          changed = true;
        }
        continue;
      }
      // A claim known from the checkpoint is prepared again once after a restart, as upstream's
      // (its drivers' preparation is idempotent; their answer may have changed).
      const results = claim.status.allocation.devices?.results ?? [];
      const info: ClaimInfo = {
        ClaimUID: claim.metadata.uid,
        ClaimName: name,
        Namespace: ns,
        PodUIDs: { ...known?.PodUIDs, [uid]: {} },
        DriverState: {},
      };
      for (const driver of [...new Set(results.map((r) => r.driver))]) {
        const res = (await this.call(driver, 'NodePrepareResources', {
          claims: [{ namespace: ns, uid: claim.metadata.uid, name }],
        })) as {
          claims?: Record<string, { devices?: DriverDevice[]; error?: string }>;
        };
        const answer = res.claims?.[claim.metadata.uid];
        if (!answer) throw new Error(`NodePrepareResources skipped 1 ResourceClaim`);
        if (answer.error) throw new Error(`NodePrepareResources failed for ResourceClaim ${name}: ${answer.error}`);
        const devices = preparedDevices(driver, answer.devices ?? [], results);
        try {
          cdiAnnotation(
            driver,
            claim.metadata.uid,
            devices.flatMap((d) => d.CDIDeviceIDs),
          );
        } catch (err) {
          throw new Error(`failed to add CDIDevices to claimInfo ${ns}/${name}: ${messageOf(err)}`, { cause: err });
        }
        info.DriverState[driver] = { Devices: devices };
      }
      this.claims.set(claim.metadata.uid, info);
      this.prepared.add(claim.metadata.uid);
      changed = true;
    }
    if (changed) await this.persist();
    return changed;
  }

  /** The CDI device IDs of the claims (and requests) the container uses. */
  cdiDevices(pod: Pod, c: Container): string[] {
    const ids: string[] = [];
    for (const use of this.usesOf(pod, c)) {
      const info = this.preparedClaim(pod, use.claimName);
      for (const state of Object.values(info?.DriverState ?? {}))
        for (const device of state.Devices) if (usesDevice(device, use.request)) ids.push(...device.CDIDeviceIDs);
    }
    return [...new Set(ids)];
  }

  /** The CDI annotations of the claims the container uses, one per claim and driver (cdi-annotations.ts). */
  cdiAnnotations(pod: Pod, c: Container): Record<string, string> {
    const out: Record<string, string> = {};
    for (const info of this.claimsOf(pod, c))
      for (const [driver, state] of Object.entries(info.DriverState)) {
        // Checked when the claim was prepared; one only a checkpoint knew gets none if it fails.
        const a = (() => {
          try {
            return cdiAnnotation(
              driver,
              info.ClaimUID,
              state.Devices.flatMap((d) => d.CDIDeviceIDs),
            );
          } catch {
            return undefined;
          }
        })();
        if (a) out[a.key] = a.value;
      }
    return out;
  }

  /** The prepared claim named `claimName` in the pod's namespace. */
  private preparedClaim(pod: Pod, claimName: string | undefined): ClaimInfo | undefined {
    return [...this.claims.values()].find((x) => x.ClaimName === claimName && x.Namespace === pod.metadata.namespace);
  }

  /** The prepared claims the container uses. */
  private claimsOf(pod: Pod, c: Container): ClaimInfo[] {
    const wanted = new Set(this.usesOf(pod, c).map((use) => use.claimName));
    return [...this.claims.values()].filter((x) => wanted.has(x.ClaimName) && x.Namespace === pod.metadata.namespace);
  }

  /**
   * The claims the container uses, with every device their drivers prepared (the pod-resources
   * API's `dynamic_resources`, upstream GetDynamicResources).
   */
  dynamicResources(pod: Pod, c: Container): DynamicResource[] {
    return this.claimsOf(pod, c).map(dynamicResourceOf);
  }

  /** The claims in use on the node by driver, and `<any>`: all of them (dra_resource_claims_in_use). */
  claimsInUse(): Map<string, number> {
    const counts = new Map<string, number>([['<any>', 0]]);
    for (const info of this.claims.values()) {
      if (!Object.keys(info.PodUIDs).length) continue;
      counts.set('<any>', counts.get('<any>')! + 1);
      for (const driver of Object.keys(info.DriverState)) counts.set(driver, (counts.get(driver) ?? 0) + 1);
    }
    return counts;
  }

  /**
   * One pass of upstream's reconcile loop (draManagerReconcilePeriod): the claims of every pod
   * that is no longer active — deleted while the kubelet was down, say, known only from the
   * checkpoint, or one whose unprepare failed — are let go as if the pod had just gone.
   */
  async reconcile(activeUids: ReadonlySet<string>): Promise<void> {
    const inactive = new Set<string>();
    for (const info of this.claims.values())
      for (const uid of Object.keys(info.PodUIDs)) if (!activeUids.has(uid)) inactive.add(uid);
    for (const uid of inactive)
      await this.unprepare(uid).catch((err: unknown) =>
        this.deps.logger.warn({ podUID: uid, err: messageOf(err) }, 'Unprepare dynamic resources failed; will retry'),
      );
  }

  /**
   * The pod's containers have stopped (upstream UnprepareDynamicResources): a claim no other pod
   * uses is unprepared by its drivers, then forgotten. A claim a driver fails to unprepare stays,
   * the pod's included, and the call rejects with upstream's message: the caller tries again.
   */
  unprepare(uid: string): Promise<void> {
    // One at a time (upstream holds its claim cache's lock): the terminating pod's worker and the reconcile loop
    // may both let the same pod go, and a claim must be unprepared once.
    const run = this.unpreparing.then(() => this.unprepareNow(uid));
    this.unpreparing = run.catch(() => undefined);
    return run;
  }

  private async unprepareNow(uid: string): Promise<void> {
    const began = performance.now();
    let changed = false;
    const failures: string[] = [];
    for (const [claimUid, info] of this.claims) {
      if (!info.PodUIDs[uid]) continue;
      if (Object.keys(info.PodUIDs).length > 1) {
        delete info.PodUIDs[uid];
        changed = true;
        continue;
      }
      try {
        for (const driver of Object.keys(info.DriverState)) {
          const res = (await this.call(driver, 'NodeUnprepareResources', {
            claims: [{ namespace: info.Namespace, uid: claimUid, name: info.ClaimName }],
          }).catch((err: unknown) => {
            throw new Error(`NodeUnprepareResources failed: ${messageOf(err)}`);
          })) as { claims?: Record<string, { error?: string }> };
          const error = res.claims?.[claimUid]?.error;
          if (error)
            throw new Error(`NodeUnprepareResources failed for claim ${info.Namespace}/${info.ClaimName}: ${error}`);
        }
        this.claims.delete(claimUid);
        this.prepared.delete(claimUid);
        changed = true;
      } catch (err) {
        failures.push(messageOf(err));
        this.deps.logger.warn({ claim: info.ClaimName, err: messageOf(err) }, 'NodeUnprepareResources failed');
      }
    }
    if (changed) await this.persist();
    if (changed || failures.length)
      this.deps.metrics?.operation('UnprepareResources', failures.length > 0, (performance.now() - began) / 1000);
    if (failures.length) throw new Error(aggregateMessage(failures));
  }
}
