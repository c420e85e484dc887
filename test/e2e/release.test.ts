/**
 * The release as an operator installs it (deployability issue): `npm pack` gives a tarball with
 * the built CLI; installed with `--omit=dev` into an empty prefix by an npm that finds no C++
 * toolchain (node-pty, an optional native addon, is then left out), `tskubelet --version` prints
 * what scripts expect of a kubelet, and a standalone start on a root dir that does not exist yet
 * serves /healthz and runs a static pod; a TTY container is refused with why. The systemd unit
 * and kubeadm drop-in, pointed at that install, pass `systemd-analyze verify`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Pod, PodList } from '../../src/api/types.js';
import { freeKubeletPorts, httpGet, kubeletArgs, repoRoot, until, withHostArgs } from './helpers.js';
import { KUBERNETES_VERSION } from '../../src/version.js';
import { promisify } from 'node:util';
import { packRelease } from '../../scripts/build-deb.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-release-'));
const prefix = join(dir, 'prefix');
const installed = join(prefix, 'bin', 'tskubelet');
let kubelet: ChildProcess | undefined;
let output = '';

/** A PATH with node, npm and a shell only: what a node without a build toolchain offers npm. */
function toolchainFreePath(): string {
  const bin = join(dir, 'bare-bin');
  mkdirSync(bin);
  const npmCli = join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js');
  symlinkSync(process.execPath, join(bin, 'node'));
  writeFileSync(join(bin, 'npm'), `#!/bin/sh\nexec "${process.execPath}" "${npmCli}" "$@"\n`, { mode: 0o755 });
  for (const tool of ['sh', 'env', 'uname', 'cat', 'rm', 'mkdir', 'ln', 'chmod']) {
    const found = ['/bin', '/usr/bin'].map((d) => join(d, tool)).find((p) => existsSync(p));
    if (found) symlinkSync(found, join(bin, tool));
  }
  return bin;
}

beforeAll(async () => {
  // dist/ is built (npm test builds before the tests run).
  const { tarball, files } = await packRelease(dir);
  expect(files).toContain('dist/main.js');
  expect(files.some((f) => f.startsWith('test/'))).toBe(false);
  const path = toolchainFreePath();
  for (const tool of ['g++', 'cc', 'make', 'python3'])
    expect(() => execFileSync('sh', ['-c', `command -v ${tool}`], { env: { PATH: path } })).toThrow();
  // A child this worker does not wait on synchronously: a minute's install would block the worker past vitest's RPC
  // timeout.
  await promisify(execFile)(
    'npm',
    ['install', '-g', '--prefix', prefix, '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', tarball],
    {
      env: {
        ...process.env,
        PATH: path,
        npm_config_cache: process.env.npm_config_cache ?? join(process.env.HOME ?? '/root', '.npm'),
      },
      maxBuffer: 64 << 20,
    },
  );
}, 180_000);

