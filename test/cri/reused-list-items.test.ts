/**
 * The reusing decoder of unfiltered list responses, differentially against proto-loader's own
 * decoding of the same bytes: same shapes always, the same objects for unchanged items, new ones
 * for changed items, and a full decode of anything that is not a plain item list.
 */
import { describe, expect, it } from 'vitest';
import { criMethods } from '../../src/cri/proto.js';
import { isItemList, reusingListDecoder } from '../../src/cri/reused-list-items.js';
import type * as cri from '../../src/cri/types.js';

const m = criMethods('RuntimeService');
type Codec = { responseSerialize(v: unknown): Buffer; responseDeserialize(b: Buffer): unknown };
const containersCodec = m.ListContainers as unknown as Codec;
const sandboxesCodec = m.ListPodSandbox as unknown as Codec;

function container(id: string, state = 'CONTAINER_RUNNING'): Partial<cri.Container> {
  return {
    id,
    pod_sandbox_id: `sb-${id}`,
    metadata: { name: `c-${id}`, attempt: 1 },
    image: { image: 'busybox:1.36' } as cri.ImageSpec,
    image_ref: 'sha256:abc',
    state: state as cri.Container['state'],
    created_at: 1_700_000_000_123_456,
    labels: { 'io.kubernetes.pod.uid': `uid-${id}`, 'io.kubernetes.container.name': `c-${id}` },
    annotations: { 'io.kubernetes.container.restartCount': '0' },
  };
}

const encode = (containers: Array<Partial<cri.Container>>) => containersCodec.responseSerialize({ containers });

