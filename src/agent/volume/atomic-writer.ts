/**
 * Upstream's atomic writer (pkg/volume/util/atomic_writer.go) for configMap, secret, downwardAPI
 * and projected volumes: a reader of the volume never sees a half-written update.
 *
 *   <dir>/..2026_11_23_06_40_00.123456789/<files>   the payload, written whole
 *   <dir>/..data -> ..2026_11_23_06_40_00.123456789  swapped atomically (rename of a new link)
 *   <dir>/<top-level name> -> ..data/<top-level name>  the paths users see
 *
 * A write validates the payload paths; compares with what `..data` holds (equal: nothing is
 * written); writes every file into a new timestamped directory (a file with an `fsUser` is chowned
 * to it); applies ownership (setPerms); creates missing user-visible links (chowned as their file);
 * swaps `..data`; removes user-visible links no longer in the payload; then removes every other
 * timestamped directory (the old one, and any left by an interrupted write).
 */
import {
  chmod,
  lchown,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** One file of a payload: content, permission bits and, for a service account token, its owner. */
export interface FileProjection {
  data: Buffer;
  mode: number;
  /** The user that owns the file and its user-visible link (upstream FileProjection.FsUser). */
  fsUser?: number;
}

/** Relative path → file. */
export type Payload = Map<string, FileProjection>;

const DATA = '..data';
const DATA_TMP = '..data_tmp';
const MAX_PATH = 4096;
const MAX_FILE = 255;

/** Upstream validatePath: a reason the path cannot be used, or undefined. Pure. */
export function invalidPayloadPath(p: string): string | undefined {
  if (p.length > MAX_PATH) return `invalid path: must be less than or equal to ${MAX_PATH} characters`;
  if (p.startsWith('/')) return 'invalid path: must be relative path';
  const parts = p.split('/');
  if (parts.some((x) => x.length > MAX_FILE))
    return `invalid path: filenames must be less than or equal to ${MAX_FILE} characters`;
  if (parts.includes('..')) return "invalid path: must not contain '..'";
  if (p.startsWith('..')) return "invalid path: must not start with '..'";
  if (!p || parts.some((x) => x === '')) return 'invalid path: must not be empty or contain empty components';
  return undefined;
}

function timestampDirPrefix(now: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `..${now.getUTCFullYear()}_${p(now.getUTCMonth() + 1)}_${p(now.getUTCDate())}_${p(now.getUTCHours())}_${p(now.getUTCMinutes())}_${p(now.getUTCSeconds())}.`;
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

async function sameAsOnDisk(tsDir: string, payload: Payload): Promise<boolean> {
  const onDisk = await listFiles(tsDir);
  if (onDisk.size !== payload.size) return false;
  for (const [p, f] of payload) {
    if (!onDisk.has(p)) return false;
    try {
      const s = await stat(join(tsDir, p));
      if ((s.mode & 0o7777) !== f.mode) return false;
      if (!(await readFile(join(tsDir, p))).equals(f.data)) return false;
    } catch {
      return false;
    }
  }
  return true;
}

async function listFiles(dir: string, prefix = ''): Promise<Set<string>> {
  const out = new Set<string>();
  let entries;
  try {
    entries = await readdir(join(dir, prefix), { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) for (const x of await listFiles(dir, rel)) out.add(x);
    else out.add(rel);
  }
  return out;
}

/** What a write did. */
export interface WriteResult {
  written: boolean;
}

/**
 * Writes `payload` into `dir` as upstream's AtomicWriter.Write; `setPerms(tsDir)` runs on the new
 * timestamped directory before it becomes visible. Idempotent: an equal payload writes nothing.
 */
export async function writeAtomic(
  dir: string,
  payload: Payload,
  o: { now?: Date; setPerms?: (tsDir: string) => Promise<void> } = {},
): Promise<WriteResult> {
  // Every payload path is checked before anything is written.
  for (const p of payload.keys()) {
    const bad = invalidPayloadPath(p);
    if (bad) throw new Error(`${bad}: ${JSON.stringify(p)}`);
  }
  await mkdir(dir, { recursive: true });
  // An equal payload in `..data` writes nothing (only directories left by an interrupted write go).
  const dataLink = join(dir, DATA);
  let oldTs: string | undefined;
  try {
    oldTs = await readlink(dataLink);
  } catch {
    oldTs = undefined;
  }
  if (oldTs && (await exists(join(dir, oldTs))) && (await sameAsOnDisk(join(dir, oldTs), payload))) {
    await removeStale(dir, oldTs);
    return { written: false };
  }
  const oldPaths = oldTs ? await listFiles(join(dir, oldTs)) : new Set<string>();
  // The whole payload goes into a new timestamped directory, not visible yet.
  const tsDir = await mkdtemp(join(dir, timestampDirPrefix(o.now ?? new Date())));
  await chmod(tsDir, 0o755);
  for (const [p, f] of payload) {
    const full = join(tsDir, p);
    await mkdir(dirname(full), { recursive: true, mode: 0o755 });
    await writeFile(full, f.data, { mode: f.mode });
    await chmod(full, f.mode);
    if (f.fsUser !== undefined) await lchown(full, f.fsUser, -1);
  }
  // Ownership is applied while no reader can see the files.
  if (o.setPerms) await o.setPerms(tsDir);
  // The user-visible links that are missing point through `..data`.
  const tops = new Set([...payload.keys()].map((p) => p.split('/')[0]));
  for (const t of tops) {
    const visible = join(dir, t);
    if (!(await exists(visible))) await symlink(join(DATA, t), visible);
    // The link too, not only what it points to (lchown: kubernetes/kubernetes#137332, v1.36).
    const fsUser = payload.get(t)?.fsUser;
    if (fsUser !== undefined) await lchown(visible, fsUser, -1);
  }
  // The swap: a new link renamed over `..data` is what makes the update visible, all at once.
  const tmpLink = join(dir, DATA_TMP);
  await rm(tmpLink, { force: true });
  await symlink(tsDir.slice(dir.length + 1), tmpLink);
  await rename(tmpLink, dataLink);
  // User-visible links of paths the payload no longer has go.
  const oldTops = new Set([...oldPaths].map((p) => p.split('/')[0]));
  for (const t of oldTops) if (!tops.has(t)) await unlink(join(dir, t)).catch(() => {});
  // Every other timestamped directory goes: the old one, and any an interrupted write left.
  await removeStale(dir, tsDir.slice(dir.length + 1));
  return { written: true };
}

/** Removes every timestamped directory except `keep` (left by an interrupted write or replaced). */
async function removeStale(dir: string, keep: string): Promise<void> {
  for (const e of await readdir(dir).catch(() => [] as string[])) {
    if (e.startsWith('..') && e !== keep && e !== DATA && /^\.\.\d{4}_\d\d_\d\d_/.test(e))
      await rm(join(dir, e), { recursive: true, force: true });
  }
  await rm(join(dir, DATA_TMP), { force: true });
}
