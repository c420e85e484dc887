/**
 * The static pod file source: a directory (every non-hidden regular file) or a single file,
 * re-read on filesystem events (debounced) and every `periodMs`. A file that fails to decode is
 * reported with its path and reason; the pods it produced last time are kept (an editor's
 * half-written save does not kill a running pod). A deleted file's pods go away.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pod } from '../../api/types.js';
import type { Logger } from '../../lib/logger.js';
import type { Clock } from '../../lib/clock.js';
import { decodeManifests } from './decode.js';
import { toStaticPod } from './static-pod.js';
import type { PodSource } from './types.js';
/** Quiet time after a filesystem event before re-reading, so one editor save is read once, whole. */
const WATCH_SETTLE_MS = 30;

/** What the file source needs. */
export interface FileSourceDeps { path: string; nodeName: string; periodMs: number; logger: Logger; clock: Clock }

/** PodSource over a manifest directory or file. */
export class FileSource implements PodSource {
  readonly name = 'file';
  private readonly lastGood = new Map<string, { text: string; pods: Pod[] }>();
  private readonly reported = new Map<string, string>();

  constructor(private readonly deps: FileSourceDeps) {}

  start({ signal, emit }: { signal: AbortSignal; emit: (pods: Pod[]) => void }): void {
    let timer: (() => void) | undefined;
    let running = false;
    let again = false;
    const run = async () => {
      if (running) { again = true; return; }
      running = true;
      try {
        do { again = false; const pods = await this.readAll(); if (!signal.aborted) emit(pods); } while (again && !signal.aborted);
      } finally { running = false; }
    };
    const schedule = (ms: number) => { timer?.(); timer = this.deps.clock.setTimer(() => { void run().then(() => schedule(this.deps.periodMs)); }, ms); };
    let watcher: FSWatcher | undefined;
    const tryWatch = () => {
      if (watcher) return;
      try {
        watcher = watch(this.deps.path, { persistent: false }, () => schedule(WATCH_SETTLE_MS));
        watcher.on('error', () => { watcher?.close(); watcher = undefined; });
      } catch { /* path missing: the periodic check retries */ }
    };
    tryWatch();
    void run().then(() => schedule(this.deps.periodMs));
    const retryWatch = setInterval(tryWatch, Math.max(1000, this.deps.periodMs));
    retryWatch.unref();
    signal.addEventListener('abort', () => { timer?.(); watcher?.close(); clearInterval(retryWatch); }, { once: true });
  }

  private async files(): Promise<string[]> {
    const p = this.deps.path;
    const st = await stat(p).catch(() => undefined);
    if (!st) {
      if (!this.reported.has(p)) { this.deps.logger.warn({ path: p }, 'static pod path does not exist (yet)'); this.reported.set(p, 'missing'); }
      return [];
    }
    this.reported.delete(p);
    if (st.isFile()) return [p];
    const names = (await readdir(p, { withFileTypes: true })).filter((e) => !e.name.startsWith('.') && (e.isFile() || e.isSymbolicLink()));
    return names.map((e) => join(p, e.name)).sort();
  }

  /** Reads every manifest and returns the current static pods. */
  async readAll(): Promise<Pod[]> {
    const files = await this.files();
    const out: Pod[] = [];
    for (const f of files) {
      let text: string;
      try { text = await readFile(f, 'utf8'); } catch { continue; }
      const cached = this.lastGood.get(f);
      if (cached && cached.text === text) { out.push(...cached.pods); continue; }
      const r = decodeManifests(text, f);
      if (r.errors.length) {
        const msg = r.errors.join('; ');
        if (this.reported.get(f) !== msg) {
          this.deps.logger.error({ file: f, errors: r.errors }, `could not process manifest file ${f}: ${msg}`);
          this.reported.set(f, msg);
        }
      } else this.reported.delete(f);
      if (r.errors.length && r.pods.length === 0 && cached) { out.push(...cached.pods); continue; }
      const pods = r.pods.map((p) => toStaticPod(p, { nodeName: this.deps.nodeName, kind: 'file', location: f }));
      this.lastGood.set(f, { text, pods });
      out.push(...pods);
    }
    for (const f of [...this.lastGood.keys()]) if (!files.includes(f)) this.lastGood.delete(f);
    return out;
  }
}
