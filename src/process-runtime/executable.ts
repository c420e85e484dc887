/** Resolves a command the way execvp would, so a missing binary is a clear start error. */
import { accessSync, constants, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';

/** The absolute path of `cmd`, or undefined when nothing executable is found. */
export function resolveExecutable(cmd: string, pathEnv: string | undefined, cwd: string): string | undefined {
  const candidates = cmd.includes('/')
    ? [isAbsolute(cmd) ? cmd : join(cwd, cmd)]
    : (pathEnv ?? '')
        .split(':')
        .filter(Boolean)
        .map((d) => join(d, cmd));
  for (const c of candidates) {
    try {
      if (statSync(c).isFile()) {
        accessSync(c, constants.X_OK);
        return c;
      }
    } catch {
      /* next */
    }
  }
  return undefined;
}
