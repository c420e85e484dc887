/**
 * The channel framing of Kubernetes WebSocket protocols, shared by remote command, port-forward
 * and test clients: binary frames are [channel byte][data]; `base64.*` protocols use text frames
 * "<'0'+channel><base64 data>".
 */
import type { RawData } from 'ws';

/** Whether a subprotocol uses the base64 text framing. */
export const isBase64Protocol = (protocol: string): boolean => protocol.includes('base64');

/** One received WebSocket message as a Buffer. */
export function messageBytes(raw: RawData): Buffer {
  return Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw);
}

/** Encodes `data` for channel `ch`: the frame and whether it is binary. */
export function encodeChannelFrame(
  ch: number,
  data: Buffer,
  base64: boolean,
): { frame: Buffer | string; binary: boolean } {
  return base64
    ? { frame: `${String.fromCharCode(48 + ch)}${data.toString('base64')}`, binary: false }
    : { frame: Buffer.concat([Buffer.from([ch]), data]), binary: true };
}

/** Decodes a received message into its channel and data; undefined for an empty message. */
export function decodeChannelFrame(
  raw: RawData,
  isBinary: boolean,
  base64: boolean,
): { ch: number; data: Buffer } | undefined {
  const b = messageBytes(raw);
  if (!b.length) return undefined;
  if (base64 && !isBinary) return { ch: b[0] - 48, data: Buffer.from(b.subarray(1).toString('latin1'), 'base64') };
  return { ch: b[0], data: b.subarray(1) };
}
