/**
 * The reusing decoder of unfiltered list responses, differentially against proto-loader's own
 * decoding of the same bytes: same shapes always, the same objects for unchanged items (maps in
 * any order), new ones for items whose fields before the maps or whose length changed, and a full
 * decode of anything that is not a plain item list.
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
    const containers = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers', 8);
    const bytes = encode([container('a'), container('b', 'CONTAINER_EXITED'), container('c')]);
    expect(containers(bytes)).toEqual(containersCodec.responseDeserialize(bytes));
    expect(containers(encode([]))).toEqual(containersCodec.responseDeserialize(encode([])));

    const sandboxes = reusingListDecoder((b) => sandboxesCodec.responseDeserialize(b), 'items', 5);
    const sb = sandboxesCodec.responseSerialize({
      items: [
        {
          id: 's1',
          metadata: { name: 'p', namespace: 'default', uid: 'u1', attempt: 0 },
          state: 'SANDBOX_READY',
          created_at: 5,
          labels: { a: 'b' },
        },
      ],
    });
    expect(sandboxes(sb)).toEqual(sandboxesCodec.responseDeserialize(sb));
    expect((sandboxes(sb) as { items: cri.PodSandbox[] }).items[0].state).toBe('SANDBOX_READY');
  });

  it('answers an unchanged item with the object it decoded last time, and a changed or returning one with a new object', () => {
    const decode = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers', 8);
    const first = (decode(encode([container('a'), container('b')])) as { containers: cri.Container[] }).containers;
    const second = (
      decode(encode([container('a'), container('b', 'CONTAINER_EXITED')])) as { containers: cri.Container[] }
    ).containers;
    expect(second[0]).toBe(first[0]);
    expect(second[1]).not.toBe(first[1]);
    expect(second[1].state).toBe('CONTAINER_EXITED');
    // Only the last answer is remembered: an item that left and came back is decoded again.
    decode(encode([container('a')]));
    const fourth = (
      decode(encode([container('a'), container('b', 'CONTAINER_EXITED')])) as { containers: cri.Container[] }
    ).containers;
    expect(fourth[0]).toBe(first[0]);
    expect(fourth[1]).not.toBe(second[1]);
    expect(fourth[1]).toEqual(second[1]);
  });

  it('answers with the last array itself, frozen, when no item is new, changed or gone, in whatever order', () => {
    const decode = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers', 8);
    const list = (cs: Array<Partial<cri.Container>>) =>
      (decode(encode(cs)) as { containers: cri.Container[] }).containers;
    const first = list([container('a'), container('b')]);
    expect(Object.isFrozen(first)).toBe(true);
    expect(list([container('b'), container('a')])).toBe(first);
    // One changed, one gone, one added, one twice: a new array each time.
    const changed = list([container('a'), container('b', 'CONTAINER_EXITED')]);
    expect(changed).not.toBe(first);
    expect(changed.map((c) => c.state)).toEqual(['CONTAINER_RUNNING', 'CONTAINER_EXITED']);
    const gone = list([container('a')]);
    expect(gone).not.toBe(changed);
    expect(list([container('a'), container('c')])).not.toBe(gone);
    const twice = list([container('a'), container('a')]);
    expect(twice).toHaveLength(2);
    expect(list([container('a'), container('a')])).not.toBe(twice);
    // The empty list is the same (frozen) empty array.
    expect(list([])).toBe(list([]));
  });

  it('freezes what it shares, so a caller cannot change another caller’s answer', () => {
    const decode = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers', 8);
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
    const decode = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers', 8);
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

  it('recognises an item whose map entries come in another order (as Go writes them)', () => {
    const decode = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers', 8);
    const c = container('a');
    const reversed = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).reverse());
    const shuffled = { ...c, labels: reversed(c.labels!), annotations: reversed(c.annotations!) };
    expect(encode([shuffled]).equals(encode([c]))).toBe(false);
    const first = (decode(encode([c])) as { containers: cri.Container[] }).containers[0];
    expect((decode(encode([shuffled])) as { containers: cri.Container[] }).containers[0]).toBe(first);
    // 150 labels, reversed: the same; one more label: a new object.
    const many = { ...c, labels: Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`k${i}`, `v${i}`])) };
    const m1 = (decode(encode([many])) as { containers: cri.Container[] }).containers[0];
    expect(
      (decode(encode([{ ...many, labels: reversed(many.labels) }])) as { containers: cri.Container[] }).containers[0],
    ).toBe(m1);
    const more = (
      decode(encode([{ ...many, labels: { ...many.labels, k150: 'v150' } }])) as { containers: cri.Container[] }
    ).containers[0];
    expect(more).not.toBe(m1);
    expect(more.labels.k150).toBe('v150');
  });

  it('decodes again an item whose fields before its maps changed, even at the same length', () => {
    const decode = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers', 8);
    const items = (c: Partial<cri.Container>) => (decode(encode([c])) as { containers: cri.Container[] }).containers[0];
    let prev = items(container('a'));
    for (const changed of [
      container('a', 'CONTAINER_EXITED'),
      { ...container('a', 'CONTAINER_EXITED'), created_at: 1_700_000_000_123_457 },
      {
        ...container('a', 'CONTAINER_EXITED'),
        created_at: 1_700_000_000_123_457,
        metadata: { name: 'c-a', attempt: 2 },
      },
      {
        ...container('a', 'CONTAINER_EXITED'),
        created_at: 1_700_000_000_123_457,
        metadata: { name: 'c-a', attempt: 2 },
        image_ref: 'sha256:abd',
      },
    ]) {
      const next = items(changed);
      expect(next).not.toBe(prev);
      expect(next).toEqual(
        (containersCodec.responseDeserialize(encode([changed])) as { containers: cri.Container[] }).containers[0],
      );
      prev = next;
    }
    // A created container (state 0, not written) that starts: the state field appears.
    const d2 = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers', 8);
    const created = (d2(encode([container('b', 'CONTAINER_CREATED')])) as { containers: cri.Container[] })
      .containers[0];
    const running = (d2(encode([container('b')])) as { containers: cri.Container[] }).containers[0];
    expect(created.state).toBe('CONTAINER_CREATED');
    expect(running.state).toBe('CONTAINER_RUNNING');
  });

  it('takes a map changed at the same length for the same item: CRI cannot change a sandbox or container’s maps', () => {
    const decode = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers', 8);
    const first = (decode(encode([container('a')])) as { containers: cri.Container[] }).containers[0];
    const relabelled = { ...container('a'), labels: { ...container('a').labels, 'io.kubernetes.pod.uid': 'uid-b' } };
    expect((decode(encode([relabelled])) as { containers: cri.Container[] }).containers[0]).toBe(first);
  });

  it('holds no response: changing one after it was decoded changes nothing', () => {
    const decode = reusingListDecoder((b) => containersCodec.responseDeserialize(b), 'containers', 8);
    const r1 = encode([container('a')]);
    const first = (decode(r1) as { containers: cri.Container[] }).containers[0];
    r1.fill(0);
    expect((decode(encode([container('a')])) as { containers: cri.Container[] }).containers[0]).toBe(first);
  });

  it('tells a list of items from anything else', () => {
    expect(isItemList(encode([container('a'), container('bb')]))).toBe(true);
    expect(isItemList(Buffer.alloc(0))).toBe(true);
    expect(isItemList(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))).toBe(false);
    expect(isItemList(encode([container('a')]).subarray(0, 30))).toBe(false);
  });
});
