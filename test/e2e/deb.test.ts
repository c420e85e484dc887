/**
 * The Debian package (`npm run deb`, scripts/build-deb.ts) as dpkg installs it: on a system where the Go kubelet's
 * package is installed, installing tskubelet's swaps it out (it conflicts with, replaces and provides `kubelet`),
 * `/usr/bin/kubelet` is then tskubelet, which prints the Kubernetes version, serves /healthz and runs a static pod;
 * its kubelet.service with kubeadm's drop-in passes `systemd-analyze verify`; removing it leaves nothing behind, and
 * the Go kubelet's package goes back in. dpkg works on a root of its own (`--root`), so the host is not touched.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod, PodList } from '../../src/api/types.js';
import { KUBERNETES_VERSION } from '../../src/version.js';
import { buildDeb, DEB_PATHS, otherSystemsParts, packRelease } from '../../scripts/build-deb.js';
import { freeKubeletPorts, httpGet, kubeletArgs, repoRoot, until, withHostArgs } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-deb-test-'));
/** The system dpkg installs into. */
const root = join(dir, 'root');
let deb: string;
let goKubeletDeb: string;
let kubelet: ChildProcess | undefined;

const dpkg = (...args: string[]) =>
  execFileSync('dpkg', [`--root=${root}`, '--force-script-chrootless', ...args], { encoding: 'utf8', stdio: 'pipe' });
const status = (pkg: string) =>
  execFileSync('dpkg-query', [`--root=${root}`, '-W', '-f=${db:Status-Status}', pkg], { encoding: 'utf8' }).trim();

/** A package in the shape of pkgs.k8s.io's kubelet: /usr/bin/kubelet and its unit. */
function goKubeletPackage(): string {
  const pkg = join(dir, 'go-kubelet');
  mkdirSync(join(pkg, 'DEBIAN'), { recursive: true });
  mkdirSync(join(pkg, 'usr', 'bin'), { recursive: true });
  mkdirSync(join(pkg, 'usr', 'lib', 'systemd', 'system'), { recursive: true });
  writeFileSync(
    join(pkg, 'DEBIAN', 'control'),
    'Package: kubelet\nVersion: 1.36.2-1.1\nArchitecture: all\nMaintainer: test <test@example.com>\nDescription: the Go kubelet (stand-in)\n',
  );
  writeFileSync(join(pkg, 'usr', 'bin', 'kubelet'), '#!/bin/sh\necho go kubelet\n');
  chmodSync(join(pkg, 'usr', 'bin', 'kubelet'), 0o755);
  writeFileSync(
    join(pkg, 'usr', 'lib', 'systemd', 'system', 'kubelet.service'),
    '[Service]\nExecStart=/usr/bin/kubelet\n',
  );
  const out = join(dir, 'kubelet_1.36.2-1.1_all.deb');
  execFileSync('dpkg-deb', ['--root-owner-group', '--build', pkg, out], { stdio: 'pipe' });
  return out;
}

beforeAll(async () => {
  // dist/ is built (npm test builds before the tests run).
  deb = await buildDeb({ tarball: (await packRelease(dir)).tarball, outDir: dir, optional: false });
  goKubeletDeb = goKubeletPackage();
  for (const d of ['info', 'updates', 'triggers']) mkdirSync(join(root, 'var', 'lib', 'dpkg', d), { recursive: true });
  writeFileSync(join(root, 'var', 'lib', 'dpkg', 'status'), '');
}, 180_000);

