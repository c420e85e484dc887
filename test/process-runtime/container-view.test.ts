/**
 * A container's working dir and command are looked for in its view of the filesystem: through its mounts. Regression:
 * the process runtime looked for them on the host, so a command in a volume (`/scripts/run.sh` of a configMap at
 * `/scripts`) was "executable file not found" and a working dir in one failed the start; an exec of such a command
 * too.
 */
import { describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as cri from '../../src/cri/types.js';
import { kindIn, locateOnHost, resolveExecutableIn } from '../../src/process-runtime/container-view.js';
import { processRuntimeFixture, runSandbox } from './runtime-fixture.js';
import { until } from '../e2e/helpers.js';

const { dir, runtime } = processRuntimeFixture('tsk-container-view-');

describe('where a path of the container lies on the host', () => {
  const mounts = [
    { container_path: '/scripts', host_path: '/var/lib/kubelet/pods/u/volumes/kubernetes.io~configmap/s' },
    { container_path: '/data', host_path: '/mnt/disk' },
    { container_path: '/data/cache', host_path: '/mnt/cache' },
    { container_path: '/etc/hosts', host_path: '/var/lib/kubelet/pods/u/etc-hosts' },
  ];

  it('is under the deepest mount holding it, else the same path', () => {
    expect(locateOnHost(mounts, '/scripts/run.sh')).toEqual({
      hostPath: '/var/lib/kubelet/pods/u/volumes/kubernetes.io~configmap/s/run.sh',
      source: '/var/lib/kubelet/pods/u/volumes/kubernetes.io~configmap/s',
    });
    expect(locateOnHost(mounts, '/data')).toEqual({ hostPath: '/mnt/disk', source: '/mnt/disk' });
    expect(locateOnHost(mounts, '/data/cache/x')).toEqual({ hostPath: '/mnt/cache/x', source: '/mnt/cache' });
    expect(locateOnHost(mounts, '/data/../data/cachex/y')).toEqual({
      hostPath: '/mnt/disk/cachex/y',
      source: '/mnt/disk',
    });
    expect(locateOnHost(mounts, '/etc/hosts')).toEqual({
      hostPath: '/var/lib/kubelet/pods/u/etc-hosts',
      source: '/var/lib/kubelet/pods/u/etc-hosts',
    });
    expect(locateOnHost(mounts, '/etc/hostname')).toEqual({ hostPath: '/etc/hostname' });
    expect(locateOnHost([], '/usr/bin/sh')).toEqual({ hostPath: '/usr/bin/sh' });
  });
});

describe("a container's command and working dir", () => {
  it('are found through its mounts, by path, by $PATH and relative to the working dir', async () => {
    const volume = join(dir, 'volume');
    mkdirSync(join(volume, 'bin'), { recursive: true });
    writeFileSync(join(volume, 'bin', 'tool'), '#!/bin/sh\n');
    chmodSync(join(volume, 'bin', 'tool'), 0o755);
    writeFileSync(join(volume, 'bin', 'data.txt'), 'not executable');
    const view = { mounts: [{ container_path: '/opt/volume', host_path: volume }], mayHang: () => false };
    expect(await resolveExecutableIn(view, '/opt/volume/bin/tool', undefined, '/')).toBe('/opt/volume/bin/tool');
    expect(await resolveExecutableIn(view, 'tool', '/usr/bin:/opt/volume/bin', '/')).toBe('/opt/volume/bin/tool');
    expect(await resolveExecutableIn(view, './bin/tool', undefined, '/opt/volume')).toBe('/opt/volume/bin/tool');
    expect(await resolveExecutableIn(view, 'sh', '/opt/volume/bin:/bin', '/')).toBe('/bin/sh');
    expect(await resolveExecutableIn(view, '/opt/volume/bin/data.txt', undefined, '/')).toBeUndefined();
    expect(await resolveExecutableIn(view, '/opt/volume/bin', undefined, '/')).toBeUndefined();
    expect(await resolveExecutableIn(view, 'tool', '/usr/bin', '/')).toBeUndefined();
    expect(await kindIn(view, '/opt/volume/bin')).toBe('dir');
    expect(await kindIn(view, '/opt/volume/bin/tool')).toBe('other');
    expect(await kindIn(view, '/opt/volume/none')).toBeUndefined();
    // A mount whose source may stop answering is looked at apart, with the same answers.
    const apart = { ...view, mayHang: () => true };
    expect(await resolveExecutableIn(apart, 'tool', '/usr/bin:/opt/volume/bin', '/')).toBe('/opt/volume/bin/tool');
    expect(await resolveExecutableIn(apart, '/opt/volume/bin/data.txt', undefined, '/')).toBeUndefined();
    expect(await kindIn(apart, '/opt/volume/bin')).toBe('dir');
    expect(await kindIn(apart, '/opt/volume/bin/tool')).toBe('other');
    expect(await kindIn(apart, '/opt/volume/none')).toBeUndefined();
  });

  it.runIf(process.getuid?.() === 0)(
    'run from a volume, in a working dir in a volume, and so do its execs',
    async () => {
      const scripts = join(dir, 'scripts');
      mkdirSync(scripts);
      writeFileSync(join(scripts, 'run.sh'), '#!/bin/sh\necho "ran in $(pwd)"\nexec sleep 3600\n');
      writeFileSync(join(scripts, 'probe.sh'), '#!/bin/sh\necho "probed in $(pwd)"\n');
      chmodSync(join(scripts, 'run.sh'), 0o755);
      chmodSync(join(scripts, 'probe.sh'), 0o755);
      const { sandboxId, sandboxConfig } = await runSandbox(runtime, dir, 'u-container-view');
      const config: cri.ContainerConfig = {
        metadata: { name: 'main', attempt: 0 },
        image: { image: 'busybox' },
        command: ['./run.sh'],
        working_dir: '/tsk-container-view/scripts',
        log_path: 'main/0.log',
        mounts: [{ container_path: '/tsk-container-view/scripts', host_path: scripts }],
      };
      const id = await runtime.createContainer(sandboxId, config, sandboxConfig);
      await runtime.startContainer(id);
      const log = join(dir, 'logs', 'main', '0.log');
      await until(
        () => readFileSync(log, 'utf8').includes('ran in /tsk-container-view/scripts'),
        10_000,
        'the command ran in its working dir',
      );
      const probed = await runtime.execSync(id, ['./probe.sh'], 10);
      expect(Buffer.from(probed.stdout ?? '').toString()).toBe('probed in /tsk-container-view/scripts\n');
      expect(probed.exit_code ?? 0).toBe(0);
      await expect(runtime.execSync(id, ['./none.sh'], 10)).rejects.toThrow(
        'exec: "./none.sh": executable file not found in $PATH',
      );
      await runtime.stopContainer(id, 0);
      await runtime.stopPodSandbox(sandboxId);
    },
    30_000,
  );

  // As runc makes a missing working dir (MkdirAll 0755 in the container's root, after its mounts, before the user
  // switch): privately here, where nothing of the host is made, or in the volume that holds it.
  it.runIf(process.getuid?.() === 0)(
    'start in a working dir made for them when it is missing, never on the host',
    async () => {
      const volume = join(dir, 'made-in-volume');
      mkdirSync(volume);
      const { sandboxId, sandboxConfig } = await runSandbox(runtime, dir, 'u-made-working-dir');
      const cases = [
        { name: 'private', cwd: '/tsk-made-working-dir/a/b', mounts: [] },
        {
          name: 'volume',
          cwd: '/tsk-made-working-dir-volume/sub/dir',
          mounts: [{ container_path: '/tsk-made-working-dir-volume', host_path: volume }],
        },
      ];
      for (const c of cases) {
        const id = await runtime.createContainer(
          sandboxId,
          {
            metadata: { name: c.name, attempt: 0 },
            image: { image: 'busybox' },
            command: ['sh', '-c', 'echo "in $(pwd) $(stat -c %a .)"; exec sleep 3600'],
            working_dir: c.cwd,
            log_path: `${c.name}/0.log`,
            mounts: c.mounts,
          },
          sandboxConfig,
        );
        await runtime.startContainer(id);
        await until(
          () => readFileSync(join(dir, 'logs', c.name, '0.log'), 'utf8').includes(`in ${c.cwd} 755`),
          10_000,
          `the ${c.name} container in its working dir`,
        );
        // An exec enters it too.
        const pwd = await runtime.execSync(id, ['pwd'], 10);
        expect(Buffer.from(pwd.stdout ?? '').toString()).toBe(`${c.cwd}\n`);
        await runtime.stopContainer(id, 0);
      }
      expect(existsSync('/tsk-made-working-dir')).toBe(false);
      expect(existsSync('/tsk-made-working-dir-volume')).toBe(false);
      // In a volume it is the volume's, as runc makes it there.
      expect(statSync(join(volume, 'sub', 'dir')).isDirectory()).toBe(true);
      await runtime.stopPodSandbox(sandboxId);
    },
    30_000,
  );
});
