/** Small filesystem helpers with the atomicity the agent and the runtime rely on. */
import { mkdir, rename, writeFile, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/** Writes `data` to `path` atomically (temp file + rename), creating parent dirs. */
export async function writeFileAtomic(path: string, data: string | Buffer, mode = 0o644): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  await writeFile(tmp, data, { mode });
  await rename(tmp, path);
}

/** Reads and parses a JSON file; undefined when it does not exist. */
export async function readJsonIfExists<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
