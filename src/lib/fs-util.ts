/** Small filesystem helpers with the atomicity the agent and the runtime rely on. */
import {
  chmod as chmodCb,
  closeSync,
  fsyncSync,
  mkdir as mkdirCb,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFile as writeFileCb,
  writeFileSync,
  type Stats,
} from 'node:fs';
import { access, mkdir, realpath, rename, rm, writeFile, readFile } from 'node:fs/promises';
import { dirname, join, posix, sep } from 'node:path';

/**
 * Writes `data` to `path` atomically (temp file + rename), creating parent dirs; a failed write (a full disk) leaves no
 * temp file.
 */
export async function writeFileAtomic(path: string, data: string | Buffer, mode = 0o644): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    await writeFile(tmp, data, { mode });
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/**
 * Writes `data` to `path` atomically and synchronously, for state files written rarely and small
 * (the checkpoints): a temporary `<path>.tmp` renamed over it, so a crash leaves the old file or the
 * new one and a full disk no partial one. `durable`: the data and the rename are on disk before it
 * returns (the file flushed, then its directory).
 */
export function writeFileAtomicSync(path: string, data: string, mode: number, o: { durable?: boolean } = {}): void {
  const tmp = `${path}.tmp`;
  try {
    writeFileSync(tmp, data, { mode, flush: o.durable });
    renameSync(tmp, path);
    if (o.durable) {
      const fd = openSync(dirname(path), 'r');
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * Writes a small file off the event loop (its directory made first, `dirMode` for those it makes), its mode set
 * exactly (`chmod`: whatever the umask). Through the callback API: each step is one thread-pool round trip
 * without fs.promises' FileHandle, and on a disk busy with a burst of container starts a create
 * waits milliseconds that the loop would otherwise spend blocked.
 */
export function writeSmallFile(
  path: string,
  data: string,
  mode: number,
  o: { chmod?: boolean; dirMode?: number } = {},
): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err: NodeJS.ErrnoException | null) => (err ? reject(err) : resolve());
    mkdirCb(dirname(path), { recursive: true, ...(o.dirMode !== undefined ? { mode: o.dirMode } : {}) }, (err) => {
      if (err) return reject(err);
      writeFileCb(path, data, { mode }, (err2) => (err2 || !o.chmod ? done(err2) : chmodCb(path, mode, done)));
    });
  });
}

/** Whether `path` exists (can be reached: access(2) with F_OK). */
export const pathExists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

/** Reads and parses a JSON file; undefined when it does not exist. */
export async function readJsonIfExists<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/*
 * Synchronous reads for the periodic scans of the kubelet's own local state (logs, links,
 * manifests): each asynchronous readdir or stat cost about five times the CPU of a synchronous
 * one under V8's interpreter (a promise, a request and an async context), every few seconds for
 * every pod; 100 of them block the loop ~2 ms.
 */

/** The names in `dir`; undefined when it cannot be read. */
export function listDirSync(dir: string): string[] | undefined {
  try {
    return readdirSync(dir);
  } catch {
    return undefined;
  }
}

/** `path`'s stat (links followed); undefined when it is gone or cannot be stat'ed. */
export function statSyncOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** Resolves a request path inside `root`, or undefined when it would leave it (pure but for realpath). */
export async function resolveInside(root: string, requested: string): Promise<string | undefined> {
  if (requested.includes('\0')) return undefined;
  const clean = posix.normalize(`/${requested}`);
  if (clean.split('/').includes('..')) return undefined;
  const rootReal = await realpath(root).catch(() => undefined);
  if (!rootReal) return undefined;
  const target = await realpath(join(rootReal, clean)).catch(() => undefined);
  if (!target || (target !== rootReal && !target.startsWith(rootReal + sep))) return undefined;
  return target;
}
