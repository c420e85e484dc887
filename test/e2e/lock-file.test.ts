/**
 * --lock-file and --exit-on-lock-contention on the real CLI, with util-linux's flock(1) as the other process (another
 * kubelet taking the same lock, as upstream's LockContention node e2e spec does with flock(2)): a kubelet started
 * while the lock is held waits, serving nothing, until it is released; with --exit-on-lock-contention a running
 * kubelet leaves (status 0) when another process waits for the lock, which then gets it. The second flag alone is
 * refused as upstream refuses it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freeKubeletPorts, httpGet, kubeletArgs, startKubelet, until, type Kubelet } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-lock-file-'));
const kubelets: Kubelet[] = [];
afterAll(async () => {
  for (const k of kubelets) await k.stop();
  rmSync(dir, { recursive: true, force: true });
});

const healthy = async (port: number) =>
  (await httpGet(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200;
const exitOf = (k: Kubelet) =>
  new Promise<number | null>((resolve) => {
    if (k.proc.exitCode !== null) resolve(k.proc.exitCode);
    else k.proc.once('exit', (code) => resolve(code));
  });

describe('--lock-file', () => {
  it('waits while another process holds the lock; with --exit-on-lock-contention leaves when another waits for it', async () => {
    const lockFile = join(dir, 'kubelet.lock');
    // Another holder: the lock is kept while its input stays open.
    const holder = spawn('flock', ['--exclusive', lockFile, 'sh', '-c', 'echo held && exec cat >/dev/null'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    await new Promise((resolve) => holder.stdout.once('data', resolve));
    const ports = await freeKubeletPorts();
    const k = startKubelet(
      kubeletArgs({ dir, ports, node: 'lock-node', extra: ['--lock-file', lockFile, '--exit-on-lock-contention'] }),
    );
    kubelets.push(k);
    await new Promise((r) => setTimeout(r, 2000));
    expect(await healthy(ports.hz)).toBe(false);
    expect(k.output()).toContain('Acquiring file lock');
    holder.stdin.end();
    await until(() => healthy(ports.hz), 20_000, 'healthz once the lock is released');

    const exited = exitOf(k);
    const waiter = spawn('flock', ['--exclusive', lockFile, 'sh', '-c', 'echo acquired'], { stdio: 'pipe' });
    let said = '';
    waiter.stdout.on('data', (d) => (said += d));
    const waiterExit = new Promise<number | null>((resolve) => waiter.once('exit', resolve));
    expect(await exited).toBe(0);
    expect(await waiterExit).toBe(0);
    expect(said.trim()).toBe('acquired');
    expect(k.output()).toMatch(/Inotify event.*waits for the lock/);
  }, 60_000);

  it('--exit-on-lock-contention without --lock-file is refused as upstream', async () => {
    const ports = await freeKubeletPorts();
    const k = startKubelet(
      kubeletArgs({ dir: join(dir, 'alone'), ports, node: 'lock-node', extra: ['--exit-on-lock-contention'] }),
    );
    kubelets.push(k);
    expect(await exitOf(k)).toBe(1);
    expect(k.output()).toContain('failed to run Kubelet: cannot exit on lock file contention: no lock file specified');
  });
});