afterAll(async () => {
  if (kubelet && kubelet.exitCode === null) {
    kubelet.kill('SIGTERM');
    await new Promise((r) => kubelet!.once('exit', r));
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('the release installed without a toolchain', () => {
  it('prints the Kubernetes version as upstream, and tskubelet its own with --version=raw', () => {
    expect(execFileSync(installed, ['--version'], { encoding: 'utf8' })).toBe(`Kubernetes ${KUBERNETES_VERSION}\n`);
    expect(execFileSync(installed, ['--version=raw'], { encoding: 'utf8' })).toMatch(
      new RegExp(
        `^version\\.Info\\{Major:"1", Minor:"\\d+", GitVersion:"${KUBERNETES_VERSION}", .*Compiler:"tskubelet \\S+", Platform:"linux/\\w+"\\}\\n$`,
      ),
    );
    expect(
      existsSync(join(prefix, 'lib', 'node_modules', 'tskubelet', 'node_modules', 'node-pty', 'package.json')),
    ).toBe(false);
  });

  it('starts on a root dir that does not exist, serves /healthz, runs a static pod and refuses a TTY with why', async () => {
    const manifests = join(dir, 'manifests');
    mkdirSync(manifests);
    writeFileSync(
      join(manifests, 'web.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: main, image: busybox, command: [sleep, "3600"]}\n',
    );
    writeFileSync(
      join(manifests, 'tty.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: tty}\nspec:\n  containers:\n  - {name: main, image: busybox, command: [sh], tty: true, stdin: true}\n',
    );
    const ports = await freeKubeletPorts();
    const args = kubeletArgs({ dir: join(dir, 'node'), ports, node: 'release', manifests });
    expect(existsSync(join(dir, 'node'))).toBe(false);
    kubelet = spawn(installed, withHostArgs(args), { stdio: ['ignore', 'pipe', 'pipe'] });
    kubelet.stdout!.on('data', (d) => (output += d));
    kubelet.stderr!.on('data', (d) => (output += d));
    await until(async () => (await httpGet(`http://127.0.0.1:${ports.hz}/healthz`)).status === 200, 20_000, 'healthz');
    const podNamed = async (name: string) =>
      ((JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body) as PodList).items as Pod[]).find(
        (p) => p.metadata.name === `${name}-release`,
      );
    await until(async () => (await podNamed('web'))?.status?.phase === 'Running', 20_000, 'the static pod Running');
    const waiting = await until(
      async () => (await podNamed('tty'))?.status?.containerStatuses?.[0]?.state?.waiting?.message,
      20_000,
      'the TTY refused',
    );
    expect(waiting).toMatch(/node-pty is not installed/);
    expect(kubelet.exitCode, output).toBeNull();
  }, 60_000);
});

describe('systemd and kubeadm files', () => {
  it('pass systemd-analyze verify, pointed at the install', () => {
    const units = join(dir, 'units');
    mkdirSync(join(units, 'tskubelet.service.d'), { recursive: true });
    const source = join(repoRoot, 'packaging', 'systemd');
    const verifyWith = (binary: string) => {
      for (const file of ['tskubelet.service', join('tskubelet.service.d', '10-kubeadm.conf')])
        writeFileSync(
          join(units, file),
          readFileSync(join(source, file), 'utf8').replaceAll('/usr/local/bin/tskubelet', binary),
        );
      return () =>
        execFileSync('systemd-analyze', ['verify', join(units, 'tskubelet.service')], {
          env: { ...process.env, SYSTEMD_UNIT_PATH: `${units}:` },
          stdio: 'pipe',
        });
    };
    expect(verifyWith(installed)).not.toThrow();
    // The check is real: the same files with a command that does not exist fail it.
    expect(verifyWith('/nonexistent/tskubelet')).toThrow();
  });

  it("sets an environment node accepts: the unit's NODE_OPTIONS as systemd passes it, not as flags", () => {
    // The tests and benches give NODE_OPTIONS' flags on node's command line, where any V8 flag goes; systemd sets the
    // variable, where Node refuses all but a few (a unit that named --lite-mode there would not start).
    const unit = readFileSync(join(repoRoot, 'packaging', 'systemd', 'tskubelet.service'), 'utf8');
    const env = Object.fromEntries(
      [...unit.matchAll(/^Environment="?([A-Z_]+)=([^"\n]*)"?$/gm)].map(([, name, value]) => [name, value]),
    );
    expect(env.NODE_OPTIONS).toBeTruthy();
    const version = (extra: Record<string, string>) =>
      execFileSync(installed, ['--version'], {
        env: { ...process.env, ...env, ...extra },
        encoding: 'utf8',
        stdio: 'pipe',
      });
    expect(version({})).toBe(`Kubernetes ${KUBERNETES_VERSION}\n`);
    // The check is real: a V8 flag Node does not take there stops the command.
    expect(() => version({ NODE_OPTIONS: `${env.NODE_OPTIONS} --optimize-for-size` })).toThrow(
      /--optimize-for-size is not allowed in NODE_OPTIONS/,
    );
  });
});
