/**
 * A protocol-neutral remote command session: what a runtime needs to run exec/attach, whatever
 * the client spoke (SPDY streams or WebSocket channels).
 */
import { EventEmitter } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import type { CommandResult, TerminalSize } from './protocol.js';

/** The client's streams, as the request asked for them. */
export interface RemoteCommandIO {
  /** Client → command; ends when the client closes stdin. */
  stdin?: Readable;
  /** Command → client. Backpressure is the client's. */
  stdout?: Writable;
  /** Command → client (never with a TTY). */
  stderr?: Writable;
  /** Terminal size changes ('resize', TerminalSize); `last` is the latest one seen. */
  resize: ResizeEvents;
  tty: boolean;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

/** Emits 'resize' with a TerminalSize and remembers the last one. */
export class ResizeEvents extends EventEmitter {
  last: TerminalSize | undefined;
  /** Records and emits `size`. */
  push(size: TerminalSize): void {
    this.last = size;
    this.emit('resize', size);
  }
}

/** Runs the command for a session and says how it ended. */
export type RemoteCommandRunner = (io: RemoteCommandIO) => Promise<CommandResult>;
