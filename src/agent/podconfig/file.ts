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
import { constants, statSync, watch, type FSWatcher } from 'node:fs';
import { lstat, open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pod } from '../../api/types.js';
import type { Logger } from '../../lib/logger.js';
import type { Clock } from '../../lib/clock.js';
import { MAX_MANIFEST_BYTES } from './decode.js';
import { decodeManifestsOffThread, type ManifestDecoder } from './decode-off-thread.js';
import { FileDecodes } from './file-decodes.js';
import { toStaticPod } from './static-pod.js';
import type { PodSource } from './types.js';
/** Quiet time after a filesystem event before re-reading, so one editor save is read once, whole. */
const WATCH_SETTLE_MS = 30;

/** A manifest's text, the stat it had when read (fileSignature) and when it was read. */
interface ReadManifest {
  text: string;
  sig: string;
  readAtMs: number;
}

/** How much older than the read a file's last change must be for its stat to stand for its text. */
export const SETTLED_MS = 2000;

/** What of a file's stat tells whether it changed. */
export interface FileStamps {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

/** A regular file's identity and change stamps: device, inode, size, mtime, ctime (ns where the filesystem has them). */
export function fileSignature(st: FileStamps): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}

/**
 * Whether a file whose stat is now `st` still holds the text read at `read.readAtMs`: the same
 * signature, and its last change was SETTLED_MS before that read, so a write in the same timestamp
 * tick as the read (coarse-grained filesystems) cannot hide behind an unchanged stat. Pure.
 */
