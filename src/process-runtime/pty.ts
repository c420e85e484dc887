/**
 * The pseudo-terminals of `tty: true` containers and exec sessions come from node-pty, a native
 * addon and an optional dependency: a node installed without a C++ toolchain (node-pty has no
 * Linux prebuilds) runs everything else, and a TTY is refused with a message that says why.
 */
import { Writable } from 'node:stream';
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

/** Bytes a terminal's input may have queued in node-pty before its writer waits. */
const TERMINAL_INPUT_QUEUE_BYTES = 256 * 1024;
/** How often a waiting writer looks at the queue again. */
const TERMINAL_INPUT_POLL_MS = 5;

type Terminal = import('node-pty').IPty;

/**
 * The bytes node-pty still has to write to `terminal`. Its write queue is private (node-pty 1.x: the write stream's
 * `_writeQueue` of `{buffer, offset}`); where it cannot be read, 0.
 */
function queuedInputBytes(terminal: Terminal): number {
  const queue = (terminal as unknown as { _writeStream?: { _writeQueue?: { buffer: Buffer; offset: number }[] } })
    ._writeStream?._writeQueue;
  let bytes = 0;
  for (const task of queue ?? []) bytes += task.buffer.byteLength - task.offset;
  return bytes;
}

/**
 * A terminal's input as a Writable that takes more only while node-pty's queue for the terminal is short: node-pty
 * keeps whatever it is given while the process does not read its terminal, so a client writing to a TTY's stdin
 * could make the runtime hold any amount. Chunks go as bytes (a character split across two chunks arrives whole).
 */
export function terminalInput(terminal: Terminal): Writable {
  let exited = false;
  terminal.onExit(() => (exited = true));
  const input: Writable = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (exited) return callback();
      terminal.write(chunk);
      const proceed = () => {
        if (exited || input.destroyed || queuedInputBytes(terminal) < TERMINAL_INPUT_QUEUE_BYTES) callback();
        else setTimeout(proceed, TERMINAL_INPUT_POLL_MS);
      };
      proceed();
    },
  });
  return input;
}

/**
 * Spawn options for a terminal that carries bytes, not text: node-pty decodes output as UTF-8 by default, so a byte
 * that is not UTF-8 (`cat` of a binary file through `kubectl exec -t`) came out as U+FFFD, where a runtime's terminal
 * passes every byte.
 */
export const RAW_TERMINAL = { encoding: null } as const;

/** Calls `onBytes` with each piece of a raw terminal's output (node-pty types it as text; with RAW_TERMINAL, bytes). */
export function onTerminalOutput(terminal: Terminal, onBytes: (bytes: Buffer) => void): void {
  terminal.onData((data: string | Buffer) => onBytes(typeof data === 'string' ? Buffer.from(data) : data));
}
