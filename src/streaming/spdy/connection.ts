/**
 * A SPDY/3.1 connection over a byte stream (the upgraded socket), either side.
 *
 *   socket ──► FrameDecoder ──► frames in order ──► streams (Duplex) / PING reply / GOAWAY
 *   streams ──► DATA, SYN_STREAM, SYN_REPLY, RST ──► one write queue ──► socket
 *
 * Flow control: flow-control.ts (as Go's spdystream: none unless the peer asks for it).
 */
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import { encodeFrame, FLAG_FIN, FrameDecoder, GoAwayStatus, RstStatus, type Frame } from './frames.js';
import { FlowControl } from './flow-control.js';
import { HeaderCodec } from './header-block.js';
import { SpdyStream, type StreamHost } from './stream.js';
import { destroyOnceDrained } from '../drain-then-destroy.js';

export { SpdyStream } from './stream.js';

/** Options for a connection. */
export interface SpdyConnectionOptions {
  server: boolean;
  onStream?: (s: SpdyStream) => void;
  /** How long a stream's reader has to take what it received once the peer is gone (drain-then-destroy.ts). */
  drainGraceMs?: number;
}

/**
 * Streams a peer may have open on one connection at once: an exec has five, a port-forward two
 * per forwarded connection; more are refused (RST_STREAM REFUSED_STREAM), each one costing memory.
 */
export const MAX_OPEN_STREAMS = 1000;

/**
 * One SPDY/3.1 connection. Events: 'stream' (a stream the peer opened, headers decoded; reply to
 * accept it), 'goaway', 'close', 'protocolError' (message).
 */
export class SpdyConnection extends EventEmitter implements StreamHost {
  private readonly decoder = new FrameDecoder();
  private readonly codec = new HeaderCodec();
  private readonly streams = new Map<number, SpdyStream>();
  private nextId: number;
  private lastPeerId = 0;
  private closed = false;
  private inbound: Promise<void> = Promise.resolve();
  private readonly pings = new Map<number, () => void>();
  private nextPing: number;
  private readonly flow: FlowControl;

  constructor(
    private readonly socket: Duplex,
    private readonly opts: SpdyConnectionOptions,
  ) {
    super();
    this.nextId = opts.server ? 2 : 1;
    this.nextPing = opts.server ? 2 : 1;
    this.flow = new FlowControl(
      socket,
      (f) => this.sendFrame(f),
      () => this.closed,
    );
    socket.on('data', (chunk: Buffer) => this.onBytes(chunk));
    socket.resume(); // a socket handed over paused (nothing lost before this listener) starts flowing
    // Frames already received are handled before the streams are torn down.
    const done = () => {
      void this.inbound.then(() => this.teardown());
    };
    socket.on('close', done);
    socket.on('error', done);
  }

  /** Opens a stream (client side, or server push); SYN_STREAM is queued at once. */
  openStream(headers: Iterable<[string, string | string[]]>, fin = false): SpdyStream {
    const id = this.nextId;
    this.nextId += 2;
    const s = new SpdyStream(id, this, this.flow.peerInitialWindow);
    this.streams.set(id, s);
    const block = this.codec.compress(headers);
    this.sendFrame({
      type: 'syn_stream',
      streamId: id,
      associatedStreamId: 0,
      priority: 0,
      flags: fin ? FLAG_FIN : 0,
      headerBlock: block,
    });
    return s;
  }

  /** Sends PING and resolves when the peer echoes it. */
  ping(): Promise<void> {
    const id = this.nextPing;
    this.nextPing += 2;
    return new Promise((resolve) => {
      this.pings.set(id, resolve);
      this.sendFrame({ type: 'ping', id });
    });
  }

