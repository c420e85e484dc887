/**
 * A pod's volume directories as a Go kubelet v1.36.2 leaves them (test/fixtures/go-kubelet-1.36/root-dir-layout.txt,
 * its pod with an emptyDir, a configMap, a secret and a projected service-account volume): the same directories and
 * files with the same modes — memory-backed volumes on a tmpfs of mode 1777, mounted `noswap` where the kernel has it,
 * and the emptyDir plugin's `ready` records under the pod's plugins/ directory. Root only (tmpfs mounts).
 */
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { release, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { IN_TREE_PLUGINS } from '../../../src/agent/volume/plugins/all.js';
import { kernelHasTmpfsNoswap, memoryBackedVolumesWarning } from '../../../src/agent/volume/tmpfs-noswap.js';
import type { VolumeHost } from '../../../src/agent/volume/types.js';
import { VolumeManager } from '../../../src/agent/volume/volume-manager.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';

const isRoot = process.getuid?.() === 0;
const root = mkdtempSync(join(tmpdir(), 'tsk-pod-volume-layout-'));
afterAll(() => {
  execFileSync('sh', ['-c', `grep -o ' ${root}[^ ]*' /proc/self/mountinfo | sort -r | xargs -r -n1 umount`]);
  rmSync(root, { recursive: true, force: true });
});

/** The fixture's pod: its UID and the lines of its volume and plugin directories. */
const UPSTREAM_UID = 'd6a81557-f27f-4157-852c-2758a41bddd1';
const layout = readFileSync(
  join(import.meta.dirname, '..', '..', 'fixtures', 'go-kubelet-1.36', 'root-dir-layout.txt'),
  'utf8',
);
const upstream = layout
  .split('\n')
  .filter((line) => new RegExp(`^[df] \\d+ \\./pods/${UPSTREAM_UID}/(volumes|plugins)(/|$)`).test(line))
  .map((line) => line.replace(`./pods/${UPSTREAM_UID}/`, ''))
  .sort();

/** `find`'s view of `dir` (type, octal mode, path), as the fixture was taken; volume contents left out. */
function listing(dir: string): string[] {
  const out: string[] = [];
  const walk = (path: string) => {
    const s = statSync(path);
    const rel = relative(dir, path);
    out.push(`${s.isDirectory() ? 'd' : 'f'} ${(s.mode & 0o7777).toString(8)} ${rel}`);
    // A volume's own contents are the payload's, not the layout's (the fixture leaves them out too).
    if (s.isDirectory() && !/^volumes\/[^/]+\/[^/]+$/.test(rel))
      for (const name of readdirSync(path)) walk(join(path, name));
  };
  for (const top of ['volumes', 'plugins']) walk(join(dir, top));
  return out.sort();
}

const host = {
  hasApiserver: true,
  isRoot,
  downward: { nodeName: 'n', hostIPs: ['10.0.0.1'], podIPs: [] },
  getObject: async (resource: string, _namespace: string, name: string) =>
    resource === 'secrets'
      ? { data: { key: Buffer.from('s3cret').toString('base64') } }
      : resource === 'configmaps'
        ? { data: { [name === 'kube-root-ca.crt' ? 'ca.crt' : 'k']: 'v' } }
        : null,
  getToken: async () => ({ token: 'token', expirationTimestamp: new Date(Date.now() + 3600_000).toISOString() }),
} as unknown as VolumeHost;

const pod = {
  metadata: { name: 'web', namespace: 'default', uid: 'uid-layout' },
  spec: {
    serviceAccountName: 'default',
    containers: [{ name: 'web', image: 'busybox' }],
    volumes: [
      { name: 'data', emptyDir: {} },
      { name: 'cfg', configMap: { name: 'cfg', defaultMode: 420 } },
      { name: 'sec', secret: { secretName: 'sec', defaultMode: 420 } },
      {
        name: 'kube-api-access-rhjsq',
        projected: {
          defaultMode: 420,
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
          ],
        },
      },
    ],
  },
} as unknown as Pod;

/** A volume manager over the test's root directory, with the in-tree plugins. */
const volumeManager = () =>
  new VolumeManager({
    rootDir: root,
    host,
    clock: new FakeClock(),
    logger: createLogger({ level: 'fatal' }),
    plugins: IN_TREE_PLUGINS,
  });

