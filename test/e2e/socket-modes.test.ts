/**
 * The gRPC sockets the kubelet and the process-runtime daemon serve have their mode whatever the umask they were
 * started with: the runtime's CRI socket 0660, as containerd's; pod-resources and device plugin registration 0600,
 * root's alone as upstream's under the usual umask. A client of the runtime's socket can run anything as root, and
 * with a umask of 0 the sockets were open to every local user.
 */
import { afterAll, describe, it } from 'vitest';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeKubeletPorts, kubeletArgs, startKubelet, until, untilServing, type Kubelet } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-sockets-'));
const started: Kubelet[] = [];
const mode = (path: string) => statSync(path).mode & 0o777;

/** Starts `args` with the umask 0 (the children inherit it), then restores this process's. */
function startWithOpenUmask(args: string[]): Kubelet {
  const saved = process.umask(0);
  try {
    const k = startKubelet(args);
    started.push(k);
    return k;
  } finally {
    process.umask(saved);
  }
}

afterAll(async () => {
  for (const k of started) await k.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('socket modes under a umask of 0', () => {
  it("the process-runtime daemon's CRI socket is 0660", async () => {
    const socket = join(dir, 'runtime.sock');
    startWithOpenUmask(['process-runtime', '--listen', `unix://${socket}`, '--root-dir', join(dir, 'runtime')]);
    await until(() => statSync(socket, { throwIfNoEntry: false })?.isSocket(), 20_000, 'the socket');
    await until(() => mode(socket) === 0o660, 2000, `mode 0660 (${mode(socket).toString(8)})`);
  });

  it("the kubelet's pod-resources and device plugin registration sockets are 0600", async () => {
    const ports = await freeKubeletPorts();
    const kubelet = startWithOpenUmask(kubeletArgs({ dir: join(dir, 'kubelet'), ports, node: 'sockets' }));
    await untilServing(ports, kubelet);
    const root = join(dir, 'kubelet', 'root');
    for (const socket of [join(root, 'pod-resources', 'kubelet.sock'), join(root, 'device-plugins', 'kubelet.sock')])
      await until(() => statSync(socket, { throwIfNoEntry: false }) && mode(socket) === 0o600, 10_000, socket);
  });
});
