/**
 * The volume manager (upstream pkg/kubelet/volumemanager, the executor half): keeps the actual
 * state (pod UID → volume name → set-up volume) and applies the decisions of reconcile.ts.
 *
 *  pod sync ─► mountPod(pod) ─► computeVolumeActions ─► plugin.setUp (parallel) ─► actual state
 *                 │ failure: Warning FailedMount "MountVolume.<WaitForAttach|MountDevice|SetUp> failed
 *                 │          for volume "x" : …" (a claim's volume named by its PV; a raw block device's:
 *                 │          FailedMapVolume "MapVolume.<…> failed …"), retried after a backoff
 *                 │          (0.5 s doubling to 2 m 2 s, as upstream); a claim that cannot be resolved is
 *                 │          reported by the pod's sync at once, and any pod still waiting after 2 m 3 s
 *                 │          ("Unable to attach or mount volumes: …", volume-processing.ts)
 *                 └ ok once every volume is set up → the containers get their mounts
 *  pod terminated ─► removePodDir(uid): unmount under the pod dir, then remove it; still in
 *                   its source ─► unmountPod(uid): the same for its volume directories only
 *  housekeeping ─► cleanupOrphans(isKnown): the same for pod dirs of pods nobody knows
 *
 * Directory layout as upstream: <root-dir>/pods/<uid>/volumes/<plugin dir>/<volume name>.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { allContainers } from '../../api/containers.js';
import type { Pod } from '../../api/types.js';
import type { Clock } from '../../lib/clock.js';
import { logV, type Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';
import { listDirSync } from '../../lib/fs-util.js';
import { podRef, type EventSink } from '../events/recorder.js';
import { makeRShared, unmountUnder } from './mount-util.js';
import { computeVolumeActions, isImageVolume, orphanedPodDirs } from './reconcile.js';
import type { MountedVolume, Volume, VolumeHost, VolumePlugin } from './types.js';
import { IN_TREE_PLUGINS } from './plugins/all.js';
import { makePodDataDirs, podDir } from '../runtime/pod-files.js';
import { AttachError, attachLimitRejection, mountWaitTimeout } from './attach-limit.js';
import {
  PersistentVolumeError,
  unableToMountMessage,
  volumeFailure,
  VolumeOperationError,
  VolumeProcessingError,
} from './volume-processing.js';

const INITIAL_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 122_000;
const ORPHAN_INITIAL_BACKOFF_MS = 2000;
/**
 * A pod directory's volume directories and the plugins' records of them (plugins/); the rest — etc-hosts, containers/
 * — is the pod's own.
 */
const POD_VOLUME_DIRS = ['volumes', 'volume-subpaths', 'volumeDevices', 'plugins'];

/** The result of mounting a pod's volumes. */
export type MountResult =
  | { ok: true; volumes: ReadonlyMap<string, MountedVolume> }
  | {
      ok: false;
      message: string;
      retryAfterMs: number;
      /** Set when the pod is to be rejected: the node has no attachment left for a volume (attach-limit.ts). */
      attachLimitExceeded?: string;
      /**
       * What upstream's syncPod reports (FailedMount): set when a volume could not be resolved (a claim not bound…),
       * and each time the pod has waited upstream's attach-and-mount timeout again.
       */
      report?: string;
    };

/** A pod's wait for its volumes. */
interface VolumeWait {
  /** Since when it has waited. */
  sinceMs: number;
  /** Its volumes not attached: name → whether the node's attachment slots ran out. */
  unattached: Map<string, boolean>;
  /** When the wait was last reported (upstream's attach-and-mount timeout, again). */
  reportedAtMs?: number;
}

/** What the manager needs. */
export interface VolumeManagerDeps {
  rootDir: string;
  host: VolumeHost;
  clock: Clock;
  logger: Logger;
  events?: EventSink;
  plugins?: readonly VolumePlugin[];
  /** Called when a pod's volumes are gone (token cache and the like). */
  onPodRemoved?(uid: string): void;
  /** Sees each volume set-up and teardown (storage_operation_duration_seconds). */
  observe?(o: { plugin: string; operation: 'volume_mount' | 'volume_unmount'; ok: boolean; seconds: number }): void;
}

/** upstream GenerateMsgDetailed("MountVolume.SetUp succeeded", ""): the volume, its unique name, the pod. */
function mountSucceeded(pod: Pod, volume: string, dirName: string): string {
  const uid = pod.metadata.uid!;
  return `MountVolume.SetUp succeeded for volume "${volume}" (UniqueName: "${pluginName(dirName)}/${uid}-${volume}") pod "${pod.metadata.name}" (UID: "${uid}") `;
}

