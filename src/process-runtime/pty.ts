/**
 * The pseudo-terminals of `tty: true` containers and exec sessions come from node-pty, a native
 * addon and an optional dependency: a node installed without a C++ toolchain (node-pty has no
 * Linux prebuilds) runs everything else, and a TTY is refused with a message that says why.
 */
import type { EventEmitter } from 'node:events';
import { write } from 'node:fs';
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

/** The longest wait before writing again to a terminal whose input is full. */
const TERMINAL_INPUT_MAX_BACKOFF_MS = 50;

type Terminal = import('node-pty').IPty;

/**
 * A terminal's input as a Writable that takes the next chunk once the terminal has taken the last. node-pty's own
 * write keeps whatever it is given while the process does not read its terminal (a client writing to a TTY's stdin
 * could make the runtime hold any amount) and, while the terminal is full, retries at every turn of the event loop
 * (a core busy for as long as the process does not read). This writes to the terminal's file descriptor itself and
 * waits, 1 ms doubling to 50 ms, while the terminal is full. Chunks go as bytes (a character split across two chunks
 * arrives whole).
 */
export function terminalInput(terminal: Terminal): Writable {
  // node-pty's UnixTerminal has the master's descriptor as `fd` (not in its typings).
  const fd = (terminal as unknown as { fd?: number }).fd;
  // No write once the terminal is closed (node-pty's 'close', when its read side closes the descriptor) or its process
  // has exited: a retry on a closed descriptor could write into whatever file reused its number.
  let gone = false;
  terminal.onExit(() => (gone = true));
  (terminal as unknown as Pick<EventEmitter, 'once'>).once?.('close', () => (gone = true));
  const input: Writable = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (fd === undefined) {
        terminal.write(chunk);
        return callback();
      }
      let offset = 0;
      let backoffMs = 0;
      const attempt = () => {
        if (gone || input.destroyed) return callback();
        write(fd, chunk, offset, chunk.length - offset, null, (err, written) => {
          if (err?.code === 'EAGAIN') {
            backoffMs = Math.min(backoffMs ? backoffMs * 2 : 1, TERMINAL_INPUT_MAX_BACKOFF_MS);
            return void setTimeout(attempt, backoffMs);
          }
          // Any other error: the terminal is gone (EIO once its process exits), and its input with it.
          if (err) return callback();
          offset += written;
          backoffMs = 0;
          if (offset < chunk.length) attempt();
          else callback();
        });
      };
      attempt();
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
