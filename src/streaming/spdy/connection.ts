/**
 * A SPDY/3.1 connection over a byte stream (the upgraded socket), either side.
 *
 *   socket ──► FrameDecoder ──► frames in order ──► streams (Duplex) / PING reply / GOAWAY
 *   streams ──► DATA, SYN_STREAM, SYN_REPLY, RST ──► one write queue ──► socket
 *
 * Flow control as Go's spdystream, which every Kubernetes client and streaming server uses
 * (kubectl, the apiserver, containerd): none unless the peer asks for it. spdystream reads
 * SETTINGS and WINDOW_UPDATE and ignores them, and relies on TCP. Once a peer shows it does flow
 * control (a WINDOW_UPDATE or an INITIAL_WINDOW_SIZE setting) we follow its windows when sending
 * and send WINDOW_UPDATE as our readers consume; otherwise we send none: a WINDOW_UPDATE
 * spdystream has not read yet when it closes the connection makes its kernel answer with a reset
 * instead of a FIN, which throws away what it had written and we had not read — the end of an
 * exec's output, through the kubelet's relay where more is in flight. Whatever the peer does, a
 * stream's unread data is bounded: past RECV_BOUND the socket is paused until that stream's
 * reader takes more (spdystream blocks its frame handler the same way), so TCP paces the peer.
 */
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import { encodeFrame, FLAG_FIN, FrameDecoder, GoAwayStatus, RstStatus, SettingsId, type Frame } from './frames.js';
import { HeaderCodec } from './header-block.js';
import { SpdyStream, type StreamHost } from './stream.js';
import { destroyOnceDrained } from '../drain-then-destroy.js';

export { SpdyStream } from './stream.js';

const DEFAULT_WINDOW = 64 * 1024;
/** Unread bytes on one stream beyond which the socket is paused (twice the window a flow-controlling peer gets). */
const RECV_BOUND = 2 * DEFAULT_WINDOW;

/** Options for a connection. */
export interface SpdyConnectionOptions {
  server: boolean;
  onStream?: (s: SpdyStream) => void;
  /** How long a stream's reader has to take what it received once the peer is gone (drain-then-destroy.ts). */
  drainGraceMs?: number;
}

/**
 * Events: 'stream' (a stream the peer opened, headers decoded; reply to accept it),
 * 'goaway', 'close', 'protocolError' (message).
 */
export class SpdyConnection extends EventEmitter implements StreamHost {
  /** True once the peer has shown it does SPDY flow control. */
  peerDoesFlowControl = false;
  private readonly decoder = new FrameDecoder();
  private readonly codec = new HeaderCodec();
  private readonly streams = new Map<number, SpdyStream>();
  private nextId: number;
  private lastPeerId = 0;
  private peerInitialWindow = DEFAULT_WINDOW;
  private closed = false;
  private inbound: Promise<void> = Promise.resolve();
  private readonly pings = new Map<number, () => void>();
  private nextPing: number;
  /** The stream whose unread data paused the socket. */
  private heldBy: SpdyStream | undefined;

  constructor(
    private readonly socket: Duplex,
    private readonly opts: SpdyConnectionOptions,
  ) {
    super();
    this.nextId = opts.server ? 2 : 1;
    this.nextPing = opts.server ? 2 : 1;
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
    const s = new SpdyStream(id, this, this.peerInitialWindow);
    this.streams.set(id, s);
    const block = this.codec.compress(headers);
    this.sendFrame({ type: 'syn_stream', streamId: id, associatedStreamId: 0, priority: 0, flags: fin ? FLAG_FIN : 0, headerBlock: block });
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
  sendHeaders(kind: 'syn_reply' | 'headers', streamId: number, headers: Iterable<[string, string | string[]]>, fin: boolean): void {
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

  /** @internal the reader consumed data: grant the peer more window */
  acknowledge(s: SpdyStream): void {
    if (this.heldBy === s) this.release();
    if (this.peerDoesFlowControl && s.recvUnacked > 0 && !s.remoteFin && !s.destroyed) {
      this.sendFrame({ type: 'window_update', streamId: s.id, delta: s.recvUnacked });
      s.recvUnacked = 0;
    }
  }

  /** @internal */
  localFinished(s: SpdyStream): void {
    if (s.remoteFin) this.streams.delete(s.id);
  }

  /** @internal */
  forget(id: number): void {
    if (this.heldBy?.id === id) this.release();
    this.streams.delete(id);
  }

  private release(): void {
    this.heldBy = undefined;
    if (!this.closed) this.socket.resume();
  }

  /** Number of open streams. */
  get streamCount(): number {
    return this.streams.size;
  }

  private onBytes(chunk: Buffer): void {
    const { frames, error } = this.decoder.push(chunk);
    // Frames are handled strictly in order; only header blocks make handling asynchronous.
    for (const f of frames) this.inbound = this.inbound.then(() => this.handle(f)).catch((err: Error) => this.fail(`bad header block: ${err.message}`));
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
        const s = new SpdyStream(f.streamId, this, this.peerInitialWindow);
        s.headers = headers;
        this.streams.set(f.streamId, s);
        if (f.flags & FLAG_FIN) {
          s.remoteFin = true;
          s.push(null);
        }
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
        if (f.data.length) {
          s.recvUnacked += f.data.length;
          if (s.push(f.data)) this.acknowledge(s);
          else if (s.readableLength >= RECV_BOUND && !this.heldBy) {
            this.heldBy = s;
            this.socket.pause();
          }
        }
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
      case 'settings': {
        for (const e of f.entries) {
          if (e.id === SettingsId.INITIAL_WINDOW_SIZE) {
            this.peerDoesFlowControl = true;
            const delta = e.value - this.peerInitialWindow;
            this.peerInitialWindow = e.value;
            for (const s of this.streams.values()) {
              s.sendWindow += delta;
              s.windowOpened();
            }
          }
        }
        return;
      }
      case 'window_update': {
        this.peerDoesFlowControl = true;
        const s = this.streams.get(f.streamId);
        if (s) {
          s.sendWindow += f.delta;
          s.windowOpened();
        }
        return;
      }
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
    s.remoteFin = true;
    s.push(null);
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
    if (!s.remoteFin && !s.destroyed) {
      s.remoteFin = true;
      s.push(null);
    }
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
