/**
 * The pseudo-terminals of `tty: true` containers and exec sessions come from node-pty, a native
 * addon and an optional dependency: a node installed without a C++ toolchain (node-pty has no
 * Linux prebuilds) runs everything else, and a TTY is refused with a message that says why.
 */
import { badRequest } from '../lib/errors.js';

type NodePty = typeof import('node-pty');
let loaded: Promise<NodePty | undefined> | undefined;

/** The message a TTY gets where node-pty is not installed. */
export const NO_PTY_MESSAGE =
  'the process runtime cannot allocate a TTY: the optional dependency node-pty is not installed (it builds with a C++ toolchain: npm install node-pty)';

/** node-pty, or a BadRequest error that says it is not installed. */
export async function loadPty(): Promise<NodePty> {
  loaded ??= import('node-pty').then(
    (m) => m,
    () => undefined,
  );
  const pty = await loaded;
  if (!pty) throw badRequest(NO_PTY_MESSAGE);
  return pty;
}