/** Upstream's name of a plugin (its directory name with "/" for "~": kubernetes.io/configmap). */
const pluginName = (dirName: string) => dirName.replace('~', '/');
/** A set-up volume's plugin as upstream's metrics name it (GetFullQualifiedPluginNameForVolume). */
const metricsName = (v: MountedVolume) => v.pluginName ?? pluginName(v.plugin);
/** A pod's volume directory (`<root-dir>/pods/<uid>/volumes`). */
/** The pod's volumes its containers use as raw block devices (`volumeDevices`): upstream maps them, not mounts. */
function mappedVolumes(pod: Pod): Set<string> {
  return new Set(allContainers(pod).flatMap((c) => (c.volumeDevices ?? []).map((d) => d.name)));
}

const podVolumesDir = (rootDir: string, uid: string) => join(podDir(rootDir, uid), 'volumes');

/** Sets up and tears down pod volumes. */
export class VolumeManager {
  private readonly actual = new Map<string, Map<string, MountedVolume>>();
  /**
   * Each pod's volumes as its spec asks for them: volume name → the plugin's full name (volume_manager_total_volumes).
   */
  private readonly desired = new Map<string, Map<string, string>>();
  /**
   * Per pod and volume: when to try a failed one again. This manager's times are all waits (retries, the
   * attach-and-mount timeout), on the clock's monotonic reading: a wall clock stepped back holds none of them back.
   */
  private readonly retry = new Map<string, Map<string, { atMs: number; delayMs: number }>>();
  /** Per pod: its wait for its volumes. */
  private readonly waiting = new Map<string, VolumeWait>();
  private readonly plugins: readonly VolumePlugin[];
  /** Orphaned pod directories being removed, and those whose removal failed: when to try again. */
  private readonly removingOrphans = new Map<string, Promise<void>>();
  private readonly orphanBackoff = new Map<string, { atMs: number; delayMs: number }>();

  constructor(private readonly deps: VolumeManagerDeps) {
    this.plugins = deps.plugins ?? IN_TREE_PLUGINS;
  }

  /**
   * Makes the root dir a shared mount (upstream setupDataDirs does it at start) so that volumes
   * under it can be mounted with HostToContainer / Bidirectional propagation; done on the first
   * pod that asks for it, so a kubelet whose pods never do leaves no mount behind. Root only.
   */
  private ensureSharedRootDir(): Promise<void> {
    return (this.sharedRootDir ??= (async () => {
      if (!this.deps.host.isRoot) return;
      await mkdir(join(this.deps.rootDir, 'pods'), { recursive: true });
      await makeRShared(this.deps.rootDir).catch((err) =>
        this.deps.logger.warn(
          { rootDir: this.deps.rootDir, err: messageOf(err) },
          'could not make the root directory a shared mount: mountPropagation HostToContainer/Bidirectional will fail',
        ),
      );
    })());
  }
  private sharedRootDir: Promise<void> | undefined;

  /** Pod `uid`'s wait for its volumes, begun at `nowMs` unless it was waiting already. */
  private waitingSince(uid: string, nowMs: number): VolumeWait {
    let waiting = this.waiting.get(uid);
    if (!waiting) this.waiting.set(uid, (waiting = { sinceMs: nowMs, unattached: new Map() }));
    return waiting;
  }

  /** The set-up volumes of pod `uid` (for stats). */
  mountedVolumes(uid: string): ReadonlyMap<string, MountedVolume> {
    return this.actual.get(uid) ?? new Map();
  }

  /**
   * How many volumes each plugin has, as the pods ask for them (desired) and as set up (actual):
   * volume_manager_total_volumes.
   */
  volumeCounts(): { plugin: string; state: 'desired_state_of_world' | 'actual_state_of_world'; count: number }[] {
    const count = (names: Iterable<string>) => {
      const n = new Map<string, number>();
      for (const name of names) n.set(name, (n.get(name) ?? 0) + 1);
      return n;
    };
    const desired = count([...this.desired.values()].flatMap((m) => [...m.values()]));
    const actual = count([...this.actual.values()].flatMap((m) => [...m.values()].map(metricsName)));
    return [
      ...[...desired].map(([plugin, n]) => ({ plugin, state: 'desired_state_of_world' as const, count: n })),
      ...[...actual].map(([plugin, n]) => ({ plugin, state: 'actual_state_of_world' as const, count: n })),
    ];
  }

