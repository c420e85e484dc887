import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { mergeSnapshot } from '../../../src/agent/podconfig/merge.js';
import { decodeManifests } from '../../../src/agent/podconfig/decode.js';
import { stringify } from 'yaml';
import { toStaticPod } from '../../../src/agent/podconfig/static-pod.js';

const pod = (uid: string, name: string, over: Partial<Pod['spec']> = {}, meta: Partial<Pod['metadata']> = {}): Pod => ({
  metadata: { uid, name, namespace: 'default', ...meta },
  spec: { containers: [{ name: 'c', image: 'i' }], ...over },
});
const SEEN = '2025-01-01T00:00:00.000000000Z';
const names = (ps: Pod[]) => ps.map((p) => p.metadata.name);

describe('mergeSnapshot', () => {
  const prev = new Map([
    ['1', mergeSnapshot(new Map(), [pod('1', 'a')], 'file', 'old').adds[0]],
    ['2', mergeSnapshot(new Map(), [pod('2', 'b')], 'file', 'old').adds[0]],
  ]);
  const table: {
    name: string;
    snapshot: Pod[];
    want: { adds: string[]; updates: string[]; removes: string[]; reconciles: string[]; errors?: number };
  }[] = [
    {
      name: 'same snapshot: no updates',
      snapshot: [pod('1', 'a'), pod('2', 'b')],
      want: { adds: [], updates: [], removes: [], reconciles: [] },
    },
    {
      name: 'new pod: ADD',
      snapshot: [pod('1', 'a'), pod('2', 'b'), pod('3', 'c')],
      want: { adds: ['c'], updates: [], removes: [], reconciles: [] },
    },
    {
      name: 'pod gone: REMOVE',
      snapshot: [pod('1', 'a')],
      want: { adds: [], updates: [], removes: ['b'], reconciles: [] },
    },
    {
      name: 'spec changed: UPDATE',
      snapshot: [pod('1', 'a', { restartPolicy: 'Never' }), pod('2', 'b')],
      want: { adds: [], updates: ['a'], removes: [], reconciles: [] },
    },
    {
      name: 'labels changed: UPDATE',
      snapshot: [pod('1', 'a', {}, { labels: { x: 'y' } }), pod('2', 'b')],
      want: { adds: [], updates: ['a'], removes: [], reconciles: [] },
    },
    {
      name: 'status changed only: RECONCILE',
      snapshot: [{ ...pod('1', 'a'), status: { phase: 'Running' } }, pod('2', 'b')],
      want: { adds: [], updates: [], removes: [], reconciles: ['a'] },
    },
    {
      name: 'duplicate name: second rejected',
      snapshot: [pod('1', 'a'), pod('2', 'b'), pod('9', 'a')],
      want: { adds: [], updates: [], removes: [], reconciles: [], errors: 1 },
    },
    {
      name: 'empty snapshot: REMOVE all',
      snapshot: [],
      want: { adds: [], updates: [], removes: ['a', 'b'], reconciles: [] },
    },
  ];
  for (const c of table) {
    it(c.name, () => {
      const r = mergeSnapshot(prev, c.snapshot, 'file', SEEN);
      expect({
        adds: names(r.adds),
        updates: names(r.updates),
        removes: names(r.removes),
        reconciles: names(r.reconciles),
      }).toEqual({
        adds: c.want.adds,
        updates: c.want.updates,
        removes: c.want.removes,
        reconciles: c.want.reconciles,
      });
      expect(r.errors.length).toBe(c.want.errors ?? 0);
    });
  }
  it('annotates source and keeps the first seen time', () => {
    const r = mergeSnapshot(prev, [pod('1', 'a', { restartPolicy: 'Never' }), pod('3', 'c')], 'file', SEEN);
    expect(r.updates[0].metadata.annotations).toMatchObject({
      'kubernetes.io/config.source': 'file',
      'kubernetes.io/config.seen': 'old',
    });
    expect(r.adds[0].metadata.annotations).toMatchObject({ 'kubernetes.io/config.seen': SEEN });
  });
});

