/**
 * SIGUSR1 to the kubelet: Node's own answer would be to open its inspector on 127.0.0.1:9229, unauthenticated, in
 * a process running as root (any local user, or any hostNetwork pod, could then run code as root). The kubelet
 * takes the signal instead: it says so in its log, listens on nothing new and goes on serving.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  freeKubeletPorts,
  httpGet,
  kubeletArgs,
  startKubelet,
  until,
  untilServing,
  type Kubelet,
  type KubeletPorts,
} from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-signals-'));
let kubelet: Kubelet;
let ports: KubeletPorts;

/** The TCP addresses process `pid` listens on (iproute2's ss, as root it names the processes). */
const listening = (pid: number) =>
  execFileSync('ss', ['-ltnpH'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(`pid=${pid},`))
    .map((line) => line.trim().split(/\s+/)[3])
    .sort();

beforeAll(async () => {
  ports = await freeKubeletPorts();
  kubelet = startKubelet(kubeletArgs({ dir, ports, node: 'signals' }));
  await untilServing(ports, kubelet);
}, 30_000);

afterAll(async () => {
  await kubelet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('SIGUSR1', () => {
  it('opens no inspector: the kubelet logs it, listens on nothing new and keeps serving', async () => {
    const pid = kubelet.proc.pid!;
    const before = listening(pid);
    expect(before.length).toBeGreaterThanOrEqual(3);
    process.kill(pid, 'SIGUSR1');
    // Node opens the inspector from its own thread soon after the signal: give it the time it would take.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(kubelet.output()).not.toContain('Debugger listening');
    expect(listening(pid)).toEqual(before);
    await until(() => kubelet.output().includes('SIGUSR1 ignored'), 10_000, 'the signal logged');
    expect((await httpGet(`http://127.0.0.1:${ports.hz}/healthz`)).status).toBe(200);
  });
});
