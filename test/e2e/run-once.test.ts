/**
 * End to end: upstream's runonce mode (`--runonce`) with the real CLI on the process-runtime daemon. The kubelet
 * runs the pods of its manifest directory, exits 0 once their containers run and leaves them running on the runtime;
 * it exits 1 with upstream's error when a pod's container fails or no manifest is there, and refuses the in-process
 * runtime, whose containers would die with it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCriClient } from '../../src/cri/client.js';
import type { CriRuntime } from '../../src/cri/services.js';
import {
  freeKubeletPorts,
  killProcesses,
  kubeletArgs,
  startKubelet,
  startProcessRuntime,
  until,
  type Kubelet,
  type KubeletPorts,
} from './helpers.js';

const tag = `ronce${process.pid}`;
const dir = mkdtempSync(join(tmpdir(), 'tsk-ronce-'));
const socket = join(dir, 'cri.sock');
let ports: KubeletPorts;
let daemon: Kubelet;
let cri: CriRuntime;

/** A pod whose container runs `script` with sh, or `command` as it is. */
const podYaml = (name: string, run: string | string[]) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    command: ${JSON.stringify(typeof run === 'string' ? ['sh', '-c', run] : run)}
`;

/** A manifest directory of its own with `pods` (name → script or command). */
function manifests(name: string, pods: Record<string, string | string[]>): string {
  const path = join(dir, name);
  mkdirSync(path, { recursive: true });
  for (const [pod, script] of Object.entries(pods)) writeFileSync(join(path, `${pod}.yaml`), podYaml(pod, script));
  return path;
}

/** Runs the kubelet in runonce mode to its exit: its exit code and output. */
async function runOnce(node: string, manifestDir: string, extra: string[] = []) {
  const kubelet = startKubelet(
    kubeletArgs({
      dir: join(dir, node),
      ports,
      node,
      manifests: manifestDir,
      extra: ['--runonce', '--node-ip', '127.0.0.1', ...extra],
    }),
  );
  const code = await new Promise<number | null>((resolve) => kubelet.proc.once('exit', resolve));
  return { code, output: kubelet.output() };
}

const onDaemon = ['--container-runtime-endpoint', `unix://${socket}`];
const runningContainersOf = async (podName: string) =>
  (await cri.runtime.listContainers({ state: { state: 'CONTAINER_RUNNING' } })).filter(
    (c) => c.labels['io.kubernetes.pod.name'] === podName,
  );

beforeAll(async () => {
  ports = await freeKubeletPorts();
  daemon = startProcessRuntime(socket, join(dir, 'runtime'));
  await until(() => daemon.output().includes('process runtime serving CRI'), 20_000, 'daemon serving');
  cri = createCriClient(`unix://${socket}`);
}, 30_000);

afterAll(async () => {
  for (const s of (await cri?.runtime.listPodSandbox().catch(() => [])) ?? []) {
    await cri.runtime.stopPodSandbox(s.id).catch(() => {});
    await cri.runtime.removePodSandbox(s.id).catch(() => {});
  }
  cri?.close?.();
  await daemon?.stop();
  killProcesses(tag);
  rmSync(dir, { recursive: true, force: true });
});

describe('runonce', () => {
  it('exits 0 once its pods run, serving no port, and leaves them running on the runtime', async () => {
    const node = 'ronce-ok';
    const dirOk = manifests('ok', { web: `exec sleep 3600 # ${tag}`, worker: `exec sleep 3601 # ${tag}` });
    const { code, output } = await runOnce(node, dirOk, onDaemon);
    expect(code, output).toBe(0);
    expect(output).toContain('Pods started');
    expect(output).toContain('Started kubelet as runonce');
    // No server: the line main logs once its ports are up never comes.
    expect(output).not.toContain('Started kubelet"');
    for (const pod of [`web-${node}`, `worker-${node}`]) expect(await runningContainersOf(pod)).toHaveLength(1);
  }, 60_000);

  it('exits 1 naming, as upstream formats it, a pod whose container keeps failing', async () => {
    const node = 'ronce-crash';
    // A command that cannot start: the container is never running, so no look can take it for started (one that
    // exits at once is running for a moment after each restart, which a look may catch, upstream's too).
    const dirCrash = manifests('crash', { fine: `exec sleep 3602 # ${tag}`, crash: [`/nonexistent-${tag}`] });
    const { code, output } = await runOnce(node, dirCrash, onDaemon);
    expect(code, output).toBe(1);
    expect(output).toMatch(
      new RegExp(
        `"command failed" err="runonce failed: error running pods: \\[crash-${node}_default\\([0-9a-f]+\\)\\]"`,
      ),
    );
    expect(output).toMatch(/Unable to start pod because container failed.*containerName=\["main"\]/);
    expect(await runningContainersOf(`fine-${node}`)).toHaveLength(1);
  }, 60_000);

  it('exits 1 when its sources give no pod within a second', async () => {
    const { code, output } = await runOnce('ronce-empty', manifests('empty', {}), onDaemon);
    expect(code, output).toBe(1);
    expect(output).toContain('runonce failed: no pod manifest update after 1s');
  }, 30_000);

  it('refuses the in-process runtime, whose containers would die with the kubelet', async () => {
    const { code, output } = await runOnce('ronce-inproc', manifests('inproc', { web: 'sleep 1' }));
    expect(code, output).toBe(1);
    expect(output).toContain('runonce needs a container runtime that outlives the kubelet');
    expect(output).not.toContain('Processing manifest with pods');
  }, 30_000);
});