describe('decodeManifests', () => {
  it('reads several documents, Pod and PodList, skipping empty ones', () => {
    const r = decodeManifests(
      `apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}]}\n---\n---\nkind: PodList\napiVersion: v1\nitems:\n- metadata: {name: b}\n  spec: {containers: [{name: c, image: i}]}\n`,
      'f.yaml',
    );
    expect(r.errors).toEqual([]);
    expect(names(r.pods)).toEqual(['a', 'b']);
  });
  it('reads JSON', () => {
    expect(names(decodeManifests(JSON.stringify(pod('', 'j')), 'f.json').pods)).toEqual(['j']);
  });
  it('reads a JSON document (parsed natively) exactly as the same document in YAML', () => {
    const doc = { kind: 'PodList', apiVersion: 'v1', items: [pod('', 'a'), { ...pod('', 'b'), spec: {} }] };
    const fromJson = decodeManifests(`  \n${JSON.stringify(doc, null, 2)}\n`, 'f');
    const fromYaml = decodeManifests(stringify(doc), 'f');
    expect(names(fromJson.pods)).toEqual(['a']);
    expect(fromJson).toEqual(fromYaml);
  });
  it('gives JSON that is not one valid document to the YAML parser: several documents, a syntax error', () => {
    expect(
      names(decodeManifests(`${JSON.stringify(pod('', 'x'))}\n---\n${JSON.stringify(pod('', 'y'))}`, 'f.json').pods),
    ).toEqual(['x', 'y']);
    const broken = decodeManifests('{"kind": "Pod", "metadata": {"name": "a"', 'f.json');
    expect(broken.pods).toEqual([]);
    expect(broken.errors[0]).toMatch(/^f\.json: /);
  });
  const bad: [string, string, RegExp][] = [
    ['YAML syntax', 'metadata: {name: a\nspec: [', /f.yaml/],
    [
      'no containers',
      'kind: Pod\nmetadata: {name: a}\nspec: {containers: []}',
      /spec.containers: must have at least one container/,
    ],
    ['missing image', 'kind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}]}', /spec.containers.0.image/],
    [
      'bad name',
      'kind: Pod\nmetadata: {name: A_B}\nspec: {containers: [{name: c, image: i}]}',
      /metadata.name: must be a DNS-1123 subdomain/,
    ],
    ['wrong kind', 'kind: Service\nmetadata: {name: a}', /kind "Service" is not Pod/],
    [
      'duplicate container',
      'kind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: i}, {name: c, image: i}]}',
      /Duplicate value: "c"/,
    ],
    [
      'bad restartPolicy',
      'kind: Pod\nmetadata: {name: a}\nspec: {restartPolicy: Sometimes, containers: [{name: c, image: i}]}',
      /restartPolicy/,
    ],
  ];
  for (const [name, text, re] of bad) {
    it(`reports ${name} and yields no pod`, () => {
      const r = decodeManifests(text, 'f.yaml');
      expect(r.pods).toEqual([]);
      expect(r.errors.join('\n')).toMatch(re);
    });
  }
  it('keeps the valid document when another is broken', () => {
    const r = decodeManifests(
      'kind: Pod\nmetadata: {name: ok}\nspec: {containers: [{name: c, image: i}]}\n---\nkind: Pod\nmetadata: {name: bad}\nspec: {}\n',
      'f.yaml',
    );
    expect(names(r.pods)).toEqual(['ok']);
    expect(r.errors).toHaveLength(1);
  });
});

describe('toStaticPod', () => {
  const raw = pod('', 'web');
  raw.metadata.uid = undefined;
  it('suffixes the name, derives a stable UID from content and source, defaults the spec', () => {
    const a = toStaticPod(raw, { nodeName: 'Node1', kind: 'file', location: '/etc/m/web.yaml' });
    const b = toStaticPod(raw, { nodeName: 'Node1', kind: 'file', location: '/etc/m/web.yaml' });
    const other = toStaticPod(raw, { nodeName: 'Node1', kind: 'file', location: '/etc/m/other.yaml' });
    const changed = toStaticPod(
      { ...raw, spec: { ...raw.spec, restartPolicy: 'Never' } },
      { nodeName: 'Node1', kind: 'file', location: '/etc/m/web.yaml' },
    );
    expect(a.metadata.name).toBe('web-node1');
    expect(a.metadata.uid).toMatch(/^[0-9a-f]{32}$/);
    expect(a.metadata.uid).toBe(b.metadata.uid);
    expect(other.metadata.uid).not.toBe(a.metadata.uid);
    expect(changed.metadata.uid).not.toBe(a.metadata.uid);
    expect(a.metadata.annotations!['kubernetes.io/config.hash']).toBe(a.metadata.uid);
    expect(a.spec).toMatchObject({
      nodeName: 'Node1',
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      tolerations: [{ operator: 'Exists', effect: 'NoExecute' }],
    });
    expect(a.spec.containers[0]).toMatchObject({
      imagePullPolicy: 'Always',
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'File',
    });
    expect(a.status).toEqual({ phase: 'Pending' });
  });
});
