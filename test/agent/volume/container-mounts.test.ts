import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  planContainerDevices,
  planContainerMounts,
  prepareSubPaths,
  resolveRecursiveReadOnly,
  volumeMountStatuses,
} from '../../../src/agent/volume/container-mounts.js';
import type { Container } from '../../../src/api/types.js';
import type { MountedVolume } from '../../../src/agent/volume/types.js';

const volumes = new Map<string, MountedVolume>([
  ['cfg', { path: '/v/cfg', readOnly: true, plugin: 'kubernetes.io~configmap' }],
  ['data', { path: '/v/data', readOnly: false, plugin: 'kubernetes.io~empty-dir' }],
  ['labelled', { path: '/v/l', readOnly: false, plugin: 'kubernetes.io~empty-dir', seLinuxRelabel: true }],
]);
const plan = (mounts: Record<string, unknown>[], extra: Partial<Container> = {}, env: Record<string, string> = {}) => {
  const r = planContainerMounts({ name: 'c', volumeMounts: mounts, ...extra }, volumes, new Map(Object.entries(env)));
  return r.ok ? r.mounts.map((m) => m.mount) : r.message;
};

describe('planContainerMounts (upstream makeMounts)', () => {
  it("an image volume: the runtime mounts the image read-only, a subPath (or subPathExpr) becomes the image's sub path", () => {
    const image = { image: 'sha256:abc', user_specified_image: 'registry.example/data:1', runtime_handler: '' };
    const withImage = new Map<string, MountedVolume>([
      ...volumes,
      ['img', { path: '', readOnly: true, plugin: 'kubernetes.io~image', image }],
    ]);
    const r = planContainerMounts(
      {
        name: 'c',
        volumeMounts: [
          { name: 'img', mountPath: '/data', readOnly: false },
          { name: 'img', mountPath: '/models', subPathExpr: '$(MODEL)' },
        ],
      },
      withImage,
      new Map([['MODEL', 'llama']]),
    );
    expect(r.ok && r.mounts).toEqual([
      {
        name: 'img',
        volumePath: '',
        subPath: '',
        mount: { container_path: '/data', host_path: '', readonly: true, image, propagation: 'PROPAGATION_PRIVATE' },
      },
      {
        name: 'img',
        volumePath: '',
        subPath: '',
        mount: {
          container_path: '/models',
          host_path: '',
          readonly: true,
          image,
          image_sub_path: 'llama',
          propagation: 'PROPAGATION_PRIVATE',
        },
      },
    ]);
    // The kubelet resolves nothing on disk for it: the runtime checks the sub path in the image.
    expect(
      planContainerMounts(
        { name: 'c', volumeMounts: [{ name: 'img', mountPath: '/x', subPath: '../etc' }] },
        withImage,
        new Map(),
      ),
    ).toEqual({ ok: false, message: "unable to provision SubPath `../etc`: must not contain '..'" });
  });

  it.each([
    [
      'a plain mount',
      [{ name: 'data', mountPath: '/d' }],
      {},
      {},
      [
        {
          container_path: '/d',
          host_path: '/v/data',
          readonly: false,
          selinux_relabel: false,
          propagation: 'PROPAGATION_PRIVATE',
        },
      ],
    ],
    [
      "a volume its plugin relabels: the runtime is asked to (upstream's SELinuxRelabel)",
      [{ name: 'labelled', mountPath: '/l' }],
      {},
      {},
      [
        {
          container_path: '/l',
          host_path: '/v/l',
          readonly: false,
          selinux_relabel: true,
          propagation: 'PROPAGATION_PRIVATE',
        },
      ],
    ],
    [
      'a read-only volume is read-only whatever the mount says',
      [{ name: 'cfg', mountPath: '/c' }],
      {},
      {},
      [
        {
          container_path: '/c',
          host_path: '/v/cfg',
          readonly: true,
          selinux_relabel: false,
          propagation: 'PROPAGATION_PRIVATE',
        },
      ],
    ],
    [
      'readOnly and HostToContainer',
      [{ name: 'data', mountPath: '/d', readOnly: true, mountPropagation: 'HostToContainer' }],
      {},
      {},
      [
        {
          container_path: '/d',
          host_path: '/v/data',
          readonly: true,
          selinux_relabel: false,
          propagation: 'PROPAGATION_HOST_TO_CONTAINER',
        },
      ],
    ],
    [
      'subPath',
      [{ name: 'data', mountPath: '/d', subPath: 'a/b' }],
      {},
      {},
      [
        {
          container_path: '/d',
          host_path: '/v/data/a/b',
          readonly: false,
          selinux_relabel: false,
          propagation: 'PROPAGATION_PRIVATE',
        },
      ],
    ],
    [
      'subPathExpr expands the env',
      [{ name: 'data', mountPath: '/d', subPathExpr: 'logs/$(POD)' }],
      {},
      { POD: 'web-1' },
      [
        {
          container_path: '/d',
          host_path: '/v/data/logs/web-1',
          readonly: false,
          selinux_relabel: false,
          propagation: 'PROPAGATION_PRIVATE',
        },
      ],
    ],
    [
      'unknown volume',
      [{ name: 'nope', mountPath: '/d' }],
      {},
      {},
      'cannot find volume "nope" to mount into container "c"',
    ],
    [
      'absolute subPath',
      [{ name: 'data', mountPath: '/d', subPath: '/etc' }],
      {},
      {},
      'error SubPath `/etc` must not be an absolute path',
    ],
    [
      'subPath with ..',
      [{ name: 'data', mountPath: '/d', subPath: 'a/../../etc' }],
      {},
      {},
      "unable to provision SubPath `a/../../etc`: must not contain '..'",
    ],
    [
      'subPathExpr expanding to ..',
      [{ name: 'data', mountPath: '/d', subPathExpr: '$(X)/x' }],
      {},
      { X: '..' },
      "unable to provision SubPath `../x`: must not contain '..'",
    ],
    [
      'Bidirectional needs privileged',
      [{ name: 'data', mountPath: '/d', mountPropagation: 'Bidirectional' }],
      {},
      {},
      'Bidirectional mount propagation is available only to privileged containers',
    ],
    [
      'Bidirectional when privileged',
      [{ name: 'data', mountPath: '/d', mountPropagation: 'Bidirectional' }],
      { securityContext: { privileged: true } },
      {},
      [
        {
          container_path: '/d',
          host_path: '/v/data',
          readonly: false,
          selinux_relabel: false,
          propagation: 'PROPAGATION_BIDIRECTIONAL',
        },
      ],
    ],
  ])('%s', (_n, mounts, extra, env, want) => expect(plan(mounts, extra, env)).toEqual(want));
});

