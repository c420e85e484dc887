/**
 * Container log rotation (upstream pkg/kubelet/logs container log manager): every
 * containerLogMonitorInterval, the log of each running container larger than containerLogMaxSize
 * is rotated — the file is renamed to `<log>.<YYYYMMDD-hhmmss>`, the runtime is asked to reopen
 * it (CRI ReopenContainerLog; on failure the rename is undone), rotated files other than the
 * newest are gzip-compressed (`.gz`), and the oldest are removed so that at most
 * containerLogMaxFiles files (the live one included) remain. A chatty container cannot fill the disk.
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

/** Rotates container logs. */
export class ContainerLogManager {
  /** Log path per container ID: a container's log path never changes, so it is asked once. */
  private readonly paths = new Map<string, string>();

  constructor(private readonly d: { runtime: RuntimeService; clock: Clock; logger: Logger; maxSizeBytes: number; maxFiles: number; intervalMs: number }) {}

  /** One pass over the running containers (one ContainerStatus per new container, a stat per log). */
  async rotateOnce(): Promise<void> {
    const containers = (await this.d.runtime.listContainers()).filter((c) => c.state === 'CONTAINER_RUNNING');
    const live = new Set(containers.map((c) => c.id));
    for (const id of [...this.paths.keys()]) if (!live.has(id)) this.paths.delete(id);
    for (const c of containers) {
      let logPath = this.paths.get(c.id);
      if (logPath === undefined) {
        try {
          logPath = (await this.d.runtime.containerStatus(c.id)).status.log_path;
        } catch {
          continue;
        }
        this.paths.set(c.id, logPath);
      }
      if (!logPath) continue;
      // Read synchronously (lib/fs-util.ts): every running container, every interval.
      if ((statSyncOrUndefined(logPath)?.size ?? 0) <= this.d.maxSizeBytes) continue;
      await this.rotate(c.id, logPath).catch((err: unknown) =>
        this.d.logger.warn({ containerId: c.id, err: messageOf(err) }, 'failed to rotate container log'),
      );
    }
  }

  private async rotate(id: string, log: string): Promise<void> {
    // 1. Keep room: at most maxFiles − 2 rotated files before adding one (the live file and the new rotated one count too).
    const old = await rotatedLogs(log);
    for (const f of old.slice(0, Math.max(0, old.length - (this.d.maxFiles - 2)))) await rm(f, { force: true });
    // 2. Compress every rotated file that is not compressed yet (the newest one stays plain until the next rotation).
    for (const f of (await rotatedLogs(log)).filter((x) => !x.endsWith('.gz'))) {
      await pipeline(createReadStream(f), createGzip(), createWriteStream(`${f}.tmp.gz`));
      await rename(`${f}.tmp.gz`, `${f}.gz`);
      await rm(f, { force: true });
    }
    // 3. Rename and reopen.
    let target = `${log}.${rotationSuffix(this.d.clock.now())}`;
    if (
      await stat(target).then(
        () => true,
        () => false,
      )
    )
      target = `${log}.${rotationSuffix(this.d.clock.now() + 1000)}`;
    await rename(log, target);
    try {
      await this.d.runtime.reopenContainerLog(id);
    } catch (err) {
      await rename(target, log).catch(() => {});
      throw err;
    }
  }

  /** Rotates every interval until `signal` aborts. */
  start({ signal }: { signal: AbortSignal }): void {
    void (async () => {
      while (!signal.aborted) {
        await sleep(this.d.intervalMs, signal, this.d.clock);
        if (signal.aborted) break;
        await this.rotateOnce().catch((err: unknown) => this.d.logger.warn({ err: messageOf(err) }, 'container log rotation failed'));
      }
    })();
  }
}
