/**
 * SPDY/3.1 frames: encoding and an incremental decoder (pure, no I/O). Header blocks stay
 * compressed here; `header-block.ts` turns them into names and values with the connection's zlib
 * contexts.
 *
 *   control: |1| version(15)=3 | type(16) | flags(8) | length(24) | payload
 *   data:    |0| stream-id(31)             | flags(8) | length(24) | payload
 */

/** Control frame types. */
export const FrameType = {
  SYN_STREAM: 1,
  SYN_REPLY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  HEADERS: 8,
  WINDOW_UPDATE: 9,
} as const;
/** FLAG_FIN (data, SYN_STREAM, SYN_REPLY, HEADERS). */
export const FLAG_FIN = 0x01;
/** FLAG_UNIDIRECTIONAL (SYN_STREAM). */
export const FLAG_UNIDIRECTIONAL = 0x02;
/** RST_STREAM status codes. */
export const RstStatus = {
  PROTOCOL_ERROR: 1,
  INVALID_STREAM: 2,
  REFUSED_STREAM: 3,
  UNSUPPORTED_VERSION: 4,
  CANCEL: 5,
  INTERNAL_ERROR: 6,
  FLOW_CONTROL_ERROR: 7,
  STREAM_IN_USE: 8,
  STREAM_ALREADY_CLOSED: 9,
  FRAME_TOO_LARGE: 11,
} as const;
/** GOAWAY status codes. */
export const GoAwayStatus = { OK: 0, PROTOCOL_ERROR: 1, INTERNAL_ERROR: 2 } as const;
/** A stream's window before any INITIAL_WINDOW_SIZE setting (SPDY/3: 64 KiB). */
export const DEFAULT_WINDOW = 64 * 1024;

/** SETTINGS ids used here. */
export const SettingsId = { MAX_CONCURRENT_STREAMS: 4, INITIAL_WINDOW_SIZE: 7 } as const;

/** The largest payload we accept (24-bit length field; bigger is a protocol error anyway). */
export const MAX_FRAME_PAYLOAD = 0xffffff;

/** A decoded frame. */
export type Frame =
  | { type: 'data'; streamId: number; flags: number; data: Buffer }
  | {
      type: 'syn_stream';
      streamId: number;
      associatedStreamId: number;
      priority: number;
      flags: number;
      headerBlock: Buffer;
    }
  | { type: 'syn_reply'; streamId: number; flags: number; headerBlock: Buffer }
  | { type: 'headers'; streamId: number; flags: number; headerBlock: Buffer }
  | { type: 'rst_stream'; streamId: number; status: number }
  | { type: 'settings'; flags: number; entries: { flags: number; id: number; value: number }[] }
  | { type: 'ping'; id: number }
  | { type: 'goaway'; lastGoodStreamId: number; status: number }
  | { type: 'window_update'; streamId: number; delta: number }
  | { type: 'unknown_control'; version: number; controlType: number; flags: number; payload: Buffer };

/** A frame that could not be decoded: the connection answers with GOAWAY (or RST when it has a stream). */
export interface FrameError {
  error: string;
  streamId?: number;
  version?: number;
}

const u31 = (b: Buffer, o: number) => b.readUInt32BE(o) & 0x7fffffff;

function control(type: number, flags: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(8);
  h.writeUInt16BE(0x8003, 0);
  h.writeUInt16BE(type, 2);
  h.writeUInt32BE(payload.length, 4);
  h[4] = flags;
  return Buffer.concat([h, payload]);
}

/** Encodes a frame. */
export function encodeFrame(f: Exclude<Frame, { type: 'unknown_control' }>): Buffer {
  switch (f.type) {
    case 'data': {
      const h = Buffer.alloc(8);
      h.writeUInt32BE(f.streamId & 0x7fffffff, 0);
      h.writeUInt32BE(f.data.length, 4);
      h[4] = f.flags;
      return Buffer.concat([h, f.data]);
    }
    case 'syn_stream': {
      const p = Buffer.alloc(10);
      p.writeUInt32BE(f.streamId & 0x7fffffff, 0);
      p.writeUInt32BE(f.associatedStreamId & 0x7fffffff, 4);
      p[8] = (f.priority & 0x7) << 5;
      return control(FrameType.SYN_STREAM, f.flags, Buffer.concat([p, f.headerBlock]));
    }
    case 'syn_reply':
    case 'headers': {
      const p = Buffer.alloc(4);
      p.writeUInt32BE(f.streamId & 0x7fffffff, 0);
      return control(
        f.type === 'syn_reply' ? FrameType.SYN_REPLY : FrameType.HEADERS,
        f.flags,
        Buffer.concat([p, f.headerBlock]),
      );
    }
    case 'rst_stream':
    case 'goaway':
    case 'window_update': {
      const p = Buffer.alloc(8);
      p.writeUInt32BE((f.type === 'goaway' ? f.lastGoodStreamId : f.streamId) & 0x7fffffff, 0);
      if (f.type === 'window_update') p.writeUInt32BE(f.delta & 0x7fffffff, 4);
      else p.writeUInt32BE(f.status >>> 0, 4);
      const t =
        f.type === 'rst_stream'
          ? FrameType.RST_STREAM
          : f.type === 'goaway'
            ? FrameType.GOAWAY
            : FrameType.WINDOW_UPDATE;
      return control(t, 0, p);
    }
    case 'settings': {
      const p = Buffer.alloc(4 + 8 * f.entries.length);
      p.writeUInt32BE(f.entries.length, 0);
      f.entries.forEach((e, i) => {
        p.writeUInt32BE(e.id & 0xffffff, 4 + 8 * i);
        p[4 + 8 * i] = e.flags;
        p.writeUInt32BE(e.value >>> 0, 8 + 8 * i);
      });
      return control(FrameType.SETTINGS, f.flags, p);
    }
    case 'ping': {
      const p = Buffer.alloc(4);
      p.writeUInt32BE(f.id >>> 0, 0);
      return control(FrameType.PING, 0, p);
    }
  }
}