export function unchangedSince(read: { sig: string; readAtMs: number }, st: FileStamps): boolean {
  return read.sig === fileSignature(st) && Math.max(st.mtimeMs, st.ctimeMs) < read.readAtMs - SETTLED_MS;
}

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
  /** `rename` events (creation, deletion, moves) by file since its last read. */
  private renames = new Map<string, number>();

  constructor(private readonly deps: FileSourceDeps) {
    this.decodes = new FileDecodes(deps.decode ?? decodeManifestsOffThread, () => this.wakeup?.());
  }

  start({ signal, emit }: { signal: AbortSignal; emit: (pods: Pod[]) => void }): void {
    let timer: (() => void) | undefined;
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
          const { pods, replaced } = await this.read({ signal, wait: first });
          first = false;
          if (!signal.aborted && replaced.size) emit(pods.filter((p) => !replaced.has(p)));
          if (!signal.aborted) emit(pods);
        } while (again && !signal.aborted);
      } finally {
        running = false;
      }
    };
    const schedule = (ms: number) => {
      timer?.();
      timer = this.deps.clock.setTimer(() => {
        void run().then(() => schedule(this.deps.periodMs));
      }, ms);
    };
    let watcher: FSWatcher | undefined;
    const tryWatch = () => {
      if (watcher) return;
      try {
        const single = statSync(this.deps.path).isFile();
        watcher = watch(this.deps.path, { persistent: false }, (event, name) => {
          const f = single ? this.deps.path : name ? join(this.deps.path, name) : undefined;
          if (event === 'rename' && f) this.renames.set(f, (this.renames.get(f) ?? 0) + 1);
          schedule(WATCH_SETTLE_MS);
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
    void run().then(() => schedule(this.deps.periodMs));
    const retryWatch = setInterval(tryWatch, Math.max(1000, this.deps.periodMs));
    retryWatch.unref();
    signal.addEventListener(
      'abort',
      () => {
        timer?.();
        watcher?.close();
        clearInterval(retryWatch);
      },
      { once: true },
    );
  }

  private async files(): Promise<string[]> {
    const p = this.deps.path;
    const st = await stat(p).catch(() => undefined);
    if (!st) {
      if (!this.reported.has(p)) {
        this.deps.logger.warn({ path: p }, 'static pod path does not exist (yet)');
        this.reported.set(p, 'missing');
      }
      return [];
    }
    this.reported.delete(p);
    if (st.isFile()) return [p];
    const names = (await readdir(p)).filter((n) => !n.startsWith('.'));
    return names.map((n) => join(p, n)).sort();
  }

  /** Logs `message` for `file` unless it was the last thing logged for it. */
  private note(file: string, message: string, level: 'warn' | 'error' = 'warn'): void {
    if (this.reported.get(file) === message) return;
    this.reported.set(file, message);
    this.deps.logger[level]({ file }, message);
  }

  /**
   * The text of `f` when it is a regular file within the size cap; otherwise notes why not. Never
   * blocks on a FIFO. A file whose stat is what it was at the last read, and was already settled
   * then, is not read again (`unchangedSince`).
   */
  private async readManifest(f: string, cached: ReadManifest | undefined): Promise<ReadManifest | undefined> {
    let st;
    try {
      // Synchronous: every file, every fileCheckFrequency; asynchronous, a stat cost five times the CPU under V8's interpreter.
      st = statSync(f);
    } catch (err) {
      // Gone since the directory was listed: nothing to say. Otherwise it is a link to nothing (or a loop).
      if (!(await lstat(f).catch(() => undefined))) return undefined;
      const code = (err as NodeJS.ErrnoException).code;
      this.note(
        f,
        code === 'ELOOP'
          ? `skipping manifest ${f}: symlink loop`
          : code === 'ENOENT'
            ? `skipping manifest ${f}: dangling symlink`
            : `skipping manifest ${f}: ${(err as Error).message}`,
      );
      return undefined;
    }
    if (st.isDirectory()) {
      this.note(f, `not recursing into manifest path ${f}: it is a directory`);
      return undefined;
    }
    if (!st.isFile()) {
      this.note(f, `skipping manifest ${f}: not a regular file`);
      return undefined;
    }
    if (st.size > MAX_MANIFEST_BYTES) {
      this.note(f, `skipping manifest ${f}: larger than ${MAX_MANIFEST_BYTES} bytes`, 'error');
      return undefined;
    }
    if (cached && unchangedSince(cached, st)) return cached;
    const sig = fileSignature(st);
    const readAtMs = Date.now();
    let fh;
    try {
      fh = await open(f, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch {
      return undefined;
    }
    try {
      if (!(await fh.stat()).isFile()) {
        this.note(f, `skipping manifest ${f}: not a regular file`);
        return undefined;
      }
      // Read in chunks sized to the file (not the cap: a scan of 100 small manifests must not allocate 1 GB).
      const chunks: Buffer[] = [];
      let n = 0;
      for (;;) {
        const chunk = Buffer.allocUnsafe(Math.min(Math.max(st.size + 1, 4096), 1 << 20));
        const { bytesRead } = await fh.read(chunk, 0, chunk.length, null);
        if (!bytesRead) break;
        n += bytesRead;
        if (n > MAX_MANIFEST_BYTES) {
          this.note(f, `skipping manifest ${f}: larger than ${MAX_MANIFEST_BYTES} bytes`, 'error');
          return undefined;
        }
        chunks.push(chunk.subarray(0, bytesRead));
      }
      return { text: Buffer.concat(chunks, n).toString('utf8'), sig, readAtMs };
    } catch {
      return undefined;
    } finally {
      await fh.close();
    }
  }

  /** Reads every manifest and returns the current static pods. */
  async readAll(): Promise<Pod[]> {
    return (await this.read({ wait: true })).pods;
  }

  /** Reads every manifest: the current static pods, and those of files replaced since the last read (same text). */
  async read({ signal, wait = false }: { signal?: AbortSignal; wait?: boolean } = {}): Promise<{ pods: Pod[]; replaced: Set<Pod> }> {
    const renames = this.renames;
    this.renames = new Map();
    const replaced = new Set<Pod>();
    const files = await this.files();
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
      const read = await this.readManifest(f, cached);
      if (read === undefined) continue;
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
      if (r.errors.length) this.note(f, `could not process manifest file ${f}: ${r.errors.join('; ')}`, 'error');
      else if (!r.pods.length) this.note(f, `skipping manifest ${f}: it defines no pods`);
      else this.reported.delete(f);
      if (r.errors.length && r.pods.length === 0 && cached) {
        take(f, cached.pods);
        continue;
      }
      const pods = r.pods.map((p) => toStaticPod(p, { nodeName: this.deps.nodeName, kind: 'file', location: f }));
      this.lastGood.set(f, { ...read, pods });
      take(f, pods);
    }
    for (const f of [...this.lastGood.keys()]) if (!files.includes(f)) this.lastGood.delete(f);
    this.decodes.keepOnly(files);
    for (const k of [...this.reported.keys()]) {
      if (k.endsWith('#dup') ? !dupsNow.has(k) : !files.includes(k) && k !== this.deps.path) this.reported.delete(k);
    }
    return { pods: out, replaced };
  }
}
