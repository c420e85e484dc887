/**
 * Probes and hooks on real containers: a kubelet joined to the fake apiserver with containerd.
 * Exec readiness flips Ready when the container creates its file; an httpGet liveness probe
 * reaches busybox httpd at the pod's CNI IP (the host defaults to the pod IP); a failing exec
 * liveness probe restarts the container; a postStart hook's side effect is visible inside.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CriRuntime } from '../../src/cri/services.js';
import { TEST_IMAGES, type Containerd } from '../fixtures/containerd.js';
import { boundPod, type Cluster } from '../e2e/cluster-helpers.js';
import { httpGet, until } from '../e2e/helpers.js';
import { startContainerdCluster, stopContainerdCluster } from './containerd-helpers.js';

const node = 'ctrd-probe-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-ctrd-probes-'));
let ctrd: Containerd;
let cri: CriRuntime;
let c: Cluster;
type Obj = Record<string, any>;
const pod = (name: string) => c.api.store.get('pods', 'default', name) as Obj | undefined;
const cs = (name: string) => pod(name)?.status?.containerStatuses?.[0];
const img = TEST_IMAGES.busybox;

beforeAll(async () => ({ ctrd, cri, c } = await startContainerdCluster({ dir, node })), 60_000);
afterAll(() => stopContainerdCluster({ ctrd, cri, c, dir }), 90_000);

describe('probes and hooks on containerd', () => {
  it('exec readiness turns Ready True when the container is ready; httpGet liveness at the pod IP keeps it running', async () => {
    c.api.store.create(
      'pods',
      boundPod('web', node, {
        containers: [
          {
            name: 'main',
            image: img,
            command: [
              'sh',
              '-c',
              'mkdir -p /www && echo ok > /www/index.html && sleep 2 && touch /tmp/ready && exec httpd -f -p 8080 -h /www',
            ],
            ports: [{ name: 'http', containerPort: 8080 }],
            readinessProbe: { exec: { command: ['test', '-f', '/tmp/ready'] }, periodSeconds: 1 },
            livenessProbe: {
              httpGet: { path: '/index.html', port: 'http' },
              initialDelaySeconds: 3,
              periodSeconds: 1,
              failureThreshold: 2,
            },
            lifecycle: { postStart: { exec: { command: ['sh', '-c', 'echo hooked > /tmp/poststart'] } } },
          },
        ],
      }),
    );
    await until(() => cs('web')?.state?.running, 40_000, 'running');
    await until(
      () => pod('web')?.status?.conditions?.find((x: Obj) => x.type === 'Ready')?.status === 'True',
      30_000,
      'Ready',
    );
    await new Promise((r) => setTimeout(r, 5000));
    expect(cs('web')).toMatchObject({ ready: true, restartCount: 0 });
    const [ctr] = await cri.runtime.listContainers({
      label_selector: { 'io.kubernetes.pod.uid': pod('web')!.metadata.uid },
    });
    const r = await cri.runtime.execSync(ctr.id, ['cat', '/tmp/poststart'], 5);
    expect(Buffer.from(r.stdout).toString()).toBe('hooked\n');
  }, 90_000);

  it('a failing exec liveness probe restarts the container', async () => {
    c.api.store.create(
      'pods',
      boundPod('sick', node, {
        containers: [
          {
            name: 'main',
            image: img,
            command: ['sleep', '3600'],
            livenessProbe: { exec: { command: ['sh', '-c', 'exit 1'] }, periodSeconds: 1, failureThreshold: 1 },
          },
        ],
      }),
    );
    await until(() => (cs('sick')?.restartCount ?? 0) >= 1, 60_000, 'restarted');
    const killing = c.api.store.list('events').find((e) => e.involvedObject.name === 'sick' && e.reason === 'Killing');
    expect(killing?.message).toBe('Container main failed liveness probe, will be restarted');
  }, 90_000);

  it("stats on containerd: the summary and /metrics/resource carry the pod's cpu, memory, network and processes from CRI", async () => {
    const uid = pod('web')!.metadata.uid;
    const ro = c.ports.ro;
    const summary = async () => JSON.parse((await httpGet(`http://127.0.0.1:${ro}/stats/summary`)).body) as Obj;
    const p = await until(
      async () =>
        (await summary()).pods?.find(
          (x: Obj) => x.podRef.uid === uid && x.containers?.[0]?.cpu?.usageNanoCores !== undefined,
        ),
      40_000,
      'web stats with a rate',
    );
    expect(p.containers[0]).toMatchObject({
      name: 'main',
      cpu: { usageCoreNanoSeconds: expect.any(Number) },
      memory: { workingSetBytes: expect.any(Number) },
    });
    expect(p.containers[0].memory.workingSetBytes).toBeGreaterThan(0);
    // ListPodSandboxStats: the pod's own network namespace (CNI, eth0; the httpGet probes went through it) and its
    // processes.
    const withNet = await until(
      async () => (await summary()).pods?.find((x: Obj) => x.podRef.uid === uid && x.network),
      30_000,
      'pod network',
    );
    expect(withNet.network).toMatchObject({ name: 'eth0', rxBytes: expect.any(Number), txBytes: expect.any(Number) });
    expect(withNet.network.rxBytes).toBeGreaterThan(0);
    expect(withNet.network.interfaces.map((i: Obj) => i.name)).toContain('eth0');
    expect(withNet.process_stats?.process_count).toBeGreaterThanOrEqual(1);
    const cadvisor = (await httpGet(`http://127.0.0.1:${ro}/metrics/cadvisor`)).body;
    const podNet =
      /container_network_receive_bytes_total\{container="",id="([^"]+)",image="",interface="eth0",name="",namespace="default",pod="web"\} [1-9]/.exec(
        cadvisor,
      );
    // cAdvisor's ids are cgroups: the pod's (below this kubelet's cgroup root) and its container's, as containerd made
    // them.
    const cgroupExists = (id: string) =>
      existsSync(join('/sys/fs/cgroup/memory', id)) || existsSync(join('/sys/fs/cgroup', id, 'cgroup.procs'));
    expect(podNet?.[1]).toMatch(new RegExp(`^${ctrd.cgroupRoot}/kubepods/(burstable/|besteffort/)?pod${uid}$`));
    expect(cgroupExists(podNet![1])).toBe(true);
    const main = /container_memory_working_set_bytes\{container="main",id="([^"]+)",[^}]*pod="web"\}/.exec(cadvisor);
    expect(main?.[1].startsWith(`${podNet![1]}/`)).toBe(true);
    expect(cgroupExists(main![1])).toBe(true);
    const text = (await httpGet(`http://127.0.0.1:${ro}/metrics/resource`)).body;
    expect(text).toMatch(
      /container_memory_working_set_bytes\{container="main",namespace="default",pod="web"\} [1-9]\d* \d+/,
    );
  }, 60_000);
});
