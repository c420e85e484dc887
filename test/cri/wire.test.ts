/** The in-place wire readers: varints at their boundaries and the latin1 slice. */
import { describe, expect, it } from 'vitest';
import { latin1, varint, varintEnd } from '../../src/cri/wire.js';

/** Protobuf's encoding of a non-negative integer below 2^53. */
function encode(n: number): number[] {
  const out: number[] = [];
  do {
    const low = n % 128;
    n = Math.floor(n / 128);
    out.push(n ? low | 0x80 : low);
  } while (n);
  return out;
}

describe('varint', () => {
  it('reads every length from one to five bytes, up to 35 bits, and where it ended', () => {
    for (const n of [
      0,
      1,
      127,
      128,
      300,
      2 ** 21 - 1,
      2 ** 21,
      2 ** 28 - 1,
      2 ** 28,
      2 ** 31,
      2 ** 32 + 5,
      2 ** 35 - 1,
    ]) {
      const bytes = encode(n);
      const b = Buffer.from([0xaa, ...bytes, 0x01]);
      expect(varint(b, 1)).toBe(n);
      expect(varintEnd).toBe(1 + bytes.length);
    }
  });

  it('refuses a varint longer than 35 bits, one cut short, and one that runs past `to`', () => {
    expect(varint(Buffer.from(encode(2 ** 35)), 0)).toBe(-1);
    expect(varint(Buffer.from([0x80, 0x80]), 0)).toBe(-1);
    expect(varint(Buffer.from([0x96, 0x01]), 0, 1)).toBe(-1);
    expect(varint(Buffer.from([0x80, 0x80, 0x80, 0x80]), 0)).toBe(-1);
  });
});

describe('latin1', () => {
  it('is one char per byte of the range', () => {
    const b = Buffer.from([0x61, 0xe9, 0x00, 0xff, 0x62]);
    expect(latin1(b, 1, 4)).toBe('\u00e9\u0000\u00ff');
    expect(latin1(b, 2, 2)).toBe('');
  });
});
