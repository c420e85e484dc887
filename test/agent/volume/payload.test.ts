import { describe, expect, it } from 'vitest';
import { configMapPayload, downwardApiPayload, formatMap, secretPayload } from '../../../src/agent/volume/payload.js';
import { goQuote } from '../../../src/lib/go-quote.js';
import type { Pod } from '../../../src/api/types.js';

const files = (r: ReturnType<typeof configMapPayload>) =>
  r.ok
    ? Object.fromEntries([...r.payload].map(([k, v]) => [k, [v.data.toString('utf8'), v.mode.toString(8)]]))
    : r.message;

describe('configMap / secret payloads (upstream MakePayload)', () => {
  const cm = { data: { a: 'A', b: 'B' }, binaryData: { bin: Buffer.from('BIN').toString('base64') } };
  it.each([
    [
      'all keys with the default mode',
      configMapPayload('c', cm, {}),
      { a: ['A', '644'], b: ['B', '644'], bin: ['BIN', '644'] },
    ],
    [
      'defaultMode',
      configMapPayload('c', cm, { defaultMode: 0o600 }),
      { a: ['A', '600'], b: ['B', '600'], bin: ['BIN', '600'] },
    ],
    [
      'items: only those, at their paths, with their modes',
      configMapPayload('c', cm, {
        items: [
          { key: 'a', path: 'x/a.txt', mode: 0o400 },
          { key: 'bin', path: 'b' },
        ],
      }),
      { 'x/a.txt': ['A', '400'], b: ['BIN', '644'] },
    ],
    [
      'a missing item key',
      configMapPayload('c', cm, { items: [{ key: 'zz', path: 'z' }] }),
      'configmap references non-existent config key: zz',
    ],
    [
      'a missing item key, optional',
      configMapPayload('c', cm, { items: [{ key: 'zz', path: 'z' }], optional: true }),
      {},
    ],
    ['not found', configMapPayload('c', null, {}), 'configmap "c" not found'],
    ['not found, optional: empty', configMapPayload('c', null, { optional: true }), {}],
    [
      'secret data is base64',
      secretPayload('s', { data: { pw: Buffer.from('s3cret').toString('base64') } }, {}),
      { pw: ['s3cret', '644'] },
    ],
    ['secret not found', secretPayload('s', null, {}), 'secret "s" not found'],
    [
      'secret missing key',
      secretPayload('s', { data: {} }, { items: [{ key: 'k', path: 'k' }] }),
      'references non-existent secret key: k',
    ],
  ])('%s', (_n, r, want) => expect(files(r)).toEqual(want));
});

describe('downward API payload', () => {
  const pod: Pod = {
    metadata: {
      name: 'p',
      namespace: 'ns',
      uid: 'u1',
      labels: { b: '2', a: 'x"y' },
      annotations: { note: 'line1\nline2' },
    },
    spec: { containers: [{ name: 'c', resources: { limits: { memory: '64Mi' }, requests: { cpu: '250m' } } }] },
  };
  const ctx = {
    nodeName: 'n',
    hostIPs: ['10.0.0.1'],
    podIPs: [],
    nodeAllocatable: { cpuMilli: 2000, memoryBytes: 4 << 30 },
  };
  it('formats labels and annotations as upstream (sorted, Go-quoted)', () => {
    expect(formatMap(pod.metadata.labels)).toBe('a="x\\"y"\nb="2"');
    expect(goQuote('tab\there\x01')).toBe('"tab\\there\\x01"');
    const r = downwardApiPayload(
      pod,
      [
        { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
        { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
        { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
        { path: 'one', fieldRef: { fieldPath: "metadata.labels['b']" }, mode: 0o400 },
      ],
      { ctx },
    );
    expect(files(r)).toEqual({
      labels: ['a="x\\"y"\nb="2"', '644'],
      annotations: ['note="line1\\nline2"', '644'],
      name: ['p', '644'],
      one: ['2', '400'],
    });
  });
  it('resourceFieldRef with divisors; limits default to the node allocatable', () => {
    const r = downwardApiPayload(
      pod,
      [
        { path: 'mem', resourceFieldRef: { containerName: 'c', resource: 'limits.memory', divisor: '1Mi' } },
        { path: 'cpu-req', resourceFieldRef: { containerName: 'c', resource: 'requests.cpu', divisor: '1m' } },
        { path: 'cpu-limit', resourceFieldRef: { containerName: 'c', resource: 'limits.cpu' } },
      ],
      { ctx },
    );
    expect(files(r)).toEqual({ mem: ['64', '644'], 'cpu-req': ['250', '644'], 'cpu-limit': ['2', '644'] });
  });
  it('an unknown container or field is an error', () => {
    expect(
      files(
        downwardApiPayload(pod, [{ path: 'x', resourceFieldRef: { containerName: 'nope', resource: 'limits.cpu' } }], {
          ctx,
        }),
      ),
    ).toBe('container nope not found');
    expect(files(downwardApiPayload(pod, [{ path: 'x', fieldRef: { fieldPath: 'spec.bogus' } }], { ctx }))).toMatch(
      /unsupported fieldPath: spec.bogus/,
    );
  });
});
