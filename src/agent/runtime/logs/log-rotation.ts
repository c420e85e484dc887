/**
 * Container log rotation (upstream pkg/kubelet/logs container log manager): every
 * containerLogMonitorInterval, the log of each running container larger than containerLogMaxSize
 * is rotated — the file is renamed to `<log>.<YYYYMMDD-hhmmss>`, the runtime is asked to reopen
 * it (CRI ReopenContainerLog; on failure the rename is undone), rotated files other than the
 * newest are gzip-compressed (`.gz`), and the oldest are removed so that at most
 * containerLogMaxFiles files (the live one included) remain. A chatty container cannot fill the disk.
 *
 * A log that grows fast would pass the limit many times over between two passes (a container
 * printing 10 MB/s with the default 10 Mi and 10 s): each log's growth since its last look says
 * when it will reach the limit, and that log alone is looked at again then (within
 * FAST_CHECK_MIN_MS and the interval). A rotation that fails half-way leaves no partial file.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { RuntimeService } from '../../../cri/services.js';
import { sleep, type Clock } from '../../../lib/clock.js';
import type { Logger } from '../../../lib/logger.js';
import { messageOf } from '../../../lib/errors.js';
import { statSyncOrUndefined } from '../../../lib/fs-util.js';

/** Upstream's timestamp suffix of rotated logs (Go layout 20060102-150405). */
export function rotationSuffix(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`;
}

/** Rotated files of `log` (`<log>.<timestamp>[.gz]`), oldest first. */
export async function rotatedLogs(log: string): Promise<string[]> {
  const base = basename(log);
  const re = new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.\\d{8}-\\d{6}(\\.gz)?$`);
  return (await readdir(dirname(log)).catch(() => [] as string[]))
    .filter((n) => re.test(n))
    .sort()
    .map((n) => join(dirname(log), n));
}

/** The shortest wait before a fast-growing log is looked at again. */
export const FAST_CHECK_MIN_MS = 200;

/** When a log seen for the first time is looked at again, to learn how fast it grows. */
const FIRST_RATE_SAMPLE_MS = 250;

/**
 * When to look at a log again, in ms: when it will reach `maxBytes` at the rate it grew since the
 * last look (`grownBytes` in `elapsedMs`), within FAST_CHECK_MIN_MS and `intervalMs`. Pure.
 */
export function nextCheckInMs(o: {
  sizeBytes: number;
  grownBytes: number;
  elapsedMs: number;
  maxBytes: number;
  intervalMs: number;
}): number {
  if (o.grownBytes <= 0 || o.elapsedMs <= 0) return o.intervalMs;
  const untilFull = ((o.maxBytes - o.sizeBytes) * o.elapsedMs) / o.grownBytes;
  return Math.min(o.intervalMs, Math.max(FAST_CHECK_MIN_MS, untilFull));
}

/** Compresses `file` to `file.gz` through a temporary file that a failure (a full disk) removes. */
async function compress(file: string): Promise<void> {
  const partial = `${file}.tmp.gz`;
  try {
    await pipeline(createReadStream(file), createGzip(), createWriteStream(partial));
    await rename(partial, `${file}.gz`);
  } catch (err) {
    await rm(partial, { force: true });
    throw err;
  }
  await rm(file, { force: true });
}

/**
 * What the manager knows of one running container's log. Its times are the clock's monotonic ones: a wall clock
 * stepped back does not put the next look at a growing log off (while the disk fills).
 */
interface WatchedLog {
  path: string;
  sizeBytes: number;
  seenAtMs: number;
  /** When the log is looked at again. */
  dueAtMs: number;
}

/** Rotates container logs. */
export class ContainerLogManager {
  /** By container ID: a container's log path never changes, so it is asked once. */
  private readonly logs = new Map<string, WatchedLog>();
  private lastFullPassAtMs = -Infinity;

  constructor(
    private readonly deps: {
      runtime: RuntimeService;
      clock: Clock;
      logger: Logger;
      maxSizeBytes: number;
      maxFiles: number;
      intervalMs: number;
      /** How many logs are looked at (and rotated) at once (containerLogMaxWorkers; default 1). */
      maxWorkers?: number;
    },
  ) {}

