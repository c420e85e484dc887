/**
 * Pruning fields from protobuf bytes before decoding, differentially against proto-loader: the
 * pruned answer decodes to the full one with those fields at their defaults, everything else equal.
 */
import { describe, expect, it } from 'vitest';
import { criMethods } from '../../src/cri/proto.js';
import { fieldPruner } from '../../src/cri/prune-fields.js';

type Codec = { responseSerialize(v: unknown): Buffer; responseDeserialize(b: Buffer): unknown };
const m = criMethods('RuntimeService');
const sandboxStatsCodec = m.ListPodSandboxStats as unknown as Codec;
const containerStatsCodec = m.ListContainerStats as unknown as Codec;

const containerStats = (id: string) => ({
  attributes: { id, metadata: { name: `c-${id}` }, labels: { 'io.kubernetes.pod.uid': `u-${id}` }, annotations: { note: 'x'.repeat(300) } },
  cpu: { timestamp: 5, usage_core_nano_seconds: { value: 123456789 } },
  memory: { timestamp: 5, working_set_bytes: { value: 4096 } },
});
const sandboxStats = (id: string) => ({
  attributes: { id, metadata: { name: 'p', namespace: 'default', uid: `u-${id}`, attempt: 0 }, labels: { a: 'b' }, annotations: { long: 'y'.repeat(200) } },
  linux: {
    cpu: { timestamp: 7, usage_core_nano_seconds: { value: 99 } },
    network: { timestamp: 7, default_interface: { name: 'eth0', rx_bytes: { value: 10 }, tx_bytes: { value: 20 } }, interfaces: [] },
    process: { timestamp: 7, process_count: { value: 3 } },
    containers: [containerStats(`${id}-1`), containerStats(`${id}-2`)],
  },
});

describe('fieldPruner', () => {
  it("drops a sandbox's container stats, labels and annotations, and nothing else", () => {
    const bytes = sandboxStatsCodec.responseSerialize({ stats: [sandboxStats('a'), sandboxStats('b')] });
    const pruned = fieldPruner([
      [1, 2, 5],
      [1, 1, 3],
      [1, 1, 4],
    ])(bytes);
    expect(pruned.length).toBeLessThan(bytes.length);
    const full = sandboxStatsCodec.responseDeserialize(bytes) as { stats: Record<string, any>[] };
    for (const s of full.stats) {
      s.linux.containers = [];
      s.attributes.labels = {};
      s.attributes.annotations = {};
    }
    expect(sandboxStatsCodec.responseDeserialize(pruned)).toEqual(full);
  });

  it("drops a container's annotations, across a length that needs fewer varint bytes after", () => {
    const bytes = containerStatsCodec.responseSerialize({ stats: [containerStats('a'), containerStats('b')] });
    const pruned = fieldPruner([[1, 1, 4]])(bytes);
    expect(bytes.length - pruned.length).toBeGreaterThan(600);
    const full = containerStatsCodec.responseDeserialize(bytes) as { stats: Record<string, any>[] };
    for (const s of full.stats) s.attributes.annotations = {};
    expect(containerStatsCodec.responseDeserialize(pruned)).toEqual(full);
  });

  it('returns the bytes themselves when there is nothing to drop or they cannot be walked', () => {
    const prune = fieldPruner([[1, 1, 4]]);
    const none = containerStatsCodec.responseSerialize({ stats: [{ ...containerStats('a'), attributes: { id: 'a' } }] });
    expect(prune(none)).toBe(none);
    const cut = containerStatsCodec.responseSerialize({ stats: [containerStats('a')] }).subarray(0, 25);
    expect(prune(cut)).toBe(cut);
    const group = Buffer.from([0x0b, 0x0c]);
    expect(prune(group)).toBe(group);
  });
});
