/**
 * The kubelet's root directory and the directories under it that exist from the start, with
 * upstream's names and modes (setupDataDirs): a node whose root dir does not exist yet gets the
 * layout a Go kubelet would have made, and a root dir a Go kubelet made is used as it is (an
 * existing directory keeps its mode, as MkdirAll leaves it).
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';

/** The directories of a fresh root dir, relative to it, and their modes (a Go kubelet v1.36's). Pure data. */
export const DATA_DIRS: readonly { path: string; mode: number }[] = [
  { path: '.', mode: 0o750 },
  { path: 'pods', mode: 0o750 },
  { path: 'plugins', mode: 0o750 },
  { path: 'plugins_registry', mode: 0o750 },
  { path: 'pod-resources', mode: 0o750 },
  // Container checkpoints (CheckpointContainer) are the containers' memory: for root only.
  { path: 'checkpoints', mode: 0o700 },
];

/** Creates `rootDir` and its data directories where they do not exist. */
export async function setupDataDirs(rootDir: string): Promise<void> {
  for (const d of DATA_DIRS) {
    const dir = join(rootDir, d.path);
    // The process umask (often 022) does not take bits away from a mode without group write.
    await mkdir(dir, { recursive: true, mode: d.mode });
  }
}