  /**
   * Sends GOAWAY, flushes what is queued and half-closes; the socket is released when the peer
   * closes too (or after `lingerMs`). Destroying it at once would let late peer bytes hit a
   * closed socket, and the reset that follows can discard our last frames in flight.
   */
  async close(status: number = GoAwayStatus.OK, lingerMs = 5000): Promise<void> {
    if (this.closed) return;
    this.sendFrame({ type: 'goaway', lastGoodStreamId: this.lastPeerId, status });
    this.teardown(false);
    if (this.socket.destroyed) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, lingerMs);
      this.socket.once('close', () => {
        clearTimeout(t);
        resolve();
      });
      this.socket.resume();
      this.socket.end();
    });
    this.socket.destroy();
  }

  /** @internal */
  sendHeaders(
    kind: 'syn_reply' | 'headers',
    streamId: number,
    headers: Iterable<[string, string | string[]]>,
    fin: boolean,
  ): void {
    const block = this.codec.compress(headers);
    this.sendFrame({ type: kind, streamId, flags: fin ? FLAG_FIN : 0, headerBlock: block });
  }

  /** @internal queue a frame; order is kept */
  sendFrame(f: Parameters<typeof encodeFrame>[0]): void {
    if (this.closed || this.socket.destroyed) return;
    this.socket.write(encodeFrame(f));
  }

  /** @internal queue a frame and resolve when the socket can take more */
  sendFrameDrained(f: Parameters<typeof encodeFrame>[0]): Promise<void> {
    if (this.closed || this.socket.destroyed) return Promise.reject(new Error('connection closed'));
    if (this.socket.write(encodeFrame(f))) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.socket.off('drain', done);
        this.socket.off('close', done);
        resolve();
      };
      this.socket.once('drain', done);
      this.socket.once('close', done);
    });
  }

  /** True once the peer has shown it does SPDY flow control. */
  get peerDoesFlowControl(): boolean {
    return this.flow.peerDoesFlowControl;
  }

  /** @internal the reader wants more */
  acknowledge(s: SpdyStream): void {
    this.flow.acknowledge(s);
  }

  /** @internal */
  localFinished(s: SpdyStream): void {
    if (s.remoteFin) this.streams.delete(s.id);
  }

  /** @internal */
  forget(id: number): void {
    this.flow.forget(id);
    this.streams.delete(id);
  }

  /** Number of open streams. */
  get streamCount(): number {
    return this.streams.size;
  }

  private onBytes(chunk: Buffer): void {
    const { frames, error } = this.decoder.push(chunk);
    // Frames are handled strictly in order; only header blocks make handling asynchronous.
    for (const f of frames)
      this.inbound = this.inbound
        .then(() => this.handle(f))
        .catch((err: Error) => this.fail(`bad header block: ${err.message}`));
    if (error) this.inbound = this.inbound.then(() => this.fail(error.error));
  }

  private fail(message: string): void {
    this.emit('protocolError', message);
    void this.close(GoAwayStatus.PROTOCOL_ERROR);
  }

  private async handle(f: Frame): Promise<void> {
    if (this.closed) return;
    switch (f.type) {
      case 'syn_stream': {
        const headers = await this.codec.decompress(f.headerBlock);
        const peerOdd = this.opts.server ? 1 : 0;
        if (f.streamId % 2 !== peerOdd || f.streamId <= this.lastPeerId || this.streams.has(f.streamId)) {
          this.sendFrame({ type: 'rst_stream', streamId: f.streamId, status: RstStatus.PROTOCOL_ERROR });
          return;
        }
        this.lastPeerId = f.streamId;
        if (this.streams.size >= MAX_OPEN_STREAMS) {
          this.sendFrame({ type: 'rst_stream', streamId: f.streamId, status: RstStatus.REFUSED_STREAM });
          return;
        }
        const s = new SpdyStream(f.streamId, this, this.flow.peerInitialWindow);
        s.headers = headers;
        this.streams.set(f.streamId, s);
        if (f.flags & FLAG_FIN) s.endFromPeer();
        this.opts.onStream?.(s);
        this.emit('stream', s);
        return;
      }
      case 'syn_reply':
      case 'headers': {
        const headers = await this.codec.decompress(f.headerBlock);
        const s = this.streams.get(f.streamId);
        if (!s) return;
        for (const [k, v] of headers) s.headers.set(k, v);
        if (f.type === 'syn_reply') s.emit('reply', headers);
        if (f.flags & FLAG_FIN) this.remoteFinish(s);
        return;
      }
      case 'data': {
        const s = this.streams.get(f.streamId);
        if (!s || s.remoteFin) {
          if (!s) this.sendFrame({ type: 'rst_stream', streamId: f.streamId, status: RstStatus.INVALID_STREAM });
          return;
        }
        if (f.data.length) this.flow.received(s, f.data);
        if (f.flags & FLAG_FIN) this.remoteFinish(s);
        return;
      }
      case 'rst_stream': {
        const s = this.streams.get(f.streamId);
        if (s) {
          this.streams.delete(f.streamId);
          this.peerGone(s);
          s.emit('reset', f.status);
        }
        return;
      }
      case 'settings':
        this.flow.settings(f.entries, this.streams.values());
        return;
      case 'window_update':
        this.flow.windowUpdate(this.streams.get(f.streamId), f.delta);
        return;
      case 'ping': {
        const mine = (f.id % 2 === 0) === this.opts.server;
        if (mine) {
          this.pings.get(f.id)?.();
          this.pings.delete(f.id);
        } else this.sendFrame({ type: 'ping', id: f.id });
        return;
      }
      case 'goaway':
        this.emit('goaway', f.status);
        return;
      case 'unknown_control': // SPDY/3 §2.2.1: control frames of unknown types are ignored.
        return;
    }
  }

  private remoteFinish(s: SpdyStream): void {
    if (s.remoteFin) return;
    s.endFromPeer();
    if (s.writableFinished) this.streams.delete(s.id);
  }

  /**
   * The peer is done with a stream (RST_STREAM, or the connection closed): nothing more is written
   * to it, and what it sent stays readable, then ends (EOF without a FIN, as spdystream's reads),
   * within a grace.
   * Destroying it at once lost the last frames and the end whenever they came in the same read as
   * the reset or the close — Go's streaming servers (containerd's) write the status, RST_STREAM,
   * GOAWAY and close.
   */
  private peerGone(s: SpdyStream): void {
    s.peerGone = true;
    s.windowOpened();
    s.endFromPeer();
    destroyOnceDrained(s, this.opts.drainGraceMs);
  }

  private teardown(destroySocket = true): void {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.streams.values()) this.peerGone(s);
    this.streams.clear();
    for (const resolve of this.pings.values()) resolve();
    this.pings.clear();
    this.codec.close();
    if (destroySocket && !this.socket.destroyed) this.socket.destroy();
    this.emit('close');
  }
}