  /** One pass over the running containers (one ContainerStatus per new container, a stat per log). */
  async rotateOnce(): Promise<void> {
    const now = this.deps.clock.monotonic();
    this.lastFullPassAtMs = now;
    const containers = (await this.deps.runtime.listContainers()).filter((c) => c.state === 'CONTAINER_RUNNING');
    const live = new Set(containers.map((c) => c.id));
    for (const id of [...this.logs.keys()]) if (!live.has(id)) this.logs.delete(id);
    await this.inWorkers(
      containers.map((c) => c.id),
      async (id) => {
        if (!this.logs.has(id)) {
          let path: string;
          try {
            path = (await this.deps.runtime.containerStatus(id)).status.log_path;
          } catch {
            return;
          }
          this.logs.set(id, { path, sizeBytes: 0, seenAtMs: now, dueAtMs: now });
        }
        await this.check(id, now);
      },
    );
  }

  /** Looks at the logs due by now (no list: the fast-growing ones between full passes). */
  async rotateDue(): Promise<void> {
    const now = this.deps.clock.monotonic();
    const due = [...this.logs].filter(([, log]) => log.dueAtMs <= now).map(([id]) => id);
    await this.inWorkers(due, (id) => this.check(id, now));
  }

  /** Runs `work` for each of `ids`, at most maxWorkers at once, as upstream's worker pool of log rotations. */
  private async inWorkers(ids: readonly string[], work: (id: string) => Promise<void>): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < ids.length) await work(ids[next++]);
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(this.deps.maxWorkers ?? 1, ids.length)) }, worker));
  }

  private async check(id: string, now: number): Promise<void> {
    const log = this.logs.get(id);
    if (!log?.path) return;
    // Read synchronously (lib/fs-util.ts): every running container, every interval.
    let size = statSyncOrUndefined(log.path)?.size ?? 0;
    const grown = size - log.sizeBytes;
    if (size > this.deps.maxSizeBytes) {
      const rotated = await this.rotate(id, log.path).then(
        () => true,
        (err: unknown) => {
          this.deps.logger.warn({ containerId: id, err: messageOf(err) }, 'failed to rotate container log');
          return false;
        },
      );
      if (rotated) size = 0;
    }
    // A log seen for the first time has no rate yet: a second look soon gives it one.
    const inMs =
      now === log.seenAtMs
        ? Math.min(this.deps.intervalMs, FIRST_RATE_SAMPLE_MS)
        : nextCheckInMs({
            sizeBytes: size,
            grownBytes: grown,
            elapsedMs: now - log.seenAtMs,
            maxBytes: this.deps.maxSizeBytes,
            intervalMs: this.deps.intervalMs,
          });
    Object.assign(log, { sizeBytes: size, seenAtMs: now, dueAtMs: now + inMs });
  }

  private async rotate(id: string, log: string): Promise<void> {
    // 1. Keep room: at most maxFiles − 2 rotated files before adding one (the live file and the new rotated one count
    // too).
    const old = await rotatedLogs(log);
    for (const f of old.slice(0, Math.max(0, old.length - (this.deps.maxFiles - 2)))) await rm(f, { force: true });
    // 2. Compress every rotated file that is not compressed yet (the newest one stays plain until the next rotation).
    for (const f of (await rotatedLogs(log)).filter((x) => !x.endsWith('.gz'))) await compress(f);
    // 3. Rename and reopen.
    let target = `${log}.${rotationSuffix(this.deps.clock.now())}`;
    if (
      await stat(target).then(
        () => true,
        () => false,
      )
    )
      target = `${log}.${rotationSuffix(this.deps.clock.now() + 1000)}`;
    await rename(log, target);
    try {
      await this.deps.runtime.reopenContainerLog(id);
    } catch (err) {
      await rename(target, log).catch(() => {});
      throw err;
    }
  }

  /** Rotates every interval, and fast-growing logs when they are due, until `signal` aborts. */
  start({ signal }: { signal: AbortSignal }): void {
    void (async () => {
      while (!signal.aborted) {
        const nextFull = this.lastFullPassAtMs + this.deps.intervalMs;
        const next = Math.min(nextFull, ...[...this.logs.values()].map((l) => l.dueAtMs));
        await sleep(Math.max(FAST_CHECK_MIN_MS, next - this.deps.clock.monotonic()), signal, this.deps.clock);
        if (signal.aborted) break;
        const pass = this.deps.clock.monotonic() >= nextFull ? this.rotateOnce() : this.rotateDue();
        await pass.catch((err: unknown) =>
          this.deps.logger.warn({ err: messageOf(err) }, 'container log rotation failed'),
        );
      }
    })();
  }
}