  /** The unique names of the attachable volumes set up on this node, sorted (node.status.volumesInUse). */
  volumesInUse(): string[] {
    const names = new Set<string>();
    for (const m of this.actual.values()) for (const v of m.values()) if (v.uniqueName) names.add(v.uniqueName);
    return [...names].sort();
  }

  /** Every pod UID with set-up volumes. */
  podsWithVolumes(): string[] {
    return [...this.actual.keys()];
  }

  /**
   * Sets up (or refreshes) the volumes of `pod`. Ok once every volume is set up; a remount
   * failure of a volume already set up is reported (event) but does not hold the pod back.
   */
  async mountPod(pod: Pod): Promise<MountResult> {
    const uid = pod.metadata.uid!;
    await makePodDataDirs(this.deps.rootDir, uid);
    const volumes = (pod.spec.volumes ?? []) as Volume[];
    const actual = this.actual.get(uid) ?? new Map<string, MountedVolume>();
    this.actual.set(uid, actual);
    // Each volume under its plugin's full name: the set-up one's (a claim's PV plugin), else the spec's.
    const desired = new Map(
      volumes.flatMap((v) =>
        this.plugins
          .filter((p) => p.field in v)
          .map((p) => [v.name, actual.has(v.name) ? metricsName(actual.get(v.name)!) : pluginName(p.dirName)] as const),
      ),
    );
    this.desired.set(uid, desired);
    const retries = this.retry.get(uid) ?? new Map<string, { atMs: number; delayMs: number }>();
    this.retry.set(uid, retries);
    const now = this.deps.clock.monotonic();
    const plan = computeVolumeActions(volumes, actual, {
      plugins: this.plugins,
      nowMs: now,
      retryAt: new Map([...retries].map(([k, v]) => [k, v.atMs])),
    });
    for (const u of plan.unsupported) this.failed(pod, u.name, u.message, retries, now);
    const fsGroup = (pod.spec.securityContext as { fsGroup?: number } | undefined)?.fsGroup;
    // The volumes that could not be resolved in this pass, and why (upstream's pod errors of its populator).
    const notProcessed = new Map<string, string>();
    await Promise.all(
      plan.setUp.map(async ({ volume, plugin }) => {
        const t0 = performance.now();
        const observe = (ok: boolean, name = pluginName(plugin.dirName)) =>
          this.deps.observe?.({
            plugin: name,
            operation: 'volume_mount',
            ok,
            seconds: (performance.now() - t0) / 1000,
          });
        try {
          const mounted = await plugin.setUp({
            pod,
            volume,
            dir: join(podVolumesDir(this.deps.rootDir, uid), plugin.dirName, volume.name),
            volumesDir: podVolumesDir(this.deps.rootDir, uid),
            fsGroup,
            host: this.deps.host,
            remount: actual.has(volume.name),
          });
          const first = !actual.has(volume.name);
          actual.set(volume.name, mounted);
          retries.delete(volume.name);
          this.waiting.get(uid)?.unattached.delete(volume.name);
          desired.set(volume.name, metricsName(mounted));
          observe(true, metricsName(mounted));
          // Upstream's V(1) line for a first set-up (a remount's is V(4)), with its unique name.
          logV(
            this.deps.logger,
            first ? 1 : 4,
            { pod: `${pod.metadata.namespace}/${pod.metadata.name}` },
            mountSucceeded(pod, volume.name, plugin.dirName),
          );
        } catch (err) {
          observe(false);
          const waiting = this.waitingSince(uid, now);
          // A claim's volume fails under its PersistentVolume's name.
          const failure = err instanceof PersistentVolumeError ? err.failure : err;
          if (failure instanceof AttachError) waiting.unattached.set(volume.name, failure.exhausted);
          else waiting.unattached.delete(volume.name);
          if (failure instanceof VolumeProcessingError) notProcessed.set(volume.name, failure.message);
          const step =
            failure instanceof AttachError
              ? 'attach'
              : failure instanceof VolumeOperationError
                ? failure.step
                : undefined;
          this.failed(pod, volume.name, messageOf(failure), retries, this.deps.clock.monotonic(), {
            event: !(failure instanceof VolumeProcessingError),
            ...volumeFailure(step, mappedVolumes(pod).has(volume.name)),
            specName: err instanceof PersistentVolumeError ? err.persistentVolumeName : volume.name,
          });
        }
      }),
    );
    // Volumes set up before and not set up again: their own per-sync work (a CSI PV's expansion).
    const again = new Set(plan.setUp.map((x) => x.volume.name));
    await Promise.all(
      [...actual]
        .filter(([name, v]) => v.onSync && !again.has(name))
        .map(([name, v]) =>
          v.onSync!().catch((err: unknown) =>
            this.deps.logger.warn({ uid, volume: name, err: messageOf(err) }, 'volume sync failed'),
          ),
        ),
    );
    for (const name of plan.tearDown) {
      const v = actual.get(name)!;
      const t0 = performance.now();
      const dir = join(podVolumesDir(this.deps.rootDir, uid), v.dir ?? join(v.plugin, name));
      const ok = await (this.plugins.find((p) => p.dirName === v.plugin)?.tearDown?.(dir) ?? Promise.resolve())
        .then(() => unmountUnder(dir))
        .then(() => rm(dir, { recursive: true, force: true }))
        .then(
          () => true,
          (err: unknown) => {
            this.deps.logger.warn({ uid, volume: name, err: messageOf(err) }, 'volume teardown failed');
            return false;
          },
        );
      this.deps.observe?.({
        plugin: metricsName(v),
        operation: 'volume_unmount',
        ok,
        seconds: (performance.now() - t0) / 1000,
      });
      actual.delete(name);
    }
    const missing = volumes.filter((v) => !actual.has(v.name) && !isImageVolume(v)).map((v) => v.name);
    const containers = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])];
    if (
      containers.some((c) =>
        ((c.volumeMounts ?? []) as { mountPropagation?: string }[]).some(
          (m) => m.mountPropagation && m.mountPropagation !== 'None',
        ),
      )
    )
      await this.ensureSharedRootDir();
    if (!missing.length) {
      this.waiting.delete(uid);
      return { ok: true, volumes: actual };
    }
    const waiting = this.waitingSince(uid, now);
    const next = Math.min(...missing.map((n) => retries.get(n)?.atMs ?? now + INITIAL_BACKOFF_MS));
    const attachLimitExceeded = attachLimitRejection({
      unmounted: missing,
      unattached: new Map([...waiting.unattached].filter(([name]) => missing.includes(name))),
      waitingSinceMs: waiting.sinceMs,
      nowMs: this.deps.clock.monotonic(),
    });
    const unattached = [...waiting.unattached.keys()];
    // Upstream's wait ends at once on volumes it could not resolve (their errors, sorted and joined), else at its
    // timeout.
    const report = attachLimitExceeded
      ? undefined
      : notProcessed.size
        ? unableToMountMessage({
            unmounted: missing,
            unattached,
            notProcessed: [...notProcessed.keys()],
            cause: [...new Set(notProcessed.values())].sort().join('; '),
          })
        : mountWaitTimeout({
            unmounted: missing,
            unattached,
            sinceMs: waiting.reportedAtMs ?? waiting.sinceMs,
            nowMs: this.deps.clock.monotonic(),
          });
    if (report) waiting.reportedAtMs = this.deps.clock.monotonic();
    return {
      ok: false,
      message: `unmounted volumes=[${missing.join(' ')}]`,
      retryAfterMs: Math.max(0, next - this.deps.clock.monotonic()),
      ...(attachLimitExceeded ? { attachLimitExceeded } : {}),
      ...(report ? { report } : {}),
    };
  }

  /**
   * A volume whose set-up failed: retried after its backoff, and (`event`) reported as upstream's FailedMount, naming
   * the operation that failed and the volume's spec name.
   */
  private failed(
    pod: Pod,
    name: string,
    message: string,
    retries: Map<string, { atMs: number; delayMs: number }>,
    now: number,
    o: { event: boolean; operation: string; reason: string; specName: string } = {
      event: true,
      ...volumeFailure(undefined, false),
      specName: name,
    },
  ): void {
    const prev = retries.get(name);
    const delayMs = prev ? Math.min(prev.delayMs * 2, MAX_BACKOFF_MS) : INITIAL_BACKOFF_MS;
    retries.set(name, { atMs: now + delayMs, delayMs });
    const text = `${o.operation} failed for volume "${o.specName}" : ${message}`;
    this.deps.logger.warn({ pod: `${pod.metadata.namespace}/${pod.metadata.name}`, volume: name }, text);
    if (o.event) this.deps.events?.record(podRef(pod), 'Warning', o.reason, text);
  }

  /**
   * Tears down every volume of pod `uid` and removes its volume directories; the pod directory
   * stays (upstream unmounts the volumes of a terminated pod still in its source). False when a
   * volume cannot be released or unmounted: nothing is removed then.
   */
  async unmountPod(uid: string): Promise<boolean> {
    const dir = podDir(this.deps.rootDir, uid);
    const t0 = performance.now();
    try {
      await this.pluginTearDowns(podVolumesDir(this.deps.rootDir, uid));
      await unmountUnder(dir);
    } catch (err) {
      this.deps.logger.warn({ uid, err: messageOf(err) }, 'a volume of the pod could not be unmounted');
      return false;
    }
    for (const p of this.plugins) p.forgetPod?.(podVolumesDir(this.deps.rootDir, uid));
    // Nothing is mounted under the pod any more: what is left of its volumes is plain files (an emptyDir's).
    for (const sub of POD_VOLUME_DIRS) await rm(join(dir, sub), { recursive: true, force: true });
    for (const v of this.actual.get(uid)?.values() ?? [])
      this.deps.observe?.({
        plugin: metricsName(v),
        operation: 'volume_unmount',
        ok: true,
        seconds: (performance.now() - t0) / 1000,
      });
    this.actual.delete(uid);
    this.desired.delete(uid);
    this.retry.delete(uid);
    this.waiting.delete(uid);
    return true;
  }

  /**
   * Tears down every volume of pod `uid` and removes its pod directory; leaves it (false) when something cannot be
   * released or unmounted.
   */
  async removePodDir(uid: string): Promise<boolean> {
    if (!(await this.unmountPod(uid))) return false;
    await rm(podDir(this.deps.rootDir, uid), { recursive: true, force: true });
    this.deps.onPodRemoved?.(uid);
    return true;
  }

  /**
   * Lets each plugin with a `tearDown` release its volumes under `volumesDir` (read from disk: works for orphans and
   * after a restart).
   */
  private async pluginTearDowns(volumesDir: string): Promise<void> {
    for (const p of this.plugins)
      if (p.tearDown)
        for (const name of listDirSync(join(volumesDir, p.dirName)) ?? [])
          await p.tearDown(join(volumesDir, p.dirName, name));
  }

  /**
   * Removes the directories of pods that no one knows (`isKnown` false); never a known pod's. Each
   * removal runs in the background, one at a time per pod, and one that failed (a CSI driver that
   * is gone or hangs) is tried again after a backoff (2 s doubling to 2 m 2 s), so housekeeping
   * never waits on a driver.
   */
  async cleanupOrphans(isKnown: (uid: string) => boolean): Promise<void> {
    // Listed synchronously (every housekeeping, 2 s): one local directory, cheaper than a promise round trip.
    const onDisk = listDirSync(join(this.deps.rootDir, 'pods')) ?? [];
    const now = this.deps.clock.monotonic();
    for (const uid of orphanedPodDirs(onDisk, isKnown)) {
      const backoff = this.orphanBackoff.get(uid);
      if (this.removingOrphans.has(uid) || (backoff && backoff.atMs > now)) continue;
      this.deps.logger.info({ uid }, 'cleaning up orphaned pod directory');
      const removal = this.removePodDir(uid)
        .catch((err: unknown) => {
          this.deps.logger.warn({ uid, err: messageOf(err) }, 'orphaned pod directory not removed');
          return false;
        })
        .then((removed) => {
          if (removed) return void this.orphanBackoff.delete(uid);
          const delayMs = backoff ? Math.min(backoff.delayMs * 2, MAX_BACKOFF_MS) : ORPHAN_INITIAL_BACKOFF_MS;
          this.orphanBackoff.set(uid, { atMs: this.deps.clock.monotonic() + delayMs, delayMs });
        })
        .finally(() => this.removingOrphans.delete(uid));
      this.removingOrphans.set(uid, removal);
    }
    for (const p of this.plugins)
      void p
        .releaseUnused?.()
        .catch((err: unknown) =>
          this.deps.logger.warn({ plugin: p.dirName, err: messageOf(err) }, 'releasing unused volumes failed'),
        );
    const present = new Set(onDisk);
    for (const uid of this.orphanBackoff.keys()) if (!present.has(uid)) this.orphanBackoff.delete(uid);
    for (const uid of this.actual.keys())
      if (!isKnown(uid) && !present.has(uid)) {
        this.actual.delete(uid);
        this.desired.delete(uid);
        this.retry.delete(uid);
        this.waiting.delete(uid);
      }
  }
}