describe('planContainerDevices (upstream makeBlockVolumes)', () => {
  const blockVol = (readOnly: boolean): MountedVolume => ({
    path: '/r/pods/u/volumeDevices/kubernetes.io~csi/pv',
    devicePath: '/r/pods/u/volumeDevices/kubernetes.io~csi/pv',
    readOnly,
    plugin: 'kubernetes.io~csi',
  });
  const ctr = (devices: { name: string; devicePath: string }[]) =>
    ({ name: 'c', image: 'i', volumeDevices: devices }) as unknown as Container;
  it('passes a raw block volume as a device: mrw, or r when read-only', () => {
    const volumes = new Map([
      ['rw', blockVol(false)],
      ['ro', blockVol(true)],
    ]);
    expect(
      planContainerDevices(
        ctr([
          { name: 'rw', devicePath: '/dev/xvda' },
          { name: 'ro', devicePath: '/dev/xvdb' },
        ]),
        volumes,
      ),
    ).toEqual({
      ok: true,
      devices: [
        { container_path: '/dev/xvda', host_path: '/r/pods/u/volumeDevices/kubernetes.io~csi/pv', permissions: 'mrw' },
        { container_path: '/dev/xvdb', host_path: '/r/pods/u/volumeDevices/kubernetes.io~csi/pv', permissions: 'r' },
      ],
    });
  });
  it("refuses a relative path and a volume that is not a raw block volume, with upstream's messages", () => {
    const volumes = new Map<string, MountedVolume>([
      ['fs', { path: '/p', readOnly: false, plugin: 'kubernetes.io~empty-dir' }],
    ]);
    expect(planContainerDevices(ctr([{ name: 'fs', devicePath: 'dev/x' }]), volumes)).toEqual({
      ok: false,
      message: 'error DevicePath `dev/x` must be an absolute path',
    });
    expect(planContainerDevices(ctr([{ name: 'fs', devicePath: '/dev/x' }]), volumes)).toEqual({
      ok: false,
      message: 'cannot find volume "fs" to pass into container "c"',
    });
    expect(planContainerDevices(ctr([{ name: 'nope', devicePath: '/dev/x' }]), volumes)).toEqual({
      ok: false,
      message: 'cannot find volume "nope" to pass into container "c"',
    });
  });
});

