/**
 * Paths of files shipped beside the code (proto/, …), found from the package root: the first
 * directory upward from this module with a package.json. That holds for src/ under tsx and for
 * the bundle in dist/, whose chunks sit at another depth than the sources.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/** The absolute path of `parts` under tskubelet's package root. */
export function packagePath(...parts: string[]): string {
  if (!root) {
    let dir = dirname(fileURLToPath(import.meta.url));
    while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
    root = dir;
  }
  return join(root, ...parts);
}
