/**
 * fsGroup ownership (ownership.ts) of a volume on a filesystem that may stop answering (an NFS volume of a CSI
 * driver whose server has gone, a FUSE mount whose daemon is stuck), done by a child process: findutils and coreutils
 * (`find`, `chgrp`, `chmod`, `stat`). In-process, each file call of the walk would hold one of libuv's four threadpool
 * threads for as long as the volume does not answer, and a few such pods would leave the kubelet unable to read any
 * file. The child waits alone; the volume's set-up waits for it as upstream's does for its walk, with the same reports.
 *
 * What it does to each file is what the in-process walk does: the group, then the mode with the group bits of the
 * mask (directories: setgid and search too); links get the group only. chgrp clears a file's setuid and setgid bits,
 * so those files get their mode back first, as upstream's chmod of the mode it read before. The root comes last: a
 * walk cut short leaves a root that still asks for the change.
 */
import { spawn } from 'node:child_process';

const SCRIPT = `set -e
root=$1 g=$2 fm=$3 dm=$4
apply='g=$1 m=$2; shift 2; chgrp -- "$g" "$@" && chmod -- "$m" "$@"'
find "$root" -mindepth 1 -depth \\
  \\( -type l -print -exec chgrp -h -- "$g" {} + \\) -o \\
  \\( -type d -print -exec sh -c "$apply" set-dirs "$g" "$dm" {} + \\) -o \\
  \\( ! -perm /6000 -print -exec sh -c "$apply" set-files "$g" "$fm" {} + \\)
find "$root" -mindepth 1 ! -type d ! -type l -perm /6000 -print -exec sh -c '
  g=$1 m=$2; shift 2
  for f; do p=$(stat -c %a -- "$f") && chgrp -- "$g" "$f" && chmod -- "$p" "$f" && chmod -- "$m" "$f" || exit 1; done
' set-special "$g" "$fm" {} +
chgrp -- "$g" "$root"
if [ -d "$root" ]; then chmod -- "$dm" "$root"; else chmod -- "$fm" "$root"; fi
echo "$root"`;

/** The symbolic modes the masks add: files, directories (read-only: read, and search for directories). Pure. */
export function symbolicMasks(readOnly: boolean): { file: string; dir: string } {
  return readOnly ? { file: 'ug+r', dir: 'ug+rx,g+s' } : { file: 'ug+rw', dir: 'ug+rwx,g+s' };
}

/**
 * Gives `root` and everything under it group `fsGroup` and the masks' bits, in a child process; `onFile` is called for
 * each file done. Rejects with the tools' error when a change fails.
 */
export function setOwnershipApart(root: string, fsGroup: number, readOnly: boolean, onFile: () => void): Promise<void> {
  const masks = symbolicMasks(readOnly);
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', SCRIPT, 'volume-ownership', root, String(fsGroup), masks.file, masks.dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) onFile();
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4096)));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(stderr.trim() || `the ownership change exited ${code}`)),
    );
  });
}
