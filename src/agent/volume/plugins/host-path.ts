/**
 * hostPath (upstream pkg/volume/hostpath): the node's path itself, after the `type` check with
 * upstream's messages. `DirectoryOrCreate` makes the directory (0755), `FileOrCreate` the file
 * (0644, parent must exist); unset or "" checks nothing. What is at the path is asked of a child process
 * (lib/ask-apart.ts): a node path can lie on a filesystem that stops answering.
 */
import { mkdir, open } from 'node:fs/promises';
import { fileKindApart, VolumeNotAnswering, type FileKind } from '../../../lib/ask-apart.js';
import type { MountedVolume, SetUpContext, VolumePlugin } from '../types.js';

/** What is at `path` (followed if a link), asked apart: the node's path may be on a filesystem that stops answering. */
async function kindOf(path: string): Promise<FileKind | undefined> {
  try {
    return await fileKindApart(path);
  } catch (err) {
    if (err instanceof VolumeNotAnswering) throw new Error(`hostPath type check failed: ${path}: ${err.message}`);
    throw err;
  }
}

/** Upstream checkType: throws with upstream's message when `path` is not of `type`. */
export async function checkHostPathType(path: string, type: string | undefined): Promise<void> {
  if (!type) return;
  const kind = await kindOf(path);
  const expect = (want: FileKind, what: string) => {
    if (kind !== want) throw new Error(`hostPath type check failed: ${path} is not ${what}`);
  };
  switch (type) {
    case 'DirectoryOrCreate':
      if (kind === undefined) {
        await mkdir(path, { recursive: true, mode: 0o755 });
        return;
      }
      return expect('dir', 'a directory');
    case 'Directory':
      return expect('dir', 'a directory');
    case 'FileOrCreate':
      if (kind === undefined) {
        await (await open(path, 'a', 0o644)).close();
        return;
      }
      return expect('file', 'a file');
    case 'File':
      return expect('file', 'a file');
    case 'Socket':
      return expect('socket', 'a socket file');
    case 'CharDevice':
      return expect('char', 'a character device');
    case 'BlockDevice':
      return expect('block', 'a block device');
    default:
      throw new Error(`${type} is an invalid volume type`);
  }
}

/** The hostPath plugin. */
export const hostPathPlugin: VolumePlugin = {
  dirName: 'kubernetes.io~host-path',
  field: 'hostPath',
  remountEachSync: false,
  async setUp({ volume }: SetUpContext): Promise<MountedVolume> {
    const src = volume.hostPath as { path: string; type?: string };
    await checkHostPathType(src.path, src.type);
    return { path: src.path, readOnly: false, plugin: this.dirName };
  },
};
