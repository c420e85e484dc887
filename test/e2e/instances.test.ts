/**
 * A second instance changes nothing (issue 13 item 2): a second kubelet on the same root dir, or
 * a second process runtime on the same state dir or socket, exits 1 with a clear message, and the
 * first instance's containers keep running untouched (same process, same container ID). A socket
 * file that is not ours, or a regular file at the socket path, is never removed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod, PodList } from '../../src/api/types.js';
import {
  countProcesses,
  freeKubeletPorts,
  httpGet,
  kubeletArgs,
  startKubelet,
  until,
  type Kubelet,
} from './helpers.js';

const marker = `inst-marker-${process.pid}`;
const dir = mkdtempSync(join(tmpdir(), 'tsk-inst-'));
const manifests = join(dir, 'manifests');
let first: Kubelet;
let ro: number;

async function pods(port: number): Promise<Pod[]> {
  return (JSON.parse((await httpGet(`http://127.0.0.1:${port}/pods`)).body) as PodList).items;
}
function exited(k: Kubelet, ms = 20_000): Promise<number | null> {
  return new Promise((resolve, reject) => {
    if (k.proc.exitCode !== null) return resolve(k.proc.exitCode);
    const t = setTimeout(() => reject(new Error(`still running after ${ms} ms:\n${k.output()}`)), ms);
    k.proc.once('exit', (c) => {
      clearTimeout(t);
      resolve(c);
    });
  });
}

beforeAll(async () => {
  mkdirSync(manifests);
  writeFileSync(
    join(manifests, 'p.yaml'),
    `apiVersion: v1\nkind: Pod\nmetadata: {name: keep}\nspec: {containers: [{name: c, image: busybox, command: [sh, -c, "sleep 3600; echo ${marker}"]}]}\n`,
  );
  const ports = await freeKubeletPorts();
  ro = ports.ro;
  first = startKubelet(kubeletArgs({ dir, ports, node: 'inst', manifests }));
  await until(
    async () => (await pods(ro)).some((p) => p.status?.containerStatuses?.[0]?.state?.running),
    20_000,
    'first kubelet runs its pod',
  );
}, 30_000);

afterAll(async () => {
  await first?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a second instance', () => {
  it('a second kubelet on the same root dir exits 1 naming the holder and changes nothing', async () => {
    const before = (await pods(ro))[0].status!.containerStatuses![0].containerID;
    expect(countProcesses(marker)).toBe(1);
    const second = startKubelet(kubeletArgs({ dir, ports: await freeKubeletPorts(), node: 'inst', manifests }));
    expect(await exited(second)).toBe(1);
    expect(second.output()).toContain(
      `"command failed" err="failed to run Kubelet: root directory ${join(dir, 'root')} is in use by another process (pid ${first.proc.pid})`,
    );
    await new Promise((r) => setTimeout(r, 1500));
    expect(countProcesses(marker)).toBe(1);
    const after = (await pods(ro))[0].status!.containerStatuses![0];
    expect(after.containerID).toBe(before);
    expect(after.restartCount).toBe(0);
    expect(existsSync(join(dir, 'root', 'process-runtime'))).toBe(true);
  }, 40_000);

  it('a second process runtime on the same socket or state dir exits 1; a foreign file at the socket path is never removed', async () => {
    const sock = join(dir, 'cri.sock');
    const daemon = startKubelet(['process-runtime', '--listen', `unix://${sock}`, '--root-dir', join(dir, 'rt')]);
    await until(() => daemon.output().includes('process runtime serving CRI'), 20_000, 'daemon serving');
    const sameSocket = startKubelet(['process-runtime', '--listen', `unix://${sock}`, '--root-dir', join(dir, 'rt2')]);
    expect(await exited(sameSocket)).toBe(1);
    expect(sameSocket.output()).toContain(`${sock} is served by another process`);
    const sameDir = startKubelet([
      'process-runtime',
      '--listen',
      `unix://${join(dir, 'other.sock')}`,
      '--root-dir',
      join(dir, 'rt'),
    ]);
    expect(await exited(sameDir)).toBe(1);
    expect(sameDir.output()).toContain('process runtime state directory');
    expect(existsSync(sock)).toBe(true);
    expect(daemon.proc.exitCode).toBe(null);
    await daemon.stop();
    const plain = join(dir, 'not-a-socket');
    writeFileSync(plain, 'precious');
    const onFile = startKubelet(['process-runtime', '--listen', `unix://${plain}`, '--root-dir', join(dir, 'rt3')]);
    expect(await exited(onFile)).toBe(1);
    expect(readFileSync(plain, 'utf8')).toBe('precious');
  }, 60_000);

  it('after the holder is SIGKILLed the lock is free at once', async () => {
    const d = join(dir, 'killed');
    const a = startKubelet(kubeletArgs({ dir: d, ports: await freeKubeletPorts(), node: 'k1' }));
    await until(() => a.output().includes('Started kubelet"'), 20_000, 'a started');
    a.proc.kill('SIGKILL');
    await exited(a);
    const b = startKubelet(kubeletArgs({ dir: d, ports: await freeKubeletPorts(), node: 'k1' }));
    await until(() => b.output().includes('Started kubelet"'), 20_000, 'b started after a was killed');
    await b.stop();
  }, 40_000);
});
