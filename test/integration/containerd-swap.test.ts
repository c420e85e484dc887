/**
 * Swapping the Go kubelet for tskubelet on a running node (deployability issue): a pod whose
 * sandbox and container were made on a real containerd with the labels and annotations a Go
 * kubelet v1.36.2 writes (test/fixtures/go-kubelet-1.36: identity labels, hash, restart count,
 * termination and grace annotations, config source and seen time) is taken over as it runs: the
 * same container, restartCount 0, its status reported, nothing created or killed (regression:
 * every container was restarted, "Container main definition changed").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as criTypes from '../../src/cri/types.js';
import type { Container, Pod } from '../../src/api/types.js';
import { readFileSync } from 'node:fs';
import { TEST_IMAGES } from '../fixtures/containerd.js';
import { boundPod, type Cluster } from '../e2e/cluster-helpers.js';
import type { Containerd } from '../fixtures/containerd.js';
import type { CriRuntime } from '../../src/cri/services.js';
import { until } from '../e2e/helpers.js';
import { startContainerdCluster, stopContainerdCluster } from './containerd-helpers.js';

const node = 'swap-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-swap-'));
let ctrd: Containerd;
let cri: CriRuntime;
let c: Cluster;

/** The fixture's hostnet pod's container: its image, and the hash the Go kubelet wrote for it (name "main"). */
const fixture = (
  JSON.parse(
    readFileSync(join(import.meta.dirname, '..', 'fixtures', 'go-kubelet-1.36', 'cri-containers.json'), 'utf8'),
  ) as {
    Labels: Record<string, string>;
    CRI: { config?: { metadata: { name: string }; image?: unknown; annotations?: Record<string, string> } };
  }[]
).find((x) => x.Labels['io.kubernetes.pod.name'] === 'hostnet' && x.CRI.config?.image)!;
const goKubeletHash = fixture.CRI.config!.annotations!['io.kubernetes.container.hash'];
const FIXTURE_IMAGE = 'registry.k8s.io/e2e-test-images/busybox:1.37.0-1';

beforeAll(async () => {
  ({ ctrd, cri, c } = await startContainerdCluster({ dir, node }));
  // The fixture's image name on the test's busybox, so that the pod is the one the Go kubelet hashed.
  ctrd.ctr(['images', 'tag', TEST_IMAGES.busybox, FIXTURE_IMAGE]);
}, 90_000);

afterAll(async () => {
  await stopContainerdCluster({ ctrd, cri, c, dir });
}, 90_000);

/** What a Go kubelet v1.36.2 made for `pod` (a hostNetwork pod): its sandbox and its running container, by CRI. */
async function startedByGoKubelet(pod: Pod): Promise<{ sandboxId: string; containerId: string }> {
  const { name, namespace, uid } = pod.metadata as { name: string; namespace: string; uid: string };
  const container = pod.spec.containers[0] as Container;
  const identity = {
    'io.kubernetes.pod.name': name,
    'io.kubernetes.pod.namespace': namespace,
    'io.kubernetes.pod.uid': uid,
  };
  const sandboxConfig: criTypes.PodSandboxConfig = {
    metadata: { name, namespace, uid, attempt: 0 },
    hostname: '',
    labels: { ...identity },
    annotations: { 'kubernetes.io/config.seen': new Date().toISOString(), 'kubernetes.io/config.source': 'api' },
    log_directory: join(dir, 'logs', `${namespace}_${name}_${uid}`),
    linux: {
      cgroup_parent: `${ctrd.cgroupRoot}/kubepods/besteffort/pod${uid}`,
      security_context: { namespace_options: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' } },
    },
  } as criTypes.PodSandboxConfig;
  const sandboxId = await cri.runtime.runPodSandbox(sandboxConfig);
  const containerId = await cri.runtime.createContainer(
    sandboxId,
    {
      metadata: { name: container.name, attempt: 0 },
      image: { image: container.image },
      command: container.command,
      labels: { ...identity, 'io.kubernetes.container.name': container.name },
      annotations: {
        'io.kubernetes.container.hash': goKubeletHash,
        'io.kubernetes.container.restartCount': '0',
        'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
        'io.kubernetes.container.terminationMessagePolicy': 'File',
        'io.kubernetes.pod.terminationGracePeriod': '30',
      },
      log_path: `${container.name}/0.log`,
    } as criTypes.ContainerConfig,
    sandboxConfig,
  );
  await cri.runtime.startContainer(containerId);
  return { sandboxId, containerId };
}

describe('a pod a Go kubelet started, taken over by tskubelet', () => {
  it('keeps running: same container and sandbox, restartCount 0, its status reported', async () => {
    let made: { sandboxId: string; containerId: string } | undefined;
    let uid = '';
    await c.restartKubelet(async () => {
      // While no kubelet runs: the pod as the apiserver holds it, and what the Go kubelet had made of it.
      c.api.store.create(
        'pods',
        boundPod('taken-over', node, {
          hostNetwork: true,
          containers: [{ name: 'main', image: FIXTURE_IMAGE, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
        }),
      );
      const pod = c.api.store.get('pods', 'default', 'taken-over') as Pod;
      uid = pod.metadata.uid!;
      made = await startedByGoKubelet(pod);
    });
    const status = await until(
      () => {
        const s = c.api.store.get('pods', 'default', 'taken-over')?.status;
        return s?.phase === 'Running' && s.containerStatuses?.[0]?.state?.running ? s : undefined;
      },
      40_000,
      'the pod Running in its status',
    );
    expect(status.containerStatuses[0].containerID).toBe(`containerd://${made!.containerId}`);
    expect(status.containerStatuses[0].restartCount).toBe(0);
    // A few sync periods later, nothing was made or killed.
    await new Promise((r) => setTimeout(r, 5000));
    const containers = await cri.runtime.listContainers({ label_selector: { 'io.kubernetes.pod.uid': uid } });
    expect(containers.map((x) => [x.id, x.state])).toEqual([[made!.containerId, 'CONTAINER_RUNNING']]);
    const sandboxes = await cri.runtime.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': uid } });
    expect(sandboxes.map((x) => [x.id, x.state])).toEqual([[made!.sandboxId, 'SANDBOX_READY']]);
    const killings = c.api.store
      .list('events')
      .filter((e) => e.involvedObject?.name === 'taken-over' && e.reason === 'Killing');
    expect(killings).toEqual([]);
  }, 90_000);
});