describe('prepareSubPaths', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsk-subpath-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const vol = join(dir, 'vol');
  mkdirSync(join(vol, 'in'), { recursive: true });
  writeFileSync(join(vol, 'in', 'f'), 'x');
  symlinkSync('/etc', join(vol, 'out'));
  symlinkSync('in/f', join(vol, 'ok-link'));
  const planned = (subPath: string) => [
    {
      name: 'v',
      volumePath: vol,
      subPath,
      mount: { container_path: '/m', host_path: join(vol, subPath), readonly: false },
    },
  ];

  it('resolves an existing subPath (also through a symlink inside the volume)', async () => {
    expect(await prepareSubPaths(planned('in/f'), 'c')).toEqual({
      ok: true,
      mounts: [{ container_path: '/m', host_path: join(vol, 'in', 'f'), readonly: false }],
    });
    expect(await prepareSubPaths(planned('ok-link'), 'c')).toEqual({
      ok: true,
      mounts: [{ container_path: '/m', host_path: join(vol, 'in', 'f'), readonly: false }],
    });
  });
  it('creates a missing subPath directory inside the volume', async () => {
    const r = await prepareSubPaths(planned('new/deep'), 'c');
    expect(r).toEqual({
      ok: true,
      mounts: [{ container_path: '/m', host_path: join(vol, 'new', 'deep'), readonly: false }],
    });
  });
  it('gives every directory it creates the volume directory’s mode, setgid and sticky bits included, whatever the umask (upstream SafeMakeDir; "nonexistent volume subPath should have the correct mode and owner using FSGroup")', async () => {
    const fsGroupVol = join(dir, 'fsgroup-vol');
    mkdirSync(fsGroupVol);
    chmodSync(fsGroupVol, 0o3777);
    const r = await prepareSubPaths(
      [
        {
          name: 'v',
          volumePath: fsGroupVol,
          subPath: 'a/b',
          mount: { container_path: '/m', host_path: join(fsGroupVol, 'a', 'b'), readonly: false },
        },
      ],
      'c',
    );
    expect(r.ok).toBe(true);
    expect([statSync(join(fsGroupVol, 'a')).mode & 0o7777, statSync(join(fsGroupVol, 'a', 'b')).mode & 0o7777]).toEqual(
      [0o3777, 0o3777],
    );
  });
  it('refuses a symlink that leaves the volume, and a missing path below one', async () => {
    expect(await prepareSubPaths(planned('out'), 'c')).toEqual({
      ok: false,
      message: 'failed to prepare subPath for volumeMount "v" of container "c"',
    });
    expect(await prepareSubPaths(planned('out/newdir'), 'c')).toEqual({
      ok: false,
      message: 'failed to create subPath directory for volumeMount "v" of container "c"',
    });
  });
});

