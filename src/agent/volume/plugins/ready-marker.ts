/**
 * The emptyDir plugin's per-pod record that a volume is set up, as upstream's volumeutil.SetReady leaves it:
 * `<root-dir>/pods/<uid>/plugins/kubernetes.io~empty-dir/<name>/ready`, where `<name>` is an emptyDir's own name, or
 * `wrapped_<name>` for the volumes upstream builds on an emptyDir (configMap, secret, downwardAPI, projected). A Go
 * kubelet that takes the node over finds its volumes' records where it keeps them.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** The record's directory for the volume `metaName` of the pod whose volumes are under `volumesDir`. */
export function readyDir(volumesDir: string, metaName: string): string {
  return join(dirname(volumesDir), 'plugins', 'kubernetes.io~empty-dir', metaName);
}

/** Writes the record (directories 0750, the file 0644, as upstream's) unless it is there. */
export async function markReady(volumesDir: string, metaName: string): Promise<void> {
  const dir = readyDir(volumesDir, metaName);
  if (existsSync(join(dir, 'ready'))) return;
  await mkdir(dir, { recursive: true, mode: 0o750 });
  await writeFile(join(dir, 'ready'), '', { mode: 0o644 });
}
