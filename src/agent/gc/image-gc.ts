/**
 * Image garbage collection by disk usage (upstream realImageGCManager): when the image
 * filesystem's usage reaches imageGCHighThresholdPercent, unused images are removed — least
 * recently used first, none younger than imageMinimumGCAge, never pinned or sandbox images — until
 * usage is back at imageGCLowThresholdPercent. With imageMaximumGCAge, images unused for longer
 * than that are removed first whatever the usage, once the kubelet itself has run that long (so an
 * image used just before a restart is not taken for unused).
 *
 *   detect (list images + containers) → usage (statfs of ImageFsInfo's mountpoint)
 *     → bytesToFree (pure) → imagesToFree (pure) → RemoveImage each
 */
import { statfs } from 'node:fs/promises';
import type { ImageService, RuntimeService } from '../../cri/services.js';
import type * as cri from '../../cri/types.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';

/** The thresholds (KubeletConfiguration names). */
export interface ImageGcPolicy {
  highThresholdPercent: number;
  lowThresholdPercent: number;
  minAgeMs: number;
  /** imageMaximumGCAge (0: off). */
  maxAgeMs?: number;
}

/** What the manager remembers per image (upstream imageRecord). */
export interface ImageRecord {
  firstDetectedMs: number;
  lastUsedMs: number;
  size: number;
  pinned: boolean;
}

/** How full the image filesystem is, in whole percent, as upstream's image GC reckons it. */
const usagePercentOf = (capacity: number, available: number) => 100 - Math.floor((available * 100) / capacity);

/** Bytes to free for `capacity`/`available` under `policy` (0 below the high threshold). */
export function bytesToFree(capacity: number, available: number, policy: ImageGcPolicy): number {
  if (capacity <= 0 || policy.highThresholdPercent >= 100) return 0;
  if (usagePercentOf(capacity, available) < policy.highThresholdPercent) return 0;
  return Math.max(0, Math.floor((capacity * (100 - policy.lowThresholdPercent)) / 100) - available);
}

/**
 * Upstream's FreeDiskSpaceFailed message since v1.35 (kubernetes/kubernetes#132578): about the disk, which is mostly
 * full of something other than unused images when this happens, rather than the bytes the pass wanted. Pure.
 */
export function freeDiskSpaceFailedMessage(capacity: number, available: number, freed: number): string {
  return (
    `Insufficient free disk space on the node's image filesystem (${usagePercentOf(capacity, available)}% of ` +
    `${humanSize(capacity)} used). Failed to free sufficient space by deleting unused images (freed ${freed} bytes). ` +
    'Investigate disk usage, as it could be used by active images, logs, volumes, or other data.'
  );
}

/** A size as upstream's message gives it: bytes below 1 KiB, else one decimal of the largest binary unit. */
function humanSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  let unit = 0;
  let size = bytes / 1024;
  while (size >= 1024 && unit < 5) {
    size /= 1024;
    unit++;
  }
  return `${size.toFixed(1)} ${'KMGTPE'[unit]}iB`;
}

/** The images to remove to free `amount` bytes (pure): unused, unpinned, old enough; LRU first. */
export function imagesToFree(
  records: ReadonlyMap<string, ImageRecord>,
  inUse: ReadonlySet<string>,
  amount: number,
  nowMs: number,
  minAgeMs: number,
): string[] {
  const candidates = [...records.entries()]
    .filter(([id, r]) => !inUse.has(id) && !r.pinned && nowMs - r.firstDetectedMs >= minAgeMs)
    .sort((a, b) => a[1].lastUsedMs - b[1].lastUsedMs || a[1].firstDetectedMs - b[1].firstDetectedMs);
  const out: string[] = [];
  let freed = 0;
  for (const [id, r] of candidates) {
    if (freed >= amount) break;
    out.push(id);
    freed += r.size;
  }
  return out;
}

/**
 * The images unused for longer than `maxAgeMs` (pure): never used since detected counts as unused forever, as upstream.
 */
export function imagesTooOld(
  records: ReadonlyMap<string, ImageRecord>,
  inUse: ReadonlySet<string>,
  nowMs: number,
  maxAgeMs: number,
): string[] {
  return [...records.entries()]
    .filter(([id, r]) => !inUse.has(id) && !r.pinned && nowMs - r.lastUsedMs > maxAgeMs)
    .map(([id]) => id);
}

/** What the image GC needs. */
export interface ImageGcDeps {
  runtime: RuntimeService;
  images: ImageService;
  clock: Clock;
  logger: Logger;
  policy: ImageGcPolicy;
  /** Images never removed besides pinned ones (the sandbox image). */
  protectedImages(): Promise<string[]>;
  /** The images of the image volumes of the pods the kubelet runs: in use while those pods are. */
  imageVolumeImages?(): string[];
  /** Told of each image removed and why (kubelet_image_garbage_collected_total{reason}). */
  onRemoved?(reason: 'age' | 'space'): void;
  /**
   * Told after each pass of the images still on the node and when they were listed (upstream's
   * post-GC hooks: the pull records of images gone are pruned).
   */
  afterPass?(remainingImageIds: ReadonlySet<string>, listedAtMs: number): Promise<unknown>;
  /** Where the Node's InvalidDiskCapacity and FreeDiskSpaceFailed warnings go (upstream's image manager events). */
  nodeEvents?: (type: 'Warning', reason: string, message: string) => void;
}

/** Tracks images and frees space when asked. */
export class ImageGc {
  private readonly records = new Map<string, ImageRecord>();
  /** The records' times and the start are on the clock's monotonic reading (ages, as upstream's time.Now readings). */
  private readonly startedMs: number;
  constructor(private readonly deps: ImageGcDeps) {
    this.startedMs = deps.clock.monotonic();
  }