afterAll(async () => {
  if (kubelet && kubelet.exitCode === null) {
    kubelet.kill('SIGTERM');
    await new Promise((r) => kubelet!.once('exit', r));
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('the Debian package', () => {
  it('stands in for the kubelet package: provides it at its Kubernetes version, conflicts with and replaces it', () => {
    const field = (name: string) => execFileSync('dpkg-deb', ['-f', deb, name], { encoding: 'utf8' }).trim();
    expect(field('Package')).toBe('tskubelet');
    expect(field('Provides')).toBe(`kubelet (= ${KUBERNETES_VERSION.slice(1)})`);
    expect(field('Conflicts')).toBe('kubelet');
    expect(field('Replaces')).toBe('kubelet');
    expect(field('Depends')).toMatch(/^nodejs \(>= 20\)/);
    // Debian policy's copyright file, naming the license.
    const files = execFileSync('dpkg-deb', ['-c', deb], { encoding: 'utf8' });
    expect(files).toContain(`.${DEB_PATHS.copyright}`);
    // Nothing for other systems: node-pty's Windows and macOS builds were 58 of the install's 117 MB.
    expect(files).not.toMatch(/node-pty\/(prebuilds\/(win32|darwin)|deps\/winpty|third_party\/conpty)/);
    if (existsSync(join(repoRoot, 'node_modules', 'node-pty'))) expect(files).toContain('node_modules/node-pty/lib/');
  });

  it("leaves out node-pty's builds for other systems, keeping Linux's", () => {
    const tree: Record<string, string[]> = {
      '/i/node_modules/node-pty/prebuilds': ['darwin-arm64', 'linux-x64', 'linux-arm64', 'win32-x64'],
      '/i/node_modules/node-pty/deps': ['winpty'],
      '/i/node_modules/node-pty/third_party': ['conpty'],
    };
    expect(otherSystemsParts('/i', (dir) => tree[dir] ?? [], 'x64')).toEqual([
      '/i/node_modules/node-pty/prebuilds/darwin-arm64',
      '/i/node_modules/node-pty/prebuilds/linux-arm64',
      '/i/node_modules/node-pty/prebuilds/win32-x64',
      '/i/node_modules/node-pty/deps/winpty',
      '/i/node_modules/node-pty/third_party/conpty',
    ]);
    expect(otherSystemsParts('/i', () => [], 'x64')).toEqual([]);
  });

  it("swaps out the Go kubelet's package; /usr/bin/kubelet is then tskubelet", () => {
    dpkg('-i', goKubeletDeb);
    expect(status('kubelet')).toBe('installed');
    expect(execFileSync(join(root, DEB_PATHS.kubelet), { encoding: 'utf8' })).toBe('go kubelet\n');
    // Node.js is the host's, not in this root's package database.
    const out = dpkg('--force-depends', '-i', deb);
    expect(out).toMatch(/removing kubelet/i);
    expect(status('tskubelet')).toBe('installed');
    expect(status('kubelet')).not.toBe('installed');
    expect(readlinkSync(join(root, DEB_PATHS.kubelet))).toBe('../lib/tskubelet/bin/tskubelet.js');
    expect(execFileSync(join(root, DEB_PATHS.kubelet), ['--version'], { encoding: 'utf8' })).toBe(
      `Kubernetes ${KUBERNETES_VERSION}\n`,
    );
  });

  it('runs from its install: serves /healthz and runs a static pod', async () => {
    const manifests = join(dir, 'manifests');
    mkdirSync(manifests);
    writeFileSync(
      join(manifests, 'web.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: main, image: busybox, command: [sleep, "3600"]}\n',
    );
    const ports = await freeKubeletPorts();
    kubelet = spawn(
      join(root, DEB_PATHS.kubelet),
      withHostArgs(kubeletArgs({ dir: join(dir, 'node'), ports, node: 'deb', manifests })),
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    kubelet.stdout!.on('data', (d) => (output += d));
    kubelet.stderr!.on('data', (d) => (output += d));
    await until(async () => (await httpGet(`http://127.0.0.1:${ports.hz}/healthz`)).status === 200, 20_000, 'healthz');
    await until(
      async () =>
        ((JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body) as PodList).items as Pod[]).find(
          (p) => p.metadata.name === 'web-deb',
        )?.status?.phase === 'Running',
      20_000,
      'the static pod Running',
    );
    expect(kubelet.exitCode, output).toBeNull();
    kubelet.kill('SIGTERM');
    await new Promise((r) => kubelet!.once('exit', r));
  }, 60_000);

  it("its kubelet.service, with kubeadm's drop-in, passes systemd-analyze verify", () => {
    expect(readFileSync(join(root, DEB_PATHS.unit), 'utf8')).toMatch(/^ExecStart=\/usr\/bin\/kubelet$/m);
    // kubeadm's drop-in runs /usr/bin/kubelet with its variables (ours, packaging/systemd, names tskubelet's path).
    const dropIn = join(root, 'usr', 'lib', 'systemd', 'system', 'kubelet.service.d');
    mkdirSync(dropIn, { recursive: true });
    writeFileSync(
      join(dropIn, '10-kubeadm.conf'),
      readFileSync(join(repoRoot, 'packaging', 'systemd', 'tskubelet.service.d', '10-kubeadm.conf'), 'utf8').replaceAll(
        '/usr/local/bin/tskubelet',
        DEB_PATHS.kubelet,
      ),
    );
    // The targets the unit names are systemd's own, which a system has: the host's.
    for (const target of [
      'sysinit.target',
      'basic.target',
      'shutdown.target',
      'multi-user.target',
      'network-online.target',
    ])
      copyFileSync(join('/usr/lib/systemd/system', target), join(root, 'usr', 'lib', 'systemd', 'system', target));
    const verify = () =>
      execFileSync('systemd-analyze', [`--root=${root}`, 'verify', 'kubelet.service'], { stdio: 'pipe' });
    expect(verify).not.toThrow();
    // The check is real: without the command it runs, the same files fail it.
    renameSync(join(root, DEB_PATHS.kubelet), join(root, `${DEB_PATHS.kubelet}.moved`));
    expect(verify).toThrow(/\/usr\/bin\/kubelet is not executable/);
    renameSync(join(root, `${DEB_PATHS.kubelet}.moved`), join(root, DEB_PATHS.kubelet));
    rmSync(join(dropIn, '10-kubeadm.conf'));
  });

  it('is removed without a trace, and the Go kubelet can go back in', () => {
    dpkg('-r', 'tskubelet');
    for (const path of [DEB_PATHS.install, DEB_PATHS.kubelet, DEB_PATHS.tskubelet, DEB_PATHS.unit, DEB_PATHS.copyright])
      expect(existsSync(join(root, path)), path).toBe(false);
    dpkg('-i', goKubeletDeb);
    expect(execFileSync(join(root, DEB_PATHS.kubelet), { encoding: 'utf8' })).toBe('go kubelet\n');
  });
});
