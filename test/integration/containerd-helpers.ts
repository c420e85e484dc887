/** Helpers for the real-containerd suite: pod manifests, /pods polling, 10250 requests, cgroup reads. */
import { readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import type { CriRuntime } from '../../src/cri/services.js';
import type { Containerd } from '../fixtures/containerd.js';
import type { Kubelet } from '../e2e/helpers.js';
import https from 'node:https';
import { join } from 'node:path';
import type { Container, ContainerStatus, Pod, PodList } from '../../src/api/types.js';
import { httpGet, until, unmountTestMounts } from '../e2e/helpers.js';
import { startContainerd } from '../fixtures/containerd.js';
import { createCriClient } from '../../src/cri/client.js';
import { startCluster, type Cluster } from '../e2e/cluster-helpers.js';
import type { ClientPki } from '../e2e/streaming-helpers.js';

/** Writes a static pod manifest (JSON is YAML) and returns its file name. */
export function writePod(
  dir: string,
  name: string,
  spec: Partial<Pod['spec']> & { containers: Container[] },
  meta: Record<string, unknown> = {},
): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default', ...meta },
      spec: { terminationGracePeriodSeconds: 1, ...spec },
    }),
  );
  return file;
}

/** Removes a manifest. */
export function removePod(dir: string, name: string): void {
  rmSync(join(dir, `${name}.yaml`), { force: true });
}

/** The pods the read-only port serves. */
export async function pods(ro: number): Promise<Pod[]> {
  return (JSON.parse((await httpGet(`http://127.0.0.1:${ro}/pods`)).body) as PodList).items as Pod[];
}

/** Waits until pod `name` (static: name-node) satisfies `pred`; returns it. */
export async function waitPod(
  ro: number,
  name: string,
  pred: (p: Pod) => boolean,
  timeoutMs = 40_000,
  what = '',
): Promise<Pod> {
  let last: Pod | undefined;
  try {
    return await until(
      async () => {
        last = (await pods(ro)).find((p) => p.metadata.name === name);
        return last && pred(last) ? last : undefined;
      },
      timeoutMs,
      `${name} ${what}`,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}\nlast status: ${JSON.stringify(last?.status)}`);
  }
}

/** The status of container `c` (regular or init). */
export function cstatus(p: Pod, c = 'main', init = false): ContainerStatus | undefined {
  return (init ? p.status?.initContainerStatuses : p.status?.containerStatuses)?.find((s) => s.name === c);
}

/** An HTTPS request to the kubelet with the admin client certificate. */
export function kubeletRequest(
  port: number,
  path: string,
  pki: ClientPki,
  method = 'GET',
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method,
        ca: readFileSync(pki.ca),
        cert: readFileSync(pki.cert),
        key: readFileSync(pki.key),
      },
      (res) => {
        let b = '';
        res.on('data', (d) => (b += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: b }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Runs `cmd` in a container through POST /run (CRI ExecSync). */
export async function run(port: number, pki: ClientPki, pod: string, cmd: string, c = 'main'): Promise<string> {
  const r = await kubeletRequest(port, `/run/default/${pod}/${c}?cmd=${encodeURIComponent(cmd)}`, pki, 'POST');
  if (r.status !== 200) throw new Error(`/run ${cmd}: ${r.status} ${r.body}`);
  return r.body;
}

/** The cgroup v1 directory of a pod under controller `ctrl` (cgroupfs driver), below the kubelet's cgroup root. */
export function podCgroupDir(
  cgroupRoot: string,
  ctrl: string,
  qos: 'burstable' | 'besteffort' | '',
  uid: string,
): string {
  return join('/sys/fs/cgroup', ctrl, cgroupRoot, 'kubepods', qos, `pod${uid}`);
}

/** Reads a cgroup file, or undefined. */
export function cgroupValue(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, 'utf8').trim() : undefined;
}

/** The container id without the runtime prefix. */
export function bareId(containerID: string | undefined): string {
  return (containerID ?? '').replace(/^[a-z]+:\/\//, '');
}

/** Stops the kubelet, closes the CRI client, tears containerd down and removes the test dir. */
export async function teardown(o: {
  kubelet?: Kubelet;
  cri?: CriRuntime;
  ctrd?: Containerd;
  dir: string;
}): Promise<void> {
  await o.kubelet?.stop();
  o.cri?.close?.();
  await o.ctrd?.stop();
  rmSync(o.dir, { recursive: true, force: true });
}

/**
 * A kubelet joined to the fake apiserver with a private containerd as its runtime (the set-up of the
 * cluster-on-containerd suites).
 */
export async function startContainerdCluster(o: {
  dir: string;
  node: string;
  config?: string[];
}): Promise<{ ctrd: Containerd; cri: CriRuntime; c: Cluster }> {
  const ctrd = await startContainerd({ cni: true });
  const cri = createCriClient(ctrd.endpoint);
  const c = await startCluster({ dir: o.dir, node: o.node, config: o.config, extra: ctrd.kubeletFlags });
  await until(() => c.api.store.get('nodes', '', o.node), 20_000, 'node registered');
  return { ctrd, cri, c };
}

/** Deletes every pod, waits for containerd to have no sandbox left, then stops everything. */
export async function stopContainerdCluster(x: {
  ctrd?: Containerd;
  cri?: CriRuntime;
  c?: Cluster;
  dir: string;
}): Promise<void> {
  for (const p of x.c?.api.store.list('pods') ?? []) x.c!.api.store.remove('pods', 'default', p.metadata.name, {});
  if (x.cri)
    await until(async () => (await x.cri!.runtime.listPodSandbox()).length === 0, 30_000, 'sandboxes removed').catch(
      () => {},
    );
  await x.c?.close();
  unmountTestMounts(x.dir);
  await teardown({ cri: x.cri, ctrd: x.ctrd, dir: x.dir });
}
