/**
 * The stats answers' own decoders, differentially against proto-loader: the same bytes decode
 * to what proto-loader gives, with the skipped fields at their defaults.
 */
import { describe, expect, it } from 'vitest';
import { criMethods } from '../../src/cri/proto.js';
import { decodeListContainerStats, decodeListPodSandboxStats } from '../../src/cri/stats-wire.js';

type Codec = { responseSerialize(v: unknown): Buffer; responseDeserialize(b: Buffer): unknown };
const m = criMethods('RuntimeService');
const sandboxStatsCodec = m.ListPodSandboxStats as unknown as Codec;
const containerStatsCodec = m.ListContainerStats as unknown as Codec;

/** Timestamps in ns since 1970 are above 2^53; counters may use all 64 bits. */
const NOW_NS = '1795000000123456789';
const containerStats = (id: string) => ({
  attributes: {
    id,
    metadata: { name: `c-${id}`, attempt: 3 },
    labels: { 'io.kubernetes.pod.uid': `u-${id}`, 'io.kubernetes.container.name': `c-${id}`, ünï: 'cødé' },
    annotations: { note: 'x'.repeat(300) },
  },
  cpu: { timestamp: NOW_NS, usage_core_nano_seconds: { value: '987654321012' }, usage_nano_cores: { value: 1234567 } },
  memory: {
    timestamp: NOW_NS,
    working_set_bytes: { value: 4096 },
    available_bytes: { value: '18446744073709551615' },
    usage_bytes: { value: 2 ** 31 },
    rss_bytes: { value: 2 ** 32 + 5 },
    page_faults: { value: 127 },
    major_page_faults: { value: 128 },
  },
  writable_layer: {
    timestamp: NOW_NS,
    fs_id: { mountpoint: '/var/lib/containerd' },
    used_bytes: { value: 8192 },
    inodes_used: { value: 9 },
  },
  swap: { timestamp: NOW_NS, swap_usage_bytes: { value: 1 } },
});
const sandboxStats = (id: string) => ({
  attributes: {
    id,
    metadata: { name: 'p', namespace: 'default', uid: `u-${id}`, attempt: 1 },
    labels: { a: 'b' },
    annotations: { long: 'y'.repeat(200) },
  },
  linux: {
    cpu: { timestamp: 7, usage_core_nano_seconds: { value: 99 } },
    memory: { timestamp: 7, working_set_bytes: { value: 2 ** 40 }, rss_bytes: { value: 0 } },
    network: {
      timestamp: 7,
      default_interface: { name: 'eth0', rx_bytes: { value: 10 }, tx_bytes: { value: 20 } },
      interfaces: [
        {
          name: 'eth0',
          rx_bytes: { value: 10 },
          rx_errors: { value: 1 },
          tx_bytes: { value: 20 },
          tx_errors: { value: 2 },
        },
        { name: 'eth1', rx_bytes: { value: '5000000000' } },
      ],
    },
    process: { timestamp: 7, process_count: { value: 3 } },
    containers: [containerStats(`${id}-1`), containerStats(`${id}-2`)],
  },
  windows: { cpu: { timestamp: 1 } },
});

type Decoded = { stats: Record<string, any>[] };

describe('stats answers decoded from the wire', () => {
  it('ListContainerStats: everything proto-loader gives (swap included), the annotations left at their defaults', () => {
    const bytes = containerStatsCodec.responseSerialize({
      stats: [containerStats('a'), containerStats('b'), { attributes: { id: 'bare' } }],
    });
    const want = containerStatsCodec.responseDeserialize(bytes) as Decoded;
    for (const s of want.stats) s.attributes.annotations = {};
    const got = decodeListContainerStats(bytes) as Decoded;
    expect(got).toEqual(want);
    // Not vacuous: the large numbers came through.
    expect(got.stats[0].memory.available_bytes.value).toBe(2 ** 64); // 2^64 − 1, rounded as protobufjs rounds it
    expect(got.stats[0].cpu.usage_core_nano_seconds.value).toBe(987654321012);
    expect(got.stats[0].cpu.timestamp).toBe(Number(NOW_NS));
    expect(got.stats[2].cpu).toBeNull();
    expect(got.stats[0].swap).toEqual({
      timestamp: Number(NOW_NS),
      swap_usage_bytes: { value: 1 },
      swap_available_bytes: null,
    });
  });

  it("ListPodSandboxStats: the sandboxes' own figures; labels, annotations, Windows part and container stats at their defaults", () => {
    const bytes = sandboxStatsCodec.responseSerialize({ stats: [sandboxStats('a'), sandboxStats('b')] });
    const want = sandboxStatsCodec.responseDeserialize(bytes) as Decoded;
    for (const s of want.stats) {
      s.attributes.labels = {};
      s.attributes.annotations = {};
      s.linux.containers = [];
      s.windows = null;
    }
    const got = decodeListPodSandboxStats(bytes) as Decoded;
    expect(got).toEqual(want);
    expect(got.stats[1].linux.network.interfaces[1].rx_bytes.value).toBe(5000000000);
    expect(got.stats[1].attributes.metadata).toEqual({ name: 'p', namespace: 'default', uid: 'u-b', attempt: 1 });
  });

  it('reads negative int64s and skips fields it does not know, as proto-loader does', () => {
    const known = containerStatsCodec.responseSerialize({
      stats: [{ attributes: { id: 'n' }, cpu: { timestamp: -5 } }],
    });
    // A varint field 7 and a length-delimited field 8 that a newer runtime might send.
    const bytes = Buffer.concat([known, Buffer.from([0x38, 0x96, 0x01, 0x42, 0x02, 0x68, 0x69])]);
    const want = containerStatsCodec.responseDeserialize(bytes);
    expect(decodeListContainerStats(bytes)).toEqual(want);
    expect((decodeListContainerStats(bytes) as Decoded).stats[0].cpu.timestamp).toBe(-5);
  });

  it('decodes an empty answer and refuses bytes that are not one', () => {
    expect(decodeListPodSandboxStats(Buffer.alloc(0))).toEqual({ stats: [] });
    const bytes = containerStatsCodec.responseSerialize({ stats: [containerStats('a')] });
    const cut = bytes.subarray(0, 40);
    expect(() => containerStatsCodec.responseDeserialize(cut)).toThrow();
    expect(() => decodeListContainerStats(cut)).toThrow(/invalid wire format/);
    // A string field sent as a varint.
    expect(() => decodeListContainerStats(Buffer.from([0x0a, 0x04, 0x0a, 0x02, 0x08, 0x01]))).toThrow(
      /invalid wire format/,
    );
  });
});
