import { describe, expect, it } from 'vitest';
import zlib from 'node:zlib';
import { encodeFrame, FrameDecoder, FLAG_FIN, RstStatus, type Frame } from '../../../src/streaming/spdy/frames.js';
import { adler32, decodeNameValues, encodeNameValues, HeaderCodec } from '../../../src/streaming/spdy/header-block.js';
import { spdy3Dictionary } from '../../../src/streaming/spdy/dictionary.js';

const every: Exclude<Frame, { type: 'unknown_control' }>[] = [
  { type: 'data', streamId: 3, flags: FLAG_FIN, data: Buffer.from('hello') },
  { type: 'data', streamId: 0x7fffffff, flags: 0, data: Buffer.alloc(0) },
  {
    type: 'syn_stream',
    streamId: 1,
    associatedStreamId: 0,
    priority: 7,
    flags: FLAG_FIN,
    headerBlock: Buffer.from([1, 2, 3]),
  },
  { type: 'syn_reply', streamId: 5, flags: 0, headerBlock: Buffer.from([9]) },
  { type: 'headers', streamId: 7, flags: FLAG_FIN, headerBlock: Buffer.alloc(0) },
  { type: 'rst_stream', streamId: 9, status: RstStatus.CANCEL },
  {
    type: 'settings',
    flags: 1,
    entries: [
      { flags: 0, id: 7, value: 65536 },
      { flags: 1, id: 4, value: 100 },
    ],
  },
  { type: 'ping', id: 0xfffffffe },
  { type: 'goaway', lastGoodStreamId: 11, status: 0 },
  { type: 'window_update', streamId: 1, delta: 0x7fffffff },
];

describe('SPDY/3.1 frames', () => {
  it('round-trips every frame type, whole and split at every byte boundary', () => {
    const wire = Buffer.concat(every.map(encodeFrame));
    expect(new FrameDecoder().push(wire)).toEqual({ frames: every });
    for (let cut = 1; cut < wire.length; cut += 7) {
      const d = new FrameDecoder();
      const a = d.push(wire.subarray(0, cut));
      const b = d.push(wire.subarray(cut));
      expect([...a.frames, ...b.frames]).toEqual(every);
    }
  });

  it('writes the wire layout of the spec', () => {
    expect(encodeFrame({ type: 'ping', id: 1 }).toString('hex')).toBe('80030006000000040000000' + '1');
    expect(encodeFrame({ type: 'data', streamId: 3, flags: FLAG_FIN, data: Buffer.from('a') }).toString('hex')).toBe(
      '000000030100000161',
    );
    expect(encodeFrame({ type: 'rst_stream', streamId: 1, status: 5 }).toString('hex')).toBe(
      '80030003000000080000000100000005',
    );
  });

  it('reports malformed frames once and stops', () => {
    const cases: [string, Buffer][] = [
      ['version 2', Buffer.from('8002000600000004' + '00000001', 'hex')],
      ['short ping', Buffer.from('80030006000000030000ff', 'hex')],
      ['rst length', Buffer.from('8003000300000004' + '00000001', 'hex')],
      ['settings count', Buffer.from('8003000400000004' + '00000002', 'hex')],
      ['zero window delta', Buffer.from('8003000900000008' + '0000000100000000', 'hex')],
      ['syn stream id 0', Buffer.from('800300010000000a' + '00000000000000000000', 'hex')],
    ];
    for (const [what, bytes] of cases) {
      const d = new FrameDecoder();
      const r = d.push(bytes);
      expect(r.error, what).toBeDefined();
      expect(d.push(encodeFrame({ type: 'ping', id: 1 })).frames, what).toEqual([]);
    }
    expect(new FrameDecoder(1024).push(Buffer.from('0000000100100000', 'hex')).error?.error).toMatch(/exceeds 1024/);
  });

  it('ignores unknown control frame types', () => {
    const r = new FrameDecoder().push(Buffer.from('8003000a00000002abcd', 'hex'));
    expect(r.frames[0]).toMatchObject({ type: 'unknown_control', controlType: 10 });
  });

  it('never throws on random bytes (fuzz)', () => {
    let seed = 42;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    for (let i = 0; i < 3000; i++) {
      const d = new FrameDecoder(1 << 16);
      const n = Math.floor(rnd() * 64);
      // Half the inputs start like a control frame, to get past the header.
      const bytes = Buffer.from(
        Array.from({ length: n }, (_, j) => (j < 2 && rnd() < 0.5 ? [0x80, 0x03][j] : Math.floor(rnd() * 256))),
      );
      expect(() => {
        d.push(bytes);
        d.push(bytes);
      }).not.toThrow();
    }
  });
});

describe('SPDY/3 header blocks', () => {
  it('round-trips the plain layout, with multi-valued headers joined by NUL', () => {
    const b = encodeNameValues([
      ['StreamType', 'stdout'],
      ['x', ['a', 'b']],
    ]);
    expect([...decodeNameValues(b)]).toEqual([
      ['streamtype', ['stdout']],
      ['x', ['a', 'b']],
    ]);
  });
  it('rejects malformed plain blocks', () => {
    expect(() => decodeNameValues(Buffer.from('00000001', 'hex'))).toThrow(/truncated/);
    expect(() => decodeNameValues(Buffer.from('0000000100000000', 'hex'))).toThrow(/empty header name/);
    expect(() => decodeNameValues(Buffer.from('00000002000000016100000000000000016100000000', 'hex'))).toThrow(
      /duplicate/,
    );
  });
  it('uses the SPDY/3 dictionary (zlib dictionary id e3c6a7c2) and one zlib stream per direction', async () => {
    expect(spdy3Dictionary.length).toBe(1423);
    const sender = new HeaderCodec();
    const receiver = new HeaderCodec();
    const blocks = [];
    for (const t of ['error', 'stdin', 'stdout', 'stderr', 'resize'])
      blocks.push(
        sender.compress([
          ['streamtype', t],
          ['port', '80'],
        ]),
      );
    // The first block carries the zlib header naming the dictionary; later ones continue the stream.
    expect(blocks[0].subarray(2, 6).toString('hex')).toBe('e3c6a7c2');
    expect(blocks[4].length).toBeLessThan(blocks[0].length); // no zlib header after the first
    expect(adler32(spdy3Dictionary)).toBe(0xe3c6a7c2);
    const got = [];
    for (const b of blocks) got.push((await receiver.decompress(b)).get('streamtype')![0]);
    expect(got).toEqual(['error', 'stdin', 'stdout', 'stderr', 'resize']);
    // An independent zlib with the dictionary reads the first block too (wire compatibility).
    const plain = zlib.inflateSync(blocks[0], {
      dictionary: spdy3Dictionary,
      finishFlush: zlib.constants.Z_SYNC_FLUSH,
    });
    expect([...decodeNameValues(plain)]).toEqual([
      ['streamtype', ['error']],
      ['port', ['80']],
    ]);
    await expect(new HeaderCodec().decompress(Buffer.from('garbage!'))).rejects.toThrow();
    sender.close();
    receiver.close();
  });
});
