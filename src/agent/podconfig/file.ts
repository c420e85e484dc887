/**
 * The static pod file source: a directory (every non-hidden regular file) or a single file,
 * re-read on filesystem events (debounced) and every `periodMs` (a file whose stat has not changed
 * since it was read, settled, is not opened again). A file that fails to decode is
 * reported with its path and reason; the pods it produced last time are kept (an editor's
 * half-written save does not kill a running pod). A deleted file's pods go away; a file deleted
 * (or moved away) and created again between two reads — two `rename` events for its name — has
 * its pods removed and added again, as upstream's inotify source sees it: a pod whose manifest is
 * put back with the same content (same UID) is restarted.
 * Only regular files (a symlink is followed to one) of at most MAX_MANIFEST_BYTES are read, and
 * without blocking: directories, FIFOs, devices, sockets, dangling symlinks and symlink loops are
 * skipped with a log line naming the file and the reason, as are empty files and files without
 * pods; a pod name that two files both define is kept from the first file and the second named.
 * Each of these is logged once per change, not on every check.
 * Long manifests are decoded in a bounded worker (decode-off-thread.ts); while one decodes, the
 * other files' pods go on being read and its own last good pods stand. Text that failed to decode
 * is not decoded again until it changes.
 */
import { readdirSync, statSync, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { Pod } from '../../api/types.js';
import type { Logger } from '../../lib/logger.js';
import type { CancelTimer, Clock } from '../../lib/clock.js';
import { decodeManifestsOffThread, type ManifestDecoder } from './decode-off-thread.js';
import { FileDecodes } from './file-decodes.js';
import { readManifest, type ReadManifest } from './read-manifest.js';
import { statSyncOrUndefined } from '../../lib/fs-util.js';
import { namedStaticPods, toStaticPod } from './static-pod.js';
import type { PodSource } from './types.js';
/** Quiet time after a filesystem event before re-reading, so one editor save is read once, whole. */
const WATCH_SETTLE_MS = 30;
/**
 * The longest a burst of events (100 manifests being written) holds the read back: its files written so far are read
 * then.
 */
const WATCH_MAX_WAIT_MS = 30;

/** What the file source needs. */
export interface FileSourceDeps {
  path: string;
  nodeName: string;
  periodMs: number;
  logger: Logger;
  clock: Clock;
  /** Decodes long manifest text off the event loop (default decodeManifestsOffThread). */
  decode?: ManifestDecoder;
}

/** PodSource over a manifest directory or file. */
export class FileSource implements PodSource {
  readonly name = 'file';
  private readonly lastGood = new Map<string, ReadManifest & { pods: Pod[] }>();
  private readonly reported = new Map<string, string>();
  /** Decodes by file (long text in a worker, failures remembered); reads again when one is done. */
  private readonly decodes: FileDecodes;
  /** Reads again (set by start): a decode in a worker has finished. */
  private wakeup: (() => void) | undefined;
  /** The pods of the last read. */
  private lastPods: Pod[] = [];
  /** `rename` events (creation, deletion, moves) by file since its last read. */
  private renames = new Map<string, number>();

  constructor(private readonly deps: FileSourceDeps) {
    this.decodes = new FileDecodes(deps.decode ?? decodeManifestsOffThread, () => this.wakeup?.());
  }

  start({ signal, emit }: { signal: AbortSignal; emit: (pods: Pod[]) => void }): void {
    const clock = this.deps.clock;
    let periodic: CancelTimer | undefined;
    // The read that filesystem events asked for, and when the first of them came (unread since).
    let pending: CancelTimer | undefined;
    let burstSince: number | undefined;
    let running = false;
    let again = false;
    // The first read waits for every decode: until a source has delivered its pods, the kubelet
    // does not clean up pods it does not know, and a pod missing from it would be killed.
    let first = true;
    const run = async () => {
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        do {
          again = false;
          burstSince = undefined;
          const { pods, replaced } = await this.read({ signal, wait: first });
          first = false;
          if (!signal.aborted && replaced.size) emit(pods.filter((p) => !replaced.has(p)));
          if (!signal.aborted) emit(pods);
        } while (again && !signal.aborted);
      } catch (err) {
        this.deps.logger.error(
          { path: this.deps.path, err: (err as Error).message },
          'failed to read the static pod path',
        );
      } finally {
        running = false;
      }
    };
    const tick = () => {
      if (!signal.aborted) periodic = clock.setTimer(() => void run().finally(tick), this.deps.periodMs);
    };
    // A read WATCH_SETTLE_MS after the last event, and no later than WATCH_MAX_WAIT_MS after the first.
    const onEvent = () => {
      const now = clock.now();
      burstSince ??= now;
      pending?.();
      pending = clock.setTimer(
        () => {
          pending = undefined;
          void run();
        },
        Math.max(0, Math.min(WATCH_SETTLE_MS, burstSince + WATCH_MAX_WAIT_MS - now)),
      );
    };
    let watcher: FSWatcher | undefined;
    const tryWatch = () => {
      if (watcher) return;
      try {
        const single = statSync(this.deps.path).isFile();
        watcher = watch(this.deps.path, { persistent: false }, (event, name) => {
          const f = single ? this.deps.path : name ? join(this.deps.path, name) : undefined;
          if (event === 'rename' && f) this.renames.set(f, (this.renames.get(f) ?? 0) + 1);
          onEvent();
        });
        watcher.on('error', () => {
          watcher?.close();
          watcher = undefined;
        });
      } catch {
        /* path missing: the periodic check retries */
      }
    };
    tryWatch();
    this.wakeup = () => void run();
    void run().finally(tick);
    const retryWatch = setInterval(tryWatch, Math.max(1000, this.deps.periodMs));
    retryWatch.unref();
    signal.addEventListener(
      'abort',
      () => {
        periodic?.();
        pending?.();
        watcher?.close();
        clearInterval(retryWatch);
      },
      { once: true },
    );
  }

  /** The files to read; undefined when the directory cannot be listed now (logged; its pods stand, as upstream's). */
  private files(): string[] | undefined {
    const p = this.deps.path;
    const st = statSyncOrUndefined(p);
    if (!st) {
      if (!this.reported.has(p)) {
        this.deps.logger.warn({ path: p }, 'static pod path does not exist (yet)');
        this.reported.set(p, 'missing');
      }
      return [];
    }
    let names: string[] | undefined;
    try {
      names = st.isFile() ? undefined : readdirSync(p).filter((n) => !n.startsWith('.'));
    } catch (err) {
      this.note(p, `cannot list manifest path ${p}: ${(err as Error).message}`, 'error');
      return undefined;
    }
    this.reported.delete(p);
    return names ? names.map((n) => join(p, n)).sort() : [p];
  }

  /** Logs `message` for `file` unless it was the last thing logged for it. */
  private note(file: string, message: string, level: 'warn' | 'error' = 'warn'): void {
    if (this.reported.get(file) === message) return;
    this.reported.set(file, message);
    this.deps.logger[level]({ file }, message);
  }

  /** Reads every manifest and returns the current static pods. */
  async readAll(): Promise<Pod[]> {
    return (await this.read({ wait: true })).pods;
  }

  /** Reads every manifest: the current static pods, and those of files replaced since the last read (same text). */
  async read({ signal, wait = false }: { signal?: AbortSignal; wait?: boolean } = {}): Promise<{
    pods: Pod[];
    replaced: Set<Pod>;
  }> {
    const renames = this.renames;
    this.renames = new Map();
    const replaced = new Set<Pod>();
    const files = this.files();
    if (!files) return { pods: this.lastPods, replaced };
    const out: Pod[] = [];
    const owner = new Map<string, string>();
    const dupsNow = new Set<string>();
    const take = (f: string, pods: Pod[]) => {
      for (const p of pods) {
        const key = `${p.metadata.name}_${p.metadata.namespace}`;
        const first = owner.get(key);
        if (first && first !== f) {
          dupsNow.add(`${f}#dup`);
          this.note(
            `${f}#dup`,
            `duplicate pod name "${p.metadata.name}" in namespace "${p.metadata.namespace}": defined by ${first} and ${f}; ignoring the one in ${f}`,
          );
          continue;
        }
        owner.set(key, f);
        out.push(p);
      }
    };
    for (const f of files) {
      const cached = this.lastGood.get(f);
      const got = readManifest(f, cached);
      if (got && 'skip' in got) this.note(f, got.skip, got.level);
      if (!got || 'skip' in got) continue;
      const { read } = got;
      const { text } = read;
      if (cached && cached.text === text) {
        // Same text: the pods stand (a decode of other text it held meanwhile is stopped); a file
        // read again keeps its new stat and read time.
        this.decodes.forget(f);
        if (read !== cached) this.lastGood.set(f, { ...read, pods: cached.pods });
        if ((renames.get(f) ?? 0) >= 2) for (const p of cached.pods) replaced.add(p);
        take(f, cached.pods);
        continue;
      }
      if (!text.trim()) {
        this.decodes.forget(f);
        this.note(f, `skipping manifest ${f}: the file is empty`);
        this.lastGood.set(f, { ...read, pods: [] });
        continue;
      }
      let r = this.decodes.outcome(f, text, signal);
      if (r === undefined && wait) r = await this.decodes.wait(f);
      if (signal?.aborted) break;
      if (r === undefined) {
        // Still decoding: its pods of the last good text stand until it is done.
        if (cached) take(f, cached.pods);
        continue;
      }
      this.decodes.taken(f, r);
      r = namedStaticPods(r, (p) => toStaticPod(p, { nodeName: this.deps.nodeName, kind: 'file', location: f }), f);
      if (r.errors.length) this.note(f, `could not process manifest file ${f}: ${r.errors.join('; ')}`, 'error');
      else if (!r.pods.length) this.note(f, `skipping manifest ${f}: it defines no pods`);
      else this.reported.delete(f);
      if (r.errors.length && r.pods.length === 0 && cached) {
        take(f, cached.pods);
        continue;
      }
      this.lastGood.set(f, { ...read, pods: r.pods });
      take(f, r.pods);
    }
    for (const f of [...this.lastGood.keys()]) if (!files.includes(f)) this.lastGood.delete(f);
    this.decodes.keepOnly(files);
    for (const k of [...this.reported.keys()]) {
      if (k.endsWith('#dup') ? !dupsNow.has(k) : !files.includes(k) && k !== this.deps.path) this.reported.delete(k);
    }
    this.lastPods = out;
    return { pods: out, replaced };
  }
}