describe.skipIf(!isRoot)("a pod's volumes on disk", () => {
  it("are laid out with a Go kubelet's directories, records and modes", async () => {
    const volumes = volumeManager();
    expect(await volumes.mountPod(pod)).toMatchObject({ ok: true });
    expect(listing(join(root, 'pods', 'uid-layout'))).toEqual(upstream);
    // The next syncs write the configMap, secret and projected volumes again: the modes stay (a tmpfs's sticky bit).
    expect(await volumes.mountPod(pod)).toMatchObject({ ok: true });
    expect(listing(join(root, 'pods', 'uid-layout'))).toEqual(upstream);
  });

  it('mounts the memory-backed ones noswap where the kernel has it (upstream: Linux 6.4)', () => {
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter((line) => line.includes(join(root, 'pods', 'uid-layout')));
    const tmpfs = mounts.map((line) => {
      const fields = line.split(' ');
      const separator = fields.indexOf('-');
      return { path: fields[4], type: fields[separator + 1], options: fields[separator + 3].split(',') };
    });
    expect(tmpfs.map((m) => relative(join(root, 'pods', 'uid-layout', 'volumes'), m.path)).sort()).toEqual([
      'kubernetes.io~projected/kube-api-access-rhjsq',
      'kubernetes.io~secret/sec',
    ]);
    for (const m of tmpfs) {
      expect(m.type).toBe('tmpfs');
      expect(m.options.includes('noswap')).toBe(kernelHasTmpfsNoswap(release()));
    }
  });

  it('removes the records with the volumes when the pod is done', async () => {
    const volumes = volumeManager();
    expect(await volumes.unmountPod('uid-layout')).toBe(true);
    expect(readdirSync(join(root, 'pods', 'uid-layout')).sort()).not.toContain('plugins');
  });
});

describe.skipIf(!isRoot)('a projected service account token', () => {
  const tokenPod = (uid: string, containers: { name: string; runAsUser?: number }[]) =>
    ({
      metadata: { name: uid, namespace: 'default', uid },
      spec: {
        securityContext: { runAsUser: 1000 },
        containers: containers.map((c) => ({
          name: c.name,
          image: 'busybox',
          ...(c.runAsUser !== undefined ? { securityContext: { runAsUser: c.runAsUser } } : {}),
        })),
        volumes: [
          {
            name: 'token',
            projected: { defaultMode: 420, sources: [{ serviceAccountToken: { path: 'token' } }] },
          },
        ],
      },
    }) as unknown as Pod;
  const tokenDir = (uid: string) => join(root, 'pods', uid, 'volumes', 'kubernetes.io~projected', 'token');

  it("is the pod's one user's, mode 0600, its user-visible link too (upstream FsUser; v1.36's lchown, #137332)", async () => {
    const manager = volumeManager();
    expect(
      await manager.mountPod(tokenPod('uid-one-user', [{ name: 'a' }, { name: 'b', runAsUser: 1000 }])),
    ).toMatchObject({ ok: true });
    const dir = tokenDir('uid-one-user');
    const file = statSync(join(dir, '..data', 'token'));
    expect([file.uid, file.gid, (file.mode & 0o7777).toString(8)]).toEqual([1000, 0, '600']);
    expect(lstatSync(join(dir, 'token')).uid).toBe(1000);
    await manager.unmountPod('uid-one-user');
  });

  it("stays root's with the volume's mode when the containers run as different users", async () => {
    const manager = volumeManager();
    expect(
      await manager.mountPod(tokenPod('uid-two-users', [{ name: 'a' }, { name: 'b', runAsUser: 2000 }])),
    ).toMatchObject({ ok: true });
    const dir = tokenDir('uid-two-users');
    const file = statSync(join(dir, '..data', 'token'));
    expect([file.uid, (file.mode & 0o7777).toString(8)]).toEqual([0, '644']);
    expect(lstatSync(join(dir, 'token')).uid).toBe(0);
    await manager.unmountPod('uid-two-users');
  });
});

describe('the tmpfs noswap option', () => {
  it('is in the kernel from Linux 6.4', () => {
    expect(
      ['6.1.0-13-amd64', '6.3.13', '6.4.0', '6.18.44-fc-v657', '7.0.1', '5.15.0-91-generic', 'weird'].map(
        kernelHasTmpfsNoswap,
      ),
    ).toEqual([false, false, true, true, true, false, false]);
  });

  it("missing where swap is on is the Node's PossibleMemoryBackedVolumesOnDisk warning, as upstream's", () => {
    expect(memoryBackedVolumesWarning(true, false)).toBe(
      'The tmpfs noswap option is not supported. Memory-backed volumes (e.g. secrets, emptyDirs, etc.) might be ' +
        'swapped to disk and should no longer be considered secure.',
    );
    expect([memoryBackedVolumesWarning(true, true), memoryBackedVolumesWarning(false, false)]).toEqual([
      undefined,
      undefined,
    ]);
  });
});
