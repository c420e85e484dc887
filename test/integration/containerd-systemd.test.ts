/**
 * A node on the systemd cgroup driver, as kubeadm sets one up: containerd with `SystemdCgroup = true` and the
 * kubelet with `cgroupDriver: systemd`, both on one real systemd (test/fixtures/systemd.ts, in whose namespaces they
 * run as on a node). The kubelet makes the QoS slices and each pod's slice with the pod's limits before its sandbox;
 * runc puts the containers' scopes in it; the slice is stopped when the pod goes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startContainerd, TEST_IMAGES, type Containerd } from '../fixtures/containerd.js';
import { canRunSystemd, startSystemd, type Systemd } from '../fixtures/systemd.js';
import {
  freeKubeletPorts,
  httpGet,
  kubeletArgs,
  kubeletCommandLine,
  repoRoot,
  until,
  withHostArgs,
} from '../e2e/helpers.js';
import { cstatus, removePod, waitPod, writePod } from './containerd-helpers.js';

/** What the test reads of /stats/summary. */
interface Summary {
  node: { systemContainers?: { name: string }[] };
  pods?: { podRef: { name: string }; memory?: { workingSetBytes?: number; availableBytes?: number } }[];
}

describe.runIf(canRunSystemd())('the systemd cgroup driver with containerd on systemd cgroups', () => {
  const dir = mkdtempSync('/var/tmp/tsk-systemd-node-');
  const manifests = join(dir, 'manifests');
  let systemd: Systemd;
  let containerd: Containerd;
  let kubelet: ChildProcess;
  let output = '';
  let readOnlyPort = 0;
  const read = (path: string) => readFileSync(join(systemd.cgroupFsRoot, path), 'utf8').trim();

  beforeAll(async () => {
    mkdirSync(manifests, { recursive: true });
    systemd = await startSystemd(dir, `tsk-systemd-node-${process.pid}`);
    containerd = await startContainerd({ enter: () => systemd.enter() });
    const ports = await freeKubeletPorts();
    readOnlyPort = ports.ro;
    const { env, flags } = kubeletCommandLine();
    const args = withHostArgs(
      kubeletArgs({
        dir,
        ports,
        node: 'systemd-node',
        manifests,
        extra: ['--container-runtime-endpoint', containerd.endpoint, '--cgroup-driver', 'systemd', '--v', '2'],
      }),
    );
    const [command, ...prefix] = systemd.enter();
    kubelet = spawn(command, [...prefix, process.execPath, ...flags, join(repoRoot, 'bin', 'tskubelet.js'), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    kubelet.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    kubelet.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  }, 120_000);

  afterAll(async () => {
    // Ending systemd (PID 1 of the namespace) ends the kubelet, containerd and the pods with it.
    await systemd?.stop();
    await containerd?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('runs a pod in its slice with the limits of the pod, under the QoS slices, and stops the slice when the pod goes', async () => {
    await until(() => existsSync(join(systemd.cgroupFsRoot, 'cpu', 'kubepods.slice')), 30_000, 'kubepods.slice').catch(
      (err: Error) => {
        throw new Error(`${err.message}\n${output.slice(-4000)}`);
      },
    );
    writePod(manifests, 'limited', {
      containers: [
        {
          name: 'main',
          image: TEST_IMAGES.busybox,
          command: ['sleep', '3600'],
          resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '500m', memory: '64Mi' } },
        },
      ],
    });
    const running = await waitPod(readOnlyPort, 'limited-systemd-node', (p) => !!cstatus(p)?.state?.running, 60_000);
    const slice = `kubepods-burstable-pod${running.metadata.uid!.replace(/-/g, '_')}.slice`;
    const podDir = `kubepods.slice/kubepods-burstable.slice/${slice}`;
    expect(systemd.property(slice, 'ActiveState')).toBe('active');
    expect(systemd.property(slice, 'CPUQuotaPerSecUSec')).toBe('500ms');
    expect(systemd.property(slice, 'MemoryLimit')).toBe(String(64 * 2 ** 20));
    expect(read(`cpu/${podDir}/cpu.cfs_quota_us`)).toBe('50000');
    expect(read(`memory/${podDir}/memory.limit_in_bytes`)).toBe(String(64 * 2 ** 20));
    // runc (systemd driver) put the pod's containers in scopes of the kubelet's slice.
    const containerId = cstatus(running)!.containerID!.replace(/^containerd:\/\//, '');
    const scopes = readdirSync(join(systemd.cgroupFsRoot, 'memory', podDir)).filter((n) => n.endsWith('.scope'));
    expect(scopes).toContain(`cri-containerd-${containerId}.scope`);
    expect(read(`memory/${podDir}/cri-containerd-${containerId}.scope/memory.limit_in_bytes`)).toBe(
      String(64 * 2 ** 20),
    );
    // The QoS level: the node's allocatable caps kubepods, the Burstable class has its pods' shares.
    expect(systemd.property('kubepods.slice', 'ActiveState')).toBe('active');
    expect(systemd.property('kubepods-burstable.slice', 'CPUShares')).toBe('102');
    expect(systemd.property('kubepods-besteffort.slice', 'CPUShares')).toBe('2');
    // /stats/summary reads the pod's figures from its slice, and the pods' node-allocatable cgroup from kubepods.slice.
    const summary = await until(
      async () => {
        const body = JSON.parse((await httpGet(`http://127.0.0.1:${readOnlyPort}/stats/summary`)).body) as Summary;
        const stats = body.pods?.find((p) => p.podRef.name === 'limited-systemd-node');
        return stats?.memory?.workingSetBytes && body.node.systemContainers?.some((c) => c.name === 'pods') && body;
      },
      30_000,
      "the pod's memory in /stats/summary",
    );
    // Available is the slice's limit less the working set: the figures are the slice's.
    const podMemory = summary.pods!.find((p) => p.podRef.name === 'limited-systemd-node')!.memory!;
    expect(podMemory.availableBytes! + podMemory.workingSetBytes!).toBe(64 * 2 ** 20);
    removePod(manifests, 'limited');
    await until(() => systemd.property(slice, 'ActiveState') === 'inactive', 30_000, 'the pod slice stopped');
    await until(() => !existsSync(join(systemd.cgroupFsRoot, 'memory', podDir)), 10_000, 'the pod cgroup gone');
  }, 120_000);
});
