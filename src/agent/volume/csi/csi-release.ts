/**
 * Releasing CSI volumes (upstream's TearDownAt and UnmountDevice, driven by records on disk so it
 * works for orphans and after a restart):
 * - a pod's record `<pod volumes>/kubernetes.io~csi/<name>/vol_data.json` → NodeUnpublishVolume;
 * - a raw block volume's bind mounts of its device (the pod's and the node's global map) first;
 * - a staging's record `<root>/plugins/kubernetes.io/csi/<driver>/<sha>/vol_data.json` (a raw block
 *   volume's: `…/csi/volumeDevices/<pv>/data/vol_data.json`) →
 *   NodeUnstageVolume once no pod's record names the volume (after a teardown, and by housekeeping
 *   for an unstage that failed or a stage that timed out).
 * Stage and unstage of one volume are serialized (`serialized`), as upstream's per-volume operations.
 */
import { existsSync, readFileSync } from 'node:fs';
import { rm, rmdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { messageOf } from '../../../lib/errors.js';
import { listDirSync, statSyncOrUndefined } from '../../../lib/fs-util.js';
import type { Logger } from '../../../lib/logger.js';
import { unmountUnder } from '../mount-util.js';
import type { CsiClient } from './csi-client.js';
import type { CsiDrivers } from './csi-drivers.js';
import { CSI_DIR_NAME, CSI_PLUGIN_NAME, parseVolData, VOL_DATA_FILE, type VolData } from './csi-spec.js';

/** upstream's log(): messages prefixed with the plugin's name. */
export const csiLog = (msg: string) => `${CSI_PLUGIN_NAME}: ${msg}`;

/** A record, read synchronously and bounded (64 KiB: ours are a few hundred bytes); throws when missing or not one. */
export function readVolData(path: string): VolData {
  if ((statSyncOrUndefined(path)?.size ?? 0) > 64 * 1024) throw new Error('volume data file too large');
  return parseVolData(readFileSync(path, 'utf8'));
}

/** The registered driver's client; throws upstream's "<what> failed to get CSI client: …". */
export function driverClient(drivers: CsiDrivers, driver: string, what: string): CsiClient {
  try {
    return drivers.client(driver);
  } catch (err) {
    throw new Error(csiLog(`${what} failed to get CSI client: ${messageOf(err)}`));
  }
}

/** A volume's key among the ones in use: its driver and handle. */
const volumeKey = (v: { driverName: string; volumeHandle: string }) => `${v.driverName}\u0000${v.volumeHandle}`;

/** Releases CSI volumes by their records. */
export class CsiRelease {
  constructor(private readonly deps: { drivers: CsiDrivers; rootDir: string; logger?: Logger }) {}

  /**
   * Releases the CSI volume whose directory is `dir` (see the file comment); throws while its driver cannot unpublish
   * it.
   */
  async tearDown(dir: string): Promise<void> {
    const file = join(dir, VOL_DATA_FILE);
    let data: VolData;
    try {
      data = this.confined(readVolData(file));
    } catch {
      return; // never published (or not ours): the generic teardown removes the directory
    }
    const client = driverClient(this.deps.drivers, data.driverName, 'Unmounter.TearDownAt');
    // A raw block volume: the kubelet's bind mounts of the device go first (upstream UnmapBlockVolume).
    for (const bound of [data.podDeviceMapPath, data.globalMapPath])
      if (bound) {
        await unmountUnder(bound);
        await rm(bound, { force: true });
      }
    const target = data.publishPath ?? join(dir, 'mount');
    await client.nodeUnpublishVolume(data.volumeHandle, target).catch((err: unknown) => {
      throw new Error(csiLog(`Unmounter.TearDownAt failed: ${messageOf(err)}`));
    });
    if (data.publishPath) await rm(data.publishPath, { force: true });
    // Asynchronously: a driver that reported success without unmounting a target that stopped answering holds at
    // most a threadpool thread here, never the main thread.
    else
      await rmdir(target).catch((err: unknown) => {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      });
    await rm(file, { force: true });
    await rmdir(dir).catch(() => {});
    if (data.stagingTargetPath) await this.unstageIfUnused(data.stageRecordDir ?? dirname(data.stagingTargetPath));
  }

  /**
   * Unstages the staged volume recorded in `stageDir` (`…/<driver>/<sha>`) when no pod's record
   * names it any more; a failure is logged and left to `releaseUnused` (housekeeping).
   */
  private async unstageIfUnused(stageDir: string, used?: Set<string>): Promise<void> {
    const before = this.stageRecord(stageDir);
    if (!before || this.inUse(before, used)) return;
    // Under the volume's lock and with a fresh look: a pod that wrote its record meanwhile keeps it staged, and a
    // teardown and housekeeping that both found it unused unstage it once (the second finds the record gone).
    await this.serialized(stageDir, async () => {
      const data = this.stageRecord(stageDir);
      if (!data || this.inUse(data)) return;
      // Whatever the unstage answers, the volume is no longer known to be staged: a pod that comes for it now stages it
      // again (upstream marks the device uncertain when UnmountDevice fails).
      this.staged.delete(stageDir);
      try {
        const staging = data.stagingTargetPath ?? join(stageDir, 'globalmount');
        await driverClient(this.deps.drivers, data.driverName, 'attacher.UnmountDevice').nodeUnstageVolume(
          data.volumeHandle,
          staging,
        );
        await rm(stageDir, { recursive: true, force: true });
        for (const d of data.cleanup ?? []) await rm(d, { recursive: true, force: true });
      } catch (err) {
        this.deps.logger?.warn(
          { volume: data.volumeHandle, driver: data.driverName },
          csiLog(`attacher.UnmountDevice failed: ${messageOf(err)}`),
        );
      }
    });
  }

  /** The staging's record in `stageDir`, confined; undefined when it is gone (unstaged) or unreadable. */
  private stageRecord(stageDir: string): VolData | undefined {
    try {
      return this.confined(readVolData(join(stageDir, VOL_DATA_FILE)));
    } catch {
      return undefined;
    }
  }

  /**
   * A record with every path outside the root dir dropped: what teardown unmounts and removes is only ever the
   * kubelet's own.
   */
  private confined(v: VolData): VolData {
    const root = `${resolve(this.deps.rootDir)}/`;
    const inside = (p: string | undefined) => (p !== undefined && resolve(p).startsWith(root) ? p : undefined);
    return {
      ...v,
      stagingTargetPath: inside(v.stagingTargetPath),
      stageRecordDir: inside(v.stageRecordDir),
      publishPath: inside(v.publishPath),
      globalMapPath: inside(v.globalMapPath),
      podDeviceMapPath: inside(v.podDeviceMapPath),
      cleanup: v.cleanup?.filter((p) => inside(p) !== undefined),
    };
  }

  /**
   * Runs `fn` after every earlier operation on the staged volume `key` (upstream serializes the operations of a
   * volume).
   */
  serialized(key: string, fn: () => Promise<void>): Promise<void> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run
      .catch(() => {})
      .finally(() => {
        if (this.locks.get(key) === tail) this.locks.delete(key);
      });
    this.locks.set(key, tail);
    return run;
  }
  private readonly locks = new Map<string, Promise<void>>();

  /**
   * Housekeeping: unstages every staged volume no pod uses any more (an unstage that failed, a stage that timed out).
   * One pass at a time.
   */
  releaseUnused(): Promise<void> {
    return (this.releasing ??= (async () => {
      const base = join(this.deps.rootDir, 'plugins', CSI_PLUGIN_NAME);
      const blocks = join(base, 'volumeDevices');
      const staged = [
        // filesystems: <driver>/<sha256(handle)>; raw block volumes: volumeDevices/<pv>/data
        ...(listDirSync(base) ?? [])
          .filter((d) => d !== 'volumeDevices')
          .flatMap((driver) => (listDirSync(join(base, driver)) ?? []).map((sha) => join(base, driver, sha))),
        ...(listDirSync(blocks) ?? [])
          .filter((d) => d !== 'staging' && d !== 'publish')
          .map((pv) => join(blocks, pv, 'data')),
      ];
      if (!staged.length) return; // nothing staged: no scan of the pods
      const used = this.usedVolumes();
      for (const dir of staged) await this.unstageIfUnused(dir, used);
    })().finally(() => (this.releasing = undefined)));
  }
  private releasing: Promise<void> | undefined;

  /** Records that the volume whose staging record is in `stageDir` was staged by this kubelet. */
  markStaged(stageDir: string): void {
    this.staged.add(stageDir);
  }

  /** Whether this kubelet staged the volume of `stageDir` and has not unstaged it since (its record still there). */
  isStaged(stageDir: string): boolean {
    return this.staged.has(stageDir) && existsSync(join(stageDir, VOL_DATA_FILE));
  }
  private readonly staged = new Set<string>();

  /**
   * Keeps `v`'s staging in use for the pod volume directory `dir` although its record is gone: a first publish that
   * failed for good removes the directory, as upstream's, while the pod still wants the volume and retries; upstream
   * keeps the volume staged as long as a pod wants it.
   */
  hold(dir: string, v: { driverName: string; volumeHandle: string }): void {
    this.held.set(dir, volumeKey(v));
  }

  /** Ends the hold of `dir` (its record is written again, or the pod no longer wants the volume). */
  unhold(dir: string): void {
    this.held.delete(dir);
  }

  /** Ends the holds of every volume directory under `volumesDir` (a pod's volumes torn down). */
  forgetPod(volumesDir: string): void {
    for (const dir of this.held.keys()) if (dir.startsWith(`${volumesDir}/`)) this.held.delete(dir);
  }
  private readonly held = new Map<string, string>();

  /** Whether a pod's volume on this node uses `v`'s volume (its vol_data.json names the same driver and handle). */
  inUse(v: { driverName: string; volumeHandle: string }, used = this.usedVolumes()): boolean {
    return used.has(volumeKey(v));
  }

  /** The volumes the pods' records and the holds name ("<driver>\0<handle>"): one scan of the pods' CSI directories. */
  private usedVolumes(): Set<string> {
    const used = new Set<string>(this.held.values());
    const pods = join(this.deps.rootDir, 'pods');
    for (const uid of listDirSync(pods) ?? [])
      for (const name of listDirSync(join(pods, uid, 'volumes', CSI_DIR_NAME)) ?? []) {
        try {
          const v = readVolData(join(pods, uid, 'volumes', CSI_DIR_NAME, name, VOL_DATA_FILE));
          used.add(volumeKey(v));
        } catch {
          // no (readable) vol_data.json: not a published volume
        }
      }
    return used;
  }
}
