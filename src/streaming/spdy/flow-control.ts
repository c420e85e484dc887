/**
 * SPDY flow control as Go's spdystream, which every Kubernetes client and streaming server uses
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
import type { Duplex } from 'node:stream';
import { DEFAULT_WINDOW, SettingsId, type encodeFrame } from './frames.js';
import type { SpdyStream } from './stream.js';

/** Unread bytes on one stream beyond which the socket is paused (twice the window a flow-controlling peer gets). */
const RECV_BOUND = 2 * DEFAULT_WINDOW;

/** One connection's flow control, both directions. */
export class FlowControl {
  /** True once the peer has shown it does SPDY flow control. */
  peerDoesFlowControl = false;
  /** The send window a new stream starts with. */
  peerInitialWindow = DEFAULT_WINDOW;
  /** The stream whose unread data paused the socket. */
  private heldBy: SpdyStream | undefined;

  constructor(
    private readonly socket: Duplex,
    private readonly send: (f: Parameters<typeof encodeFrame>[0]) => void,
    private readonly closed: () => boolean,
  ) {}

  /** DATA for `s`: to its reader, the socket paused when the reader is too far behind. */
  received(s: SpdyStream, data: Buffer): void {
    s.recvUnacked += data.length;
    if (s.push(data)) this.acknowledge(s);
    else if (s.readableLength >= RECV_BOUND && !this.heldBy) {
      this.heldBy = s;
      this.socket.pause();
    }
  }

  /**
   * The reader of `s` wants more: the socket resumes if it held it; the peer gets window if it asked for flow control.
   */
  acknowledge(s: SpdyStream): void {
    if (this.heldBy === s) this.release();
    if (this.peerDoesFlowControl && s.recvUnacked > 0 && !s.remoteFin && !s.destroyed) {
      this.send({ type: 'window_update', streamId: s.id, delta: s.recvUnacked });
      s.recvUnacked = 0;
    }
  }

  /** A stream is gone: it holds the socket no more. */
  forget(id: number): void {
    if (this.heldBy?.id === id) this.release();
  }

  /** The peer's SETTINGS: INITIAL_WINDOW_SIZE moves every stream's send window by the difference. */
  settings(entries: readonly { id: number; value: number }[], streams: Iterable<SpdyStream>): void {
    for (const e of entries) {
      if (e.id !== SettingsId.INITIAL_WINDOW_SIZE) continue;
      this.peerDoesFlowControl = true;
      const delta = e.value - this.peerInitialWindow;
      this.peerInitialWindow = e.value;
      for (const s of streams) {
        s.sendWindow += delta;
        s.windowOpened();
      }
    }
  }

  /** The peer's WINDOW_UPDATE for `s` (gone streams ignored). */
  windowUpdate(s: SpdyStream | undefined, delta: number): void {
    this.peerDoesFlowControl = true;
    if (!s) return;
    s.sendWindow += delta;
    s.windowOpened();
  }

  private release(): void {
    this.heldBy = undefined;
    if (!this.closed()) this.socket.resume();
  }
}
