/**
 * One SPDY stream as a Duplex: readable = DATA from the peer, writable = DATA to the peer (frames
 * of at most 16 KiB, within the peer's window when it does flow control). The connection that
 * owns it is seen through the narrow StreamHost interface.
 */
import { Duplex } from 'node:stream';
import { DEFAULT_WINDOW, encodeFrame, FLAG_FIN, RstStatus } from './frames.js';
import type { HeaderMap } from './header-block.js';

const MAX_DATA_FRAME = 16 * 1024;

/** What a stream needs of its connection. */
export interface StreamHost {
  /** True once the peer has shown it does SPDY flow control. */
  readonly peerDoesFlowControl: boolean;
  /** Queues a frame (order kept). */
  sendFrame(f: Parameters<typeof encodeFrame>[0]): void;
  /** Queues a frame; resolves when the socket can take more. */
  sendFrameDrained(f: Parameters<typeof encodeFrame>[0]): Promise<void>;
  /** Sends SYN_REPLY / HEADERS with a header block. */
  sendHeaders(
    kind: 'syn_reply' | 'headers',
    streamId: number,
    headers: Iterable<[string, string | string[]]>,
    fin: boolean,
  ): void;
  /** The reader wants more: grant the peer more window, resume a socket its unread data paused. */
  acknowledge(s: SpdyStream): void;
  /** Our side sent FIN. */
  localFinished(s: SpdyStream): void;
  /** The stream is gone. */
  forget(id: number): void;
}

/** One SPDY stream as a Duplex: readable = DATA from the peer, writable = DATA to the peer. */
export class SpdyStream extends Duplex {
  /** Headers the stream was opened with (SYN_STREAM) — for streams the peer opened. */
  headers: HeaderMap = new Map();
  /** @internal */ sendWindow: number;
  /** @internal */ recvUnacked = 0;
  /** @internal */ remoteFin = false;
  /** Resolves once the peer has sent all it will (its FIN, a reset or the connection's end), whatever is yet unread. */
  readonly received: Promise<void>;
  private receivedNow!: () => void;
  /** @internal the peer reset the stream or the connection closed: what is written is dropped */
  peerGone = false;
  private replied = false;
  private waiters: (() => void)[] = [];

  constructor(
    readonly id: number,
    private readonly conn: StreamHost,
    sendWindow: number,
  ) {
    super({ allowHalfOpen: true, highWaterMark: DEFAULT_WINDOW });
    this.sendWindow = sendWindow;
    this.received = new Promise((resolve) => (this.receivedNow = resolve));
    // A stream destroyed (reset by this side, the session torn down) will receive nothing more either.
    this.once('close', () => this.receivedNow());
  }

  /** @internal the peer sent its last DATA: the readable ends after what it holds. */
  endFromPeer(): void {
    if (this.remoteFin) return;
    this.remoteFin = true;
    this.receivedNow();
    if (!this.destroyed) this.push(null);
  }

  /** The first value of a header (names are lower case). */
  header(name: string): string | undefined {
    return this.headers.get(name)?.[0];
  }

  /** Sends SYN_REPLY (once). */
  reply(headers: Iterable<[string, string | string[]]> = [], fin = false): void {
    if (this.replied) return;
    this.replied = true;
    this.conn.sendHeaders('syn_reply', this.id, headers, fin);
  }

  /** Aborts the stream with RST_STREAM. */
  reset(status: number = RstStatus.CANCEL): void {
    this.conn.sendFrame({ type: 'rst_stream', streamId: this.id, status });
    this.conn.forget(this.id);
    this.destroy();
  }

  /** @internal the window grew */
  windowOpened(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  override _read(): void {
    this.conn.acknowledge(this);
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    void this.writeData(chunk).then(() => cb(), cb);
  }

  override _final(cb: (err?: Error | null) => void): void {
    if (!this.peerGone)
      this.conn.sendFrame({ type: 'data', streamId: this.id, flags: FLAG_FIN, data: Buffer.alloc(0) });
    this.conn.localFinished(this);
    cb();
  }

  override _destroy(err: Error | null, cb: (err: Error | null) => void): void {
    this.conn.forget(this.id);
    this.windowOpened();
    cb(err);
  }

  private async writeData(chunk: Buffer): Promise<void> {
    let off = 0;
    while (off < chunk.length) {
      const flowControl = this.conn.peerDoesFlowControl;
      if (flowControl)
        while (this.sendWindow <= 0 && !this.destroyed && !this.peerGone)
          await new Promise<void>((r) => this.waiters.push(r));
      if (this.destroyed) throw new Error('stream closed');
      // Dropped once the peer reset the stream or the connection closed: nobody reads it, and a reset is no 'error'.
      if (this.peerGone) return;
      const n = Math.min(MAX_DATA_FRAME, chunk.length - off, flowControl ? this.sendWindow : Infinity);
      if (flowControl) this.sendWindow -= n;
      await this.conn.sendFrameDrained({
        type: 'data',
        streamId: this.id,
        flags: 0,
        data: chunk.subarray(off, off + n),
      });
      off += n;
    }
  }
}
