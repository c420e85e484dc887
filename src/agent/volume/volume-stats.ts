/**
 * Volume usage for the stats endpoints (upstream volume_stat_calculator, period
 * volumeStatsAggPeriod = 1 m): a background loop walks each set-up volume of the pods on this node
 * (used bytes from allocated blocks, inodes used, the filesystem's capacity, available bytes and
 * inodes from statfs; a local PV from statfs alone, as upstream's MetricsStatFS; a CSI volume
 * from its driver's NodeGetVolumeStats when it has GET_VOLUME_STATS, as MetricsCsi) and keeps the
 * latest figures in memory. Requests read `get` and `claims`, never the disk. hostPath volumes (a
 * hostPath PV too) are not measured, as upstream's MetricsNil.
 */
import { rfc3339 } from '../../lib/time.js';
import { lstat, readdir, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { statfsApart } from '../../lib/ask-apart.js';
import type { Clock } from '../../lib/clock.js';
import { onFilesystemThatMayStopAnswering, readMountTable, type MountEntry } from '../../lib/mount-table.js';
import { periodically } from '../../lib/periodically.js';
import type { Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';
import type { MountedVolume, FsUsage } from './types.js';

/** One volume's figures (names as upstream's VolumeStats / FsStats). */
export interface VolumeStats extends FsUsage {
  name: string;
  time: string;
  /** The claim of a persistentVolumeClaim volume. */
  pvcRef?: { name: string; namespace: string };
  /** Counted in the pod's ephemeral storage. */
  localEphemeral: boolean;
}

/** Upstream's default volumeStatsAggPeriod. */
export const VOLUME_STATS_PERIOD_MS = 60_000;

/** Bytes allocated and inodes used under `path` (like `du -s --block-size=1` and `find | wc -l`); one device only. */
export async function diskUsage(path: string): Promise<{ bytes: number; inodes: number }> {
  const root = await lstat(path);
  let bytes = 0;
  let inodes = 0;
  const seen = new Set<number>();
  const walk = async (p: string): Promise<void> => {
    const s = await lstat(p).catch(() => undefined);
    if (!s || s.dev !== root.dev) return;
    if (!seen.has(s.ino)) {
      seen.add(s.ino);
      inodes++;
      bytes += s.blocks * 512;
    }
    if (s.isDirectory()) for (const e of await readdir(p).catch(() => [] as string[])) await walk(join(p, e));
  };
  await walk(path);
  return { bytes, inodes };
}

/**
 * A local volume's figures: `du` (the files under it: a volume the kubelet made under its pods directory) or its
 * filesystem's use (statfs alone, upstream fs.Info: a local PV), with its filesystem's capacity.
 */
async function measureLocal(path: string, du: boolean, mountTable: () => Promise<MountEntry[]>): Promise<FsUsage> {
  // A local PV may lie on a filesystem that stops answering: its figures are asked of a child process then.
  const figures = async () =>
    !du && (await onFilesystemThatMayStopAnswering(path, mountTable())) ? statfsApart(path) : statfs(path);
  const [used, fs] = await Promise.all([du ? diskUsage(path) : undefined, figures()]);
  return {
    usedBytes: used ? used.bytes : (fs.blocks - fs.bfree) * fs.bsize,
    inodesUsed: used ? used.inodes : fs.files - fs.ffree,
    capacityBytes: fs.blocks * fs.bsize,
    availableBytes: fs.bavail * fs.bsize,
    inodes: fs.files,
    inodesFree: fs.ffree,
  };
}

/** Collects and serves volume stats. */
export class VolumeStatsCollector {
  private readonly latest = new Map<string, VolumeStats[]>();
  constructor(
    private readonly deps: {
      volumes: { podsWithVolumes(): string[]; mountedVolumes(uid: string): ReadonlyMap<string, MountedVolume> };
      clock: Clock;
      logger: Logger;
      periodMs?: number;
    },
  ) {}

  /** The latest figures for pod `uid` (empty until the first collection). */
  get(uid: string): VolumeStats[] {
    return this.latest.get(uid) ?? [];
  }

  /** The latest figures of every claim in use on the node, each once (the kubelet_volume_stats_* series). */
  claims(): (VolumeStats & { pvcRef: { name: string; namespace: string } })[] {
    const out = new Map<string, VolumeStats & { pvcRef: { name: string; namespace: string } }>();
    for (const stats of this.latest.values())
      for (const s of stats)
        if (s.pvcRef && !out.has(`${s.pvcRef.namespace}/${s.pvcRef.name}`))
          out.set(`${s.pvcRef.namespace}/${s.pvcRef.name}`, { ...s, pvcRef: s.pvcRef });
    return [...out.values()];
  }

  /** One pass over every pod's volumes. */
  async collect(): Promise<void> {
    const pods = this.deps.volumes.podsWithVolumes();
    // The mount table as it is now, for the whole pass; read only when a local PV is measured.
    let mounts: Promise<MountEntry[]> | undefined;
    const mountTable = () => (mounts ??= readMountTable());
    for (const uid of [...this.latest.keys()]) if (!pods.includes(uid)) this.latest.delete(uid);
    for (const uid of pods) {
      const out: VolumeStats[] = [];
      for (const [name, v] of this.deps.volumes.mountedVolumes(uid)) {
        if (!v.metrics) continue;
        try {
          out.push({
            name,
            time: rfc3339(this.deps.clock.now()),
            ...(typeof v.metrics === 'function'
              ? await v.metrics()
              : await measureLocal(v.path, v.metrics === 'du', mountTable)),
            ...(v.pvcRef ? { pvcRef: v.pvcRef } : {}),
            localEphemeral: v.localEphemeral === true,
          });
        } catch (err) {
          this.deps.logger.debug({ uid, volume: name, err: messageOf(err) }, 'volume stats unavailable');
        }
      }
      this.latest.set(uid, out);
    }
  }

  /** Collects every period until `signal` aborts. */
  start({ signal }: { signal: AbortSignal }): void {
    periodically(() => this.collect(), {
      periodMs: this.deps.periodMs ?? VOLUME_STATS_PERIOD_MS,
      signal,
      clock: this.deps.clock,
      immediately: true,
      onError: (err) => this.deps.logger.warn({ err: messageOf(err) }, 'volume stats collection failed'),
    });
  }
}