/** Decodes one frame's payload given its 8-byte header fields. */
function decodePayload(first: number, flags: number, payload: Buffer): Frame | FrameError {
  if (!(first & 0x80000000)) return { type: 'data', streamId: first & 0x7fffffff, flags, data: payload };
  const version = (first >>> 16) & 0x7fff;
  const type = first & 0xffff;
  if (version !== 3) return { error: `unsupported SPDY version ${version}`, version };
  const need = (n: number) =>
    payload.length < n ? { error: `control frame type ${type} too short (${payload.length} < ${n})` } : undefined;
  switch (type) {
    case FrameType.SYN_STREAM: {
      const e = need(10);
      if (e) return e;
      const streamId = u31(payload, 0);
      if (streamId === 0) return { error: 'SYN_STREAM with stream id 0' };
      return {
        type: 'syn_stream',
        streamId,
        associatedStreamId: u31(payload, 4),
        priority: payload[8] >> 5,
        flags,
        headerBlock: payload.subarray(10),
      };
    }
    case FrameType.SYN_REPLY:
    case FrameType.HEADERS: {
      const e = need(4);
      if (e) return e;
      return {
        type: type === FrameType.SYN_REPLY ? 'syn_reply' : 'headers',
        streamId: u31(payload, 0),
        flags,
        headerBlock: payload.subarray(4),
      };
    }
    case FrameType.RST_STREAM: {
      if (payload.length !== 8) return { error: `RST_STREAM length ${payload.length} != 8` };
      return { type: 'rst_stream', streamId: u31(payload, 0), status: payload.readUInt32BE(4) };
    }
    case FrameType.SETTINGS: {
      const e = need(4);
      if (e) return e;
      const n = payload.readUInt32BE(0);
      if (payload.length !== 4 + 8 * n) return { error: `SETTINGS with ${n} entries has length ${payload.length}` };
      const entries = Array.from({ length: n }, (_, i) => ({
        flags: payload[4 + 8 * i],
        id: payload.readUInt32BE(4 + 8 * i) & 0xffffff,
        value: payload.readUInt32BE(8 + 8 * i),
      }));
      return { type: 'settings', flags, entries };
    }
    case FrameType.PING: {
      if (payload.length !== 4) return { error: `PING length ${payload.length} != 4` };
      return { type: 'ping', id: payload.readUInt32BE(0) };
    }
    case FrameType.GOAWAY: {
      if (payload.length !== 8) return { error: `GOAWAY length ${payload.length} != 8` };
      return { type: 'goaway', lastGoodStreamId: u31(payload, 0), status: payload.readUInt32BE(4) };
    }
    case FrameType.WINDOW_UPDATE: {
      if (payload.length !== 8) return { error: `WINDOW_UPDATE length ${payload.length} != 8` };
      const delta = u31(payload, 4);
      if (delta === 0) return { error: 'WINDOW_UPDATE with delta 0', streamId: u31(payload, 0) };
      return { type: 'window_update', streamId: u31(payload, 0), delta };
    }
    default:
      // Unknown control frames are ignored by receivers (spec §2.2.1).
      return { type: 'unknown_control', version, controlType: type, flags, payload };
  }
}

/**
 * Incremental decoder: `push` bytes as they arrive, get whole frames (or the first error, after
 * which the decoder stops). Never throws on input.
 */
export class FrameDecoder {
  private buf: Buffer = Buffer.alloc(0);
  private failed = false;

  constructor(private readonly maxPayload = MAX_FRAME_PAYLOAD) {}

  /** Appends `chunk`; returns the frames it completes and, at most once, an error. */
  push(chunk: Buffer): { frames: Frame[]; error?: FrameError } {
    const frames: Frame[] = [];
    if (this.failed) return { frames };
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    let off = 0;
    while (this.buf.length - off >= 8) {
      const first = this.buf.readUInt32BE(off);
      const flags = this.buf[off + 4];
      const len = this.buf.readUInt32BE(off + 4) & 0xffffff;
      if (len > this.maxPayload) {
        this.failed = true;
        return {
          frames,
          error: {
            error: `frame payload ${len} exceeds ${this.maxPayload}`,
            streamId: first & 0x80000000 ? undefined : first & 0x7fffffff,
          },
        };
      }
      if (this.buf.length - off < 8 + len) break;
      // A view, not a copy: buffers given to push() are never written to afterwards.
      const payload = this.buf.subarray(off + 8, off + 8 + len);
      off += 8 + len;
      const f = decodePayload(first, flags, payload);
      if ('error' in f) {
        this.failed = true;
        this.buf = Buffer.alloc(0);
        return { frames, error: f };
      }
      frames.push(f);
    }
    this.buf = off === this.buf.length ? Buffer.alloc(0) : this.buf.subarray(off);
    return { frames };
  }
}