describe('reusingListDecoder', () => {
  it('decodes exactly as proto-loader does, sandboxes and containers', () => {
    const containers = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers');
    const bytes = encode([container('a'), container('b', 'CONTAINER_EXITED'), container('c')]);
    expect(containers(bytes)).toEqual(containersCodec.responseDeserialize(bytes));
    expect(containers(encode([]))).toEqual(containersCodec.responseDeserialize(encode([])));

    const sandboxes = reusingListDecoder((b) => sandboxesCodec.responseDeserialize(b), 'items');
    const sb = sandboxesCodec.responseSerialize({
      items: [{ id: 's1', metadata: { name: 'p', namespace: 'default', uid: 'u1', attempt: 0 }, state: 'SANDBOX_READY', created_at: 5, labels: { a: 'b' } }],
    });
    expect(sandboxes(sb)).toEqual(sandboxesCodec.responseDeserialize(sb));
    expect((sandboxes(sb) as { items: cri.PodSandbox[] }).items[0].state).toBe('SANDBOX_READY');
  });

  it('answers an unchanged item with the object it decoded last time, and a changed or returning one with a new object', () => {
    const decode = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers');
    const first = (decode(encode([container('a'), container('b')])) as { containers: cri.Container[] }).containers;
    const second = (decode(encode([container('a'), container('b', 'CONTAINER_EXITED')])) as { containers: cri.Container[] }).containers;
    expect(second[0]).toBe(first[0]);
    expect(second[1]).not.toBe(first[1]);
    expect(second[1].state).toBe('CONTAINER_EXITED');
    // Only the last answer is remembered: an item that left and came back is decoded again.
    decode(encode([container('a')]));
    const fourth = (decode(encode([container('a'), container('b', 'CONTAINER_EXITED')])) as { containers: cri.Container[] }).containers;
    expect(fourth[0]).toBe(first[0]);
    expect(fourth[1]).not.toBe(second[1]);
    expect(fourth[1]).toEqual(second[1]);
  });

  it('freezes what it shares, so a caller cannot change another caller’s answer', () => {
    const decode = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers');
    const [c] = (decode(encode([container('a')])) as { containers: cri.Container[] }).containers;
    expect(() => {
      (c as { state: string }).state = 'CONTAINER_EXITED';
    }).toThrow(TypeError);
    expect(() => {
      c.labels.x = 'y';
    }).toThrow(TypeError);
    expect(Object.isFrozen(c.metadata)).toBe(true);
  });

  it('decodes in full what is not a plain list of items that begin with their id', () => {
    const decode = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers');
    // An item that does not begin with its id (here: has none) cannot be recognised; it is decoded each time.
    const { id: _, ...withoutId } = container('x');
    const noId = encode([withoutId]);
    const a = (decode(noId) as { containers: cri.Container[] }).containers[0];
    const b = (decode(noId) as { containers: cri.Container[] }).containers[0];
    expect(a).toEqual((containersCodec.responseDeserialize(noId) as { containers: cri.Container[] }).containers[0]);
    expect(a).not.toBe(b);
    // An unknown top-level field (2, varint) makes the whole response go through the full decoder.
    const odd = Buffer.concat([encode([container('a')]), Buffer.from([0x10, 0x01])]);
    expect(isItemList(odd)).toBe(false);
    expect(decode(odd)).toEqual(containersCodec.responseDeserialize(odd));
    // A truncated response fails as the full decoder fails.
    const cut = encode([container('a'), container('b')]).subarray(0, 40);
    expect(() => decode(cut)).toThrow();
  });

  it('recognises an item whose map entries come in another order (as Go writes them), and not one with a changed entry', () => {
    const decode = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers');
    const c = container('a');
    const reversed = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).reverse());
    const shuffled = { ...c, labels: reversed(c.labels!), annotations: reversed(c.annotations!) };
    expect(encode([shuffled]).equals(encode([c]))).toBe(false);
    const first = (decode(encode([c])) as { containers: cri.Container[] }).containers[0];
    expect((decode(encode([shuffled])) as { containers: cri.Container[] }).containers[0]).toBe(first);
    // Same length, same fields but one label value changed by one byte: a new object with the new value.
    const changed = { ...shuffled, labels: { ...shuffled.labels, 'io.kubernetes.pod.uid': 'uid-b' } };
    const again = (decode(encode([changed])) as { containers: cri.Container[] }).containers[0];
    expect(again).not.toBe(first);
    expect(again.labels['io.kubernetes.pod.uid']).toBe('uid-b');
    // Two entries swapping values is a different map, though every byte is still there.
    const swapped = { ...c, annotations: { a: 'x', b: 'y' } };
    const swappedBack = { ...c, annotations: { a: 'y', b: 'x' } };
    const s1 = (decode(encode([swapped])) as { containers: cri.Container[] }).containers[0];
    const s2 = (decode(encode([swappedBack])) as { containers: cri.Container[] }).containers[0];
    expect(s2).not.toBe(s1);
    expect(s2.annotations).toEqual({ a: 'y', b: 'x' });
  });

  it('remembers an item where the latest response has it, not in the first one', () => {
    const decode = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers');
    const r1 = encode([container('a')]);
    const first = (decode(r1) as { containers: cri.Container[] }).containers[0];
    const r2 = encode([container('a')]);
    expect((decode(r2) as { containers: cri.Container[] }).containers[0]).toBe(first);
    // r1 is no longer referred to: what it holds now cannot matter.
    r1.fill(0);
    expect((decode(encode([container('a')])) as { containers: cri.Container[] }).containers[0]).toBe(first);
  });

  it('compares items with more fields than its scratch space first holds (many map entries)', () => {
    const decode = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers');
    const labels = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`k${i}`, `v${i}`]));
    const c = { ...container('a'), labels };
    const first = (decode(encode([c])) as { containers: cri.Container[] }).containers[0];
    const shuffled = { ...c, labels: Object.fromEntries(Object.entries(labels).reverse()) };
    expect((decode(encode([shuffled])) as { containers: cri.Container[] }).containers[0]).toBe(first);
    const changed = { ...c, labels: { ...labels, k149: 'v14X' } };
    expect((decode(encode([changed])) as { containers: cri.Container[] }).containers[0].labels.k149).toBe('v14X');
  });

  it('tells a list of items from anything else', () => {
    expect(isItemList(encode([container('a'), container('bb')]))).toBe(true);
    expect(isItemList(Buffer.alloc(0))).toBe(true);
    expect(isItemList(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))).toBe(false);
    expect(isItemList(encode([container('a')]).subarray(0, 30))).toBe(false);
  });
});