  /** Updates the records; returns the ids in use by any container. */
  private async detect(): Promise<{ inUse: Set<string>; byName: Map<string, string> }> {
    const now = this.deps.clock.monotonic();
    const [images, containers, protectedNames] = await Promise.all([
      this.deps.images.listImages(),
      this.deps.runtime.listContainers(),
      this.deps.protectedImages(),
    ]);
    const byName = new Map<string, string>();
    for (const img of images)
      for (const n of [img.id, ...(img.repo_tags ?? []), ...(img.repo_digests ?? [])]) byName.set(n, img.id);
    const inUse = new Set<string>();
    for (const c of containers) {
      const id = byName.get(c.image_ref) ?? byName.get(c.image?.image ?? '') ?? c.image_ref;
      inUse.add(id);
    }
    for (const n of [...protectedNames, ...(this.deps.imageVolumeImages?.() ?? [])]) {
      const id = byName.get(n);
      if (id) inUse.add(id);
    }
    const seen = new Set<string>();
    for (const img of images) {
      seen.add(img.id);
      const r = this.records.get(img.id) ?? {
        firstDetectedMs: now,
        lastUsedMs: 0,
        size: Number(img.size) || 0,
        pinned: false,
      };
      r.pinned = !!img.pinned;
      r.size = Number(img.size) || 0;
      if (inUse.has(img.id)) r.lastUsedMs = now;
      this.records.set(img.id, r);
    }
    for (const id of [...this.records.keys()]) if (!seen.has(id)) this.records.delete(id);
    return { inUse, byName };
  }

  /**
   * One pass: detect, and free space if usage is above the high threshold; then the after-pass
   * hook. Returns the removed ids.
   */
  async garbageCollect(): Promise<string[]> {
    const listedAtMs = this.deps.clock.now();
    const { inUse } = await this.detect();
    try {
      return await this.collect(inUse);
    } finally {
      // The images were listed: also after a pass that could not free enough, those it removed are gone.
      await this.deps.afterPass?.(new Set(this.records.keys()), listedAtMs);
    }
  }

  /**
   * Removes every unused image old enough (imageMinimumGCAge), never a pinned or sandbox one, whatever the disk usage:
   * the eviction manager's reclaim under disk pressure (upstream DeleteUnusedImages). Returns the removed ids.
   */
  async deleteUnusedImages(): Promise<string[]> {
    this.deps.logger.info('Attempting to delete unused images');
    const listedAtMs = this.deps.clock.now();
    const { inUse } = await this.detect();
    const now = this.deps.clock.monotonic();
    const unused = imagesToFree(this.records, inUse, Infinity, now, this.deps.policy.minAgeMs);
    const removed = await this.remove(unused, 'space');
    this.deps.logger.info({ removed: removed.length }, 'deleted unused images to reclaim disk space');
    await this.deps.afterPass?.(new Set(this.records.keys()), listedAtMs);
    return removed;
  }

  /** Frees what the age and the disk usage ask, given the images `inUse` that detect() found. */
  private async collect(inUse: ReadonlySet<string>): Promise<string[]> {
    const now = this.deps.clock.monotonic();
    const maxAge = this.deps.policy.maxAgeMs ?? 0;
    const removed: string[] = [];
    if (maxAge > 0 && now - this.startedMs >= maxAge) {
      const old = await this.remove(imagesTooOld(this.records, inUse, now, maxAge), 'age');
      if (old.length)
        this.deps.logger.info(
          { removed: old.length, maxAgeMs: maxAge },
          'removed images unused for longer than imageMaximumGCAge',
        );
      removed.push(...old);
    }
    const fs = (await this.deps.images.imageFsInfo()).image_filesystems[0] as cri.FilesystemUsage | undefined;
    const mount = fs?.fs_id?.mountpoint;
    if (!mount) return removed;
    const st = await statfs(mount);
    const capacity = st.blocks * st.bsize;
    const available = st.bavail * st.bsize;
    if (capacity === 0) return this.fail('InvalidDiskCapacity', 'invalid capacity 0 on image filesystem');
    const amount = bytesToFree(capacity, available, this.deps.policy);
    if (amount <= 0) return removed;
    const chosen = imagesToFree(this.records, inUse, amount, now, this.deps.policy.minAgeMs);
    const sizes = new Map(chosen.map((id) => [id, this.records.get(id)?.size ?? 0] as const));
    const freed = await this.remove(chosen, 'space');
    this.deps.logger.info({ wantedBytes: amount, removed: freed.length }, 'image garbage collection');
    const freedBytes = freed.reduce((n, id) => n + (sizes.get(id) ?? 0), 0);
    if (freedBytes < amount)
      return this.fail('FreeDiskSpaceFailed', freeDiskSpaceFailedMessage(capacity, available, freedBytes));
    return [...removed, ...freed];
  }

  /** Warns on the Node and fails the pass with `message`, as upstream's image manager. */
  private fail(reason: string, message: string): never {
    this.deps.nodeEvents?.('Warning', reason, message);
    throw new Error(message);
  }

  /** Removes `ids` for `reason`; returns those removed. */
  private async remove(ids: string[], reason: 'age' | 'space'): Promise<string[]> {
    const removed: string[] = [];
    for (const id of ids) {
      try {
        await this.deps.images.removeImage({ image: id });
        this.records.delete(id);
        removed.push(id);
        this.deps.onRemoved?.(reason);
      } catch (err) {
        this.deps.logger.warn({ image: id, err: messageOf(err) }, 'failed to remove image');
      }
    }
    return removed;
  }
}
