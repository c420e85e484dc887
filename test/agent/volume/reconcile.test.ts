import { describe, expect, it } from 'vitest';
import { computeVolumeActions, orphanedPodDirs } from '../../../src/agent/volume/reconcile.js';
import { IN_TREE_PLUGINS } from '../../../src/agent/volume/plugins/all.js';
import type { Volume } from '../../../src/agent/volume/types.js';

const vols: Volume[] = [
  { name: 'cm', configMap: { name: 'x' } },
  { name: 'data', emptyDir: {} },
  { name: 'host', hostPath: { path: '/srv' } },
];
const decide = (o: { volumes?: Volume[]; actual?: string[]; retryAt?: [string, number][]; now?: number }) => {
  const a = computeVolumeActions(o.volumes ?? vols, new Map((o.actual ?? []).map((n) => [n, { plugin: 'p' }])), {
    plugins: IN_TREE_PLUGINS,
    nowMs: o.now ?? 1000,
    retryAt: new Map(o.retryAt ?? []),
  });
  return {
    setUp: a.setUp.map((s) => `${s.volume.name}:${s.plugin.dirName}`),
    waiting: a.waiting,
    unsupported: a.unsupported.map((u) => u.name),
    tearDown: a.tearDown,
  };
};

describe('computeVolumeActions', () => {
  it.each([
    [
      'nothing set up: every volume',
      {},
      {
        setUp: ['cm:kubernetes.io~configmap', 'data:kubernetes.io~empty-dir', 'host:kubernetes.io~host-path'],
        waiting: [],
        unsupported: [],
        tearDown: [],
      },
    ],
    [
      'all set up: only remount-each-sync plugins again',
      { actual: ['cm', 'data', 'host'] },
      { setUp: ['cm:kubernetes.io~configmap'], waiting: [], unsupported: [], tearDown: [] },
    ],
    [
      'a failed volume waits for its backoff',
      { actual: ['data', 'host'], retryAt: [['cm', 5000]] as [string, number][] },
      { setUp: [], waiting: [{ name: 'cm', retryAtMs: 5000 }], unsupported: [], tearDown: [] },
    ],
    [
      'an expired backoff retries',
      { actual: ['data', 'host'], retryAt: [['cm', 900]] as [string, number][] },
      { setUp: ['cm:kubernetes.io~configmap'], waiting: [], unsupported: [], tearDown: [] },
    ],
    [
      'a volume gone from the spec is torn down',
      { volumes: vols.slice(1), actual: ['cm', 'data', 'host'] },
      { setUp: [], waiting: [], unsupported: [], tearDown: ['cm'] },
    ],
    [
      'unsupported types are reported, not set up',
      {
        volumes: [
          { name: 'n', nfs: { server: 's', path: '/' } },
          { name: 'c', csi: { driver: 'd' } },
        ],
      },
      { setUp: [], waiting: [], unsupported: ['n', 'c'], tearDown: [] },
    ],
    [
      'projected, secret, downwardAPI remount; PVC and ephemeral do not',
      {
        volumes: [
          { name: 'p', projected: { sources: [] } },
          { name: 's', secret: { secretName: 'x' } },
          { name: 'd', downwardAPI: { items: [] } },
          { name: 'c', persistentVolumeClaim: { claimName: 'x' } },
          { name: 'e', ephemeral: {} },
        ],
        actual: ['p', 's', 'd', 'c', 'e'],
      },
      {
        setUp: ['p:kubernetes.io~projected', 's:kubernetes.io~secret', 'd:kubernetes.io~downward-api'],
        waiting: [],
        unsupported: [],
        tearDown: [],
      },
    ],
  ])('%s', (_n, input, want) => expect(decide(input)).toEqual(want));

  it('a volume set up to be republished (a CSI driver with requiresRepublish) is set up again although its plugin is not remount-each-sync', () => {
    const volumes: Volume[] = [
      { name: 'c', persistentVolumeClaim: { claimName: 'x' } },
      { name: 'd', persistentVolumeClaim: { claimName: 'y' } },
    ];
    const actual = new Map([
      ['c', { plugin: 'kubernetes.io~csi', remountEachSync: true }],
      ['d', { plugin: 'kubernetes.io~csi' }],
    ]);
    const a = computeVolumeActions(volumes, actual, { plugins: IN_TREE_PLUGINS, nowMs: 0, retryAt: new Map() });
    expect(a.setUp.map((s) => s.volume.name)).toEqual(['c']);
  });

  it("leaves image volumes to the runtime: neither set up, nor unsupported, nor torn down (upstream's populator skips them)", () => {
    const volumes: Volume[] = [
      { name: 'img', image: { reference: 'registry.example/data:1', pullPolicy: 'IfNotPresent' } },
      { name: 'e', emptyDir: {} },
    ];
    const a = computeVolumeActions(volumes, new Map(), { plugins: IN_TREE_PLUGINS, nowMs: 0, retryAt: new Map() });
    expect(a.setUp.map((s) => s.volume.name)).toEqual(['e']);
    expect(a.unsupported).toEqual([]);
    expect(a.tearDown).toEqual([]);
  });

  it('names the unsupported type and what is supported', () => {
    const a = computeVolumeActions([{ name: 'n', nfs: {} }], new Map(), {
      plugins: IN_TREE_PLUGINS,
      nowMs: 0,
      retryAt: new Map(),
    });
    expect(a.unsupported[0].message).toMatch(
      /^volume type nfs is not supported by tskubelet \(supported: emptyDir, hostPath, configMap/,
    );
  });

  it("refuses a gitRepo volume in upstream's words: its plugin is disabled there too (GitRepoVolumeDriver off)", () => {
    const a = computeVolumeActions([{ name: 'src', gitRepo: { repository: 'https://example.com/r.git' } }], new Map(), {
      plugins: IN_TREE_PLUGINS,
      nowMs: 0,
      retryAt: new Map(),
    });
    expect(a.unsupported).toEqual([
      {
        name: 'src',
        message:
          'git-repo volume plugin has been disabled; if necessary, it may be re-enabled by enabling the feature-gate `GitRepoVolumeDriver`',
      },
    ]);
  });
});

describe('orphanedPodDirs', () => {
  it('returns only directories of unknown pods', () => {
    expect(orphanedPodDirs(['a', 'b', 'c'], (u) => u === 'b')).toEqual(['a', 'c']);
    expect(orphanedPodDirs([], () => false)).toEqual([]);
  });
});