describe('process runtime mounts without root', () => {
  it('skips file mounts (managed /etc/hosts, termination log) and refuses directory volumes with a clear message', async () => {
    const { effectiveMounts } = await import('../../../src/process-runtime/mount-sources.js');
    const d = mkdtempSync(join(tmpdir(), 'tsk-nonroot-'));
    writeFileSync(join(d, 'hosts'), '');
    mkdirSync(join(d, 'vol'));
    try {
      expect(await effectiveMounts([{ container_path: '/etc/hosts', host_path: join(d, 'hosts') }], false)).toEqual({
        ok: true,
        mounts: [],
        kinds: new Map([[join(d, 'hosts'), 'file']]),
      });
      expect(await effectiveMounts([{ container_path: '/data', host_path: join(d, 'vol') }], false)).toEqual({
        ok: false,
        message: `the process runtime needs root to mount volumes (mount namespaces): cannot mount "${join(d, 'vol')}" at "/data"`,
      });
      expect(await effectiveMounts([{ container_path: '/data', host_path: join(d, 'vol') }], true)).toEqual({
        ok: true,
        mounts: [{ container_path: '/data', host_path: join(d, 'vol') }],
        kinds: new Map([[join(d, 'vol'), 'dir']]),
      });
      expect(await effectiveMounts([{ container_path: '/x', host_path: join(d, 'nope') }], true)).toEqual({
        ok: false,
        message: `error mounting "${join(d, 'nope')}" to "/x": source does not exist`,
      });
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('recursive read-only mounts (upstream resolveRecursiveReadOnly, RecursiveReadOnlyMounts on in 1.32)', () => {
  const c = (m: Record<string, unknown>): Container => ({
    name: 'c',
    volumeMounts: [{ name: 'data', mountPath: '/d', ...m }],
  });
  const planned = (m: Record<string, unknown>, rro: boolean) => {
    const r = planContainerMounts(c(m), volumes, new Map(), rro);
    return r.ok ? r.mounts[0].mount.recursive_read_only === true : r.message;
  };

  it('makes a mount recursively read-only only when asked and the handler can: IfPossible follows the handler, Enabled needs it', () => {
    expect(resolveRecursiveReadOnly({ name: 'data', mountPath: '/d', readOnly: true }, true)).toBe(false);
    expect(
      resolveRecursiveReadOnly({ name: 'data', mountPath: '/d', readOnly: true, recursiveReadOnly: 'Disabled' }, true),
    ).toBe(false);
    expect(planned({ readOnly: true, recursiveReadOnly: 'IfPossible' }, true)).toBe(true);
    expect(planned({ readOnly: true, recursiveReadOnly: 'IfPossible' }, false)).toBe(false);
    expect(planned({ readOnly: true, recursiveReadOnly: 'Enabled', mountPropagation: 'None' }, true)).toBe(true);
  });

  it("refuses what cannot be honoured with upstream's messages (CreateContainerConfigError)", () => {
    expect(planned({ readOnly: true, recursiveReadOnly: 'Enabled' }, false)).toBe(
      'failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not supported by the runtime',
    );
    expect(planned({ recursiveReadOnly: 'IfPossible' }, true)).toBe(
      'failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not read-only',
    );
    expect(planned({ readOnly: true, recursiveReadOnly: 'Enabled', mountPropagation: 'HostToContainer' }, true)).toBe(
      'failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not compatible with propagation "HostToContainer"',
    );
  });

  it("reports each mount in the container's status: readOnly ones with the mode in effect, Disabled for what could not be honoured", () => {
    const spec: Container = {
      name: 'c',
      volumeMounts: [
        { name: 'data', mountPath: '/d' },
        { name: 'cfg', mountPath: '/c', readOnly: true },
        { name: 'x', mountPath: '/x', readOnly: true, recursiveReadOnly: 'IfPossible' },
        { name: 'y', mountPath: '/y', readOnly: true, recursiveReadOnly: 'Enabled' },
      ],
    };
    expect(volumeMountStatuses(spec, true)).toEqual([
      { name: 'data', mountPath: '/d' },
      { name: 'cfg', mountPath: '/c', readOnly: true, recursiveReadOnly: 'Disabled' },
      { name: 'x', mountPath: '/x', readOnly: true, recursiveReadOnly: 'Enabled' },
      { name: 'y', mountPath: '/y', readOnly: true, recursiveReadOnly: 'Enabled' },
    ]);
    expect(volumeMountStatuses(spec, false)!.map((m) => m.recursiveReadOnly)).toEqual([
      undefined,
      'Disabled',
      'Disabled',
      'Disabled',
    ]);
    expect(volumeMountStatuses({ name: 'c' }, true)).toBeUndefined();
  });
});
