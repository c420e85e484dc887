/**
 * Environment variables from a file in a pod volume (env[].valueFrom.fileKeyRef, EnvFiles): an
 * init container writes `KEY=value` lines into an emptyDir, and a later container's variable takes
 * the value of one key. The file is read when the container is made (readEnvFiles, bounded); the
 * parsing and lookup are pure.
 */
import { open } from 'node:fs/promises';
import { join, normalize, isAbsolute } from 'node:path';
import type { Container } from '../../api/types.js';

/** An env file larger than this is refused: a value is for a variable, not a payload. */
export const ENV_FILE_MAX_BYTES = 64 * 1024;

/** A fileKeyRef as the API spells it. */
export interface FileKeyRef {
  volumeName: string;
  path: string;
  key: string;
  optional?: boolean;
}

/** The key under which an env file's content is kept. */
export const envFileKey = (ref: Pick<FileKeyRef, 'volumeName' | 'path'>) => `${ref.volumeName}\u0000${ref.path}`;

/**
 * The variables of an env file: `KEY=value` per line, blank lines and `#` comments skipped, a
 * value in single quotes taken as written between them. Pure.
 */
export function parseEnvFile(text: string): Map<string, string> {
  const vars = new Map<string, string>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    let value = line.slice(eq + 1);
    if (value.length >= 2 && value.startsWith("'") && value.endsWith("'")) value = value.slice(1, -1);
    vars.set(line.slice(0, eq).trim(), value);
  }
  return vars;
}

/**
 * The content of each env file `c` refers to: null when it cannot be read (missing, too large, a
 * path leaving its volume, a volume the pod does not have set up).
 */
export async function readEnvFiles(
  c: Container,
  volumes: ReadonlyMap<string, { path: string }> | undefined,
): Promise<Map<string, string | null>> {
  const files = new Map<string, string | null>();
  for (const e of c.env ?? []) {
    const ref = (e.valueFrom as { fileKeyRef?: FileKeyRef } | undefined)?.fileKeyRef;
    if (!ref || files.has(envFileKey(ref))) continue;
    const volume = volumes?.get(ref.volumeName);
    const relative = normalize(ref.path);
    const inside = !isAbsolute(relative) && relative !== '..' && !relative.startsWith('../');
    files.set(envFileKey(ref), volume && inside ? await readBounded(join(volume.path, relative)) : null);
  }
  return files;
}

async function readBounded(path: string): Promise<string | null> {
  try {
    const handle = await open(path, 'r');
    try {
      const buffer = Buffer.alloc(ENV_FILE_MAX_BYTES + 1);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      return bytesRead > ENV_FILE_MAX_BYTES ? null : buffer.toString('utf8', 0, bytesRead);
    } finally {
      await handle.close();
    }
  } catch {
    return null;
  }
}
