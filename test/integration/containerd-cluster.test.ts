/**
 * The cluster path on real containers: a kubelet joined to the fake apiserver with containerd as
 * its runtime. A pod bound through the API runs as a CNI container and its status (pod IP from the
 * bridge, containerd:// IDs) reaches the apiserver; a kubelet restart recreates nothing and
 * releases a pod the apiserver has as Failed (upstream restart_test.go); a
 * containerd outage turns the Node NotReady with upstream's message and back; kubectl delete
 * removes the pod's containers and sandbox from containerd; a deleted pod held by a finalizer
 * ends Failed with its container's SIGKILL (137). Image pulls from a private registry
 * (Basic auth) work with the pod's imagePullSecrets and fail without them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCriClient } from '../../src/cri/client.js';
import { milliCpu } from '../../src/api/quantity.js';
import type { CriRuntime } from '../../src/cri/services.js';
import { startContainerd, TEST_IMAGES, type Containerd } from '../fixtures/containerd.js';
import { boundPod, kubectl, resizePod, startCluster, type Cluster } from '../e2e/cluster-helpers.js';
import { httpGet, until } from '../e2e/helpers.js';
import { teardown } from './containerd-helpers.js';
import { startRegistry, type Registry } from '../fixtures/registry.js';
import { startSamplePlugin } from '../fixtures/sample-device-plugin.js';

const node = 'ctrd-cluster-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-ctrd-cluster-'));
let ctrd: Containerd;
let cri: CriRuntime;
let c: Cluster;
let registry: Registry;
type Obj = Record<string, any>;
const pod = (name: string) => c.api.store.get('pods', 'default', name) as Obj | undefined;
/** The first event about pod `name` with `reason` whose message passes `ok`, once there is one. */
const eventOf = (name: string, reason: string, ok: (message: string) => boolean) =>
  until(
    () =>
      c.api.store
        .list('events')
        .find((e) => e.involvedObject.name === name && e.reason === reason && ok(String(e.message))),
    20_000,
    `${reason} event`,
  );
const ready = () => c.api.store.get('nodes', '', node)?.status?.conditions?.find((k: Obj) => k.type === 'Ready');
/** A file of the first cgroup v1 directory named `name` under `controller`, or '' while there is none. */
const cgroupFile = (controller: string, name: string, file: string) => {
  const found = execFileSync('sh', [
    '-c',
    `find /sys/fs/cgroup/${controller}/ -type d -name ${name} 2>/dev/null || true`,
  ])
    .toString()
    .trim()
    .split('\n')[0];
  return found ? readFileSync(join(found, file), 'utf8').trim() : '';
};

beforeAll(async () => {
  registry = await startRegistry({
    users: { puller: 'pull-pw' },
    images: [{ name: 'team/app:1', cmd: ['sleep', '3600'] }],
  });
  ctrd = await startContainerd({ cni: true, httpRegistries: [registry.host] });
  cri = createCriClient(ctrd.endpoint);
  c = await startCluster({ dir, node, config: ['nodeStatusUpdateFrequency: 1s'], extra: ctrd.kubeletFlags });
}, 60_000);

afterAll(async () => {
  await c?.close();
  await teardown({ cri, ctrd, dir });
  await registry?.close();
}, 60_000);

describe('cluster on containerd', () => {
  it('node Ready with the runtime version and its images', async () => {
    await until(() => ready()?.status === 'True', 20_000, 'node Ready');
    const n = c.api.store.get('nodes', '', node)!;
    expect(n.status.nodeInfo.containerRuntimeVersion).toMatch(/^containerd:\/\/\d/);
    // containerd 1.6 lists no runtime handlers in its Status (2.0 does): no status.runtimeHandlers, as upstream.
    expect(n.status.runtimeHandlers).toBeUndefined();
    expect(n.status.images.flatMap((i: Obj) => i.names)).toEqual(
      expect.arrayContaining([TEST_IMAGES.busybox, TEST_IMAGES.pause]),
    );
  });

  it('a bound pod runs as a CNI container; the apiserver gets its pod IP and container IDs', async () => {
    c.api.store.create(
      'pods',
      boundPod('app', node, { containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }] }),
    );
    const p = await until(
      () => pod('app')?.status?.containerStatuses?.[0]?.state?.running && pod('app'),
      40_000,
      'app Running in the apiserver',
    );
    const prefix = ctrd.subnet.split('.').slice(0, 3).join('.');
    expect(p.status.podIP.startsWith(`${prefix}.`)).toBe(true);
    expect(p.status.containerStatuses[0]).toMatchObject({
      containerID: expect.stringMatching(/^containerd:\/\//),
      imageID: expect.stringMatching(/sha256:/),
      ready: true,
    });
    const out = await kubectl(c, ['get', 'pods', '-o', 'wide']);
    expect(out.stdout).toMatch(
      new RegExp(`^app\\s+1/1\\s+Running\\s+0\\s+\\S+\\s+${p.status.podIP.replace(/\./g, '\\.')}\\s+${node}`, 'm'),
    );
  }, 60_000);

  it("runs a pod with its RuntimeClass's handler: containerd's sandbox carries it; a handler containerd lacks is its refusal", async () => {
    c.api.store.create('node.k8s.io/runtimeclasses', {
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      metadata: { name: 'plain' },
      handler: 'runc',
    });
    c.api.store.create('node.k8s.io/runtimeclasses', {
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      metadata: { name: 'vm' },
      handler: 'kata',
    });
    const spec = (runtimeClassName: string) => ({
      runtimeClassName,
      containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }],
    });
    c.api.store.create('pods', boundPod('classy', node, spec('plain')));
    c.api.store.create('pods', boundPod('kata', node, spec('vm')));
    const p = await until(
      () => pod('classy')?.status?.containerStatuses?.[0]?.state?.running && pod('classy'),
      40_000,
      'classy Running',
    );
    const sandboxes = await cri.runtime.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': p.metadata.uid } });
    expect(sandboxes.map((s) => [s.state, s.runtime_handler])).toEqual([['SANDBOX_READY', 'runc']]);
    const refused = await eventOf('kata', 'FailedCreatePodSandBox', (m) => m.includes('"kata"'));
    expect(refused.message).toMatch(/^Failed to create pod sandbox: .*no runtime for "kata" is configured/);
    c.api.store.remove('pods', 'default', 'kata');
  }, 60_000);

  it("a host name that cannot be the sandbox's (setHostnameAsFQDN over 64 characters): upstream's FailedCreatePodSandBox, no sandbox", async () => {
    const long = 'h'.repeat(50);
    c.api.store.create(
      'pods',
      boundPod('fqdn', node, {
        hostname: long,
        subdomain: 'grp',
        setHostnameAsFQDN: true,
        containers: [{ name: 'main', image: TEST_IMAGES.busybox }],
      }),
    );
    const refused = await eventOf('fqdn', 'FailedCreatePodSandBox', () => true);
    expect(refused.type).toBe('Warning');
    expect(refused.message).toMatch(
      new RegExp(
        `^Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN ${long}\\.grp\\.default\\.svc\\.\\S* is too long \\(64 characters is the max, \\d+ characters requested\\)$`,
      ),
    );
    const uid = (pod('fqdn') as { metadata: { uid: string } }).metadata.uid;
    expect(await cri.runtime.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': uid } })).toEqual([]);
    c.api.store.remove('pods', 'default', 'fqdn');
  }, 40_000);

  it("hostUsers: false on containerd 1.6 (no user namespaces) gets no sandbox, with upstream's event, and never runs", async () => {
    c.api.store.create(
      'pods',
      boundPod('userns', node, {
        hostUsers: false,
        containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }],
      }),
    );
    const event = await eventOf('userns', 'FailedCreatePodSandBox', () => true);
    expect(event).toMatchObject({
      type: 'Warning',
      message: 'Failed to create pod sandbox: RuntimeClass handler "" does not support user namespaces',
    });
    expect(pod('userns')?.status?.phase).toBe('Pending');
    const uid = pod('userns')?.metadata.uid as string;
    expect((await cri.runtime.listPodSandbox()).some((s) => s.metadata?.uid === uid)).toBe(false);
    // No ID range is taken for a pod that cannot have its namespace.
    expect(existsSync(join(dir, 'root', 'pods', uid, 'userns'))).toBe(false);
    // Upstream counts each sandbox tried for a user-namespaced pod, and each that failed.
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    const tried = Number(/^kubelet_started_user_namespaced_pods_total (\d+)$/m.exec(metrics)?.[1]);
    expect(tried).toBeGreaterThanOrEqual(1);
    expect(metrics).toContain(`\nkubelet_started_user_namespaced_pods_errors_total ${tried}\n`);
    c.api.store.remove('pods', 'default', 'userns', {});
  }, 30_000);

  it('a command that does not exist: a Warning "Failed" event in containerd\'s own words (no method name in front), as upstream\'s', async () => {
    c.api.store.create(
      'pods',
      boundPod('nocmd', node, {
        restartPolicy: 'Never',
        containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['/no/such/binary'] }],
      }),
    );
    const failed = await eventOf('nocmd', 'Failed', (m) => m.startsWith('Error: '));
    expect(failed.type).toBe('Warning');
    expect(failed.message).toMatch(/^Error: failed to create containerd task: .*no such file or directory/);
    // Upstream's start counters: tried, and failed with the start's reason.
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    expect(
      Number(
        /^kubelet_started_containers_errors_total\{code="RunContainerError",container_type="container"\} (\d+)$/m.exec(
          metrics,
        )?.[1],
      ),
    ).toBeGreaterThan(0);
    c.api.store.remove('pods', 'default', 'nocmd');
  }, 40_000);

  it("pulls from a private registry with the pod's imagePullSecrets; without them ErrImagePull → ImagePullBackOff", async () => {
    const image = `${registry.host}/team/app:1`;
    const auths = {
      [registry.host]: {
        username: 'puller',
        password: 'pull-pw',
        auth: Buffer.from('puller:pull-pw').toString('base64'),
      },
    };
    c.api.store.create('secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/dockerconfigjson',
      metadata: { name: 'regcred', namespace: 'default' },
      data: { '.dockerconfigjson': Buffer.from(JSON.stringify({ auths })).toString('base64') },
    });
    c.api.store.create(
      'pods',
      boundPod('private', node, {
        imagePullSecrets: [{ name: 'regcred' }],
        containers: [{ name: 'main', image, imagePullPolicy: 'Always' }],
      }),
    );
    const p = await until(
      () => pod('private')?.status?.containerStatuses?.[0]?.state?.running && pod('private'),
      30_000,
      'private image pod Running',
    ).catch((err) => {
      throw new Error(
        `${err.message}: ${JSON.stringify(pod('private')?.status?.containerStatuses)} registry: ${JSON.stringify(registry.requests.slice(-6))}`,
      );
    });
    expect(p.status.containerStatuses[0].image).toBe(image);
    expect(registry.requests.some((r) => r.user === 'puller' && r.path === '/v2/team/app/manifests/1')).toBe(true);
    const reasons = c.api.store
      .list('events')
      .filter((e) => e.involvedObject.name === 'private')
      .map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['Pulling', 'Pulled', 'Created', 'Started']));
    // The pull is timed by the image's size bucket (a busybox image: under 10 MB), as upstream's
    // kubelet_image_pull_duration_seconds.
    const pulls = /^kubelet_image_pull_duration_seconds_count\{image_size_in_bytes="0-10MB"\} (\d+)$/m.exec(
      (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body,
    );
    expect(Number(pulls?.[1])).toBeGreaterThanOrEqual(1);
    c.api.store.create(
      'pods',
      boundPod('nocreds', node, { containers: [{ name: 'main', image, imagePullPolicy: 'Always' }] }),
    );
    await until(
      () => {
        const s = pod('nocreds')?.status?.containerStatuses?.[0]?.state?.waiting;
        return s?.reason === 'ErrImagePull' || s?.reason === 'ImagePullBackOff' ? s : undefined;
      },
      40_000,
      'pull failure',
    );
    // The status may already show ImagePullBackOff ("Back-off pulling image …"); the pull error itself is in the Failed
    // event.
    const failed = await eventOf('nocreds', 'Failed', (m) => m.startsWith('Failed to pull image'));
    expect(failed.message).toMatch(/401|unauthorized|authorization/i);
    c.api.store.remove('pods', 'default', 'nocreds');
    // KubeletEnsureSecretPulledImages: the image is on the node now, pulled with regcred (its record says so).
    const pulled = join(dir, 'root', 'image_manager', 'pulled');
    expect(readdirSync(pulled).length).toBeGreaterThanOrEqual(1);
    // A pod without the secret may not use it although it is present (IfNotPresent): it must pull, and cannot.
    c.api.store.create(
      'pods',
      boundPod('present-nocreds', node, { containers: [{ name: 'main', image, imagePullPolicy: 'IfNotPresent' }] }),
    );
    await eventOf('present-nocreds', 'Failed', (m) => m.startsWith('Failed to pull image'));
    expect(pod('present-nocreds')?.status?.containerStatuses?.[0]?.state?.running).toBeUndefined();
    c.api.store.remove('pods', 'default', 'present-nocreds');
    // A pod with the secret uses the present image without a pull.
    c.api.store.create(
      'pods',
      boundPod('present-creds', node, {
        imagePullSecrets: [{ name: 'regcred' }],
        containers: [{ name: 'main', image, imagePullPolicy: 'IfNotPresent' }],
      }),
    );
    await eventOf('present-creds', 'Pulled', (m) =>
      m.endsWith('already present on machine and can be accessed by the pod'),
    );
    c.api.store.remove('pods', 'default', 'present-creds');
  }, 120_000);

  it('resizes a running container in place on containerd: CPU up, then down with memory up, no restart; a memory limit below its usage is refused as upstream, and a kubelet restart resumes it from the checkpoints', async () => {
    c.api.store.create(
      'pods',
      boundPod('resize-me', node, {
        containers: [
          {
            name: 'main',
            image: TEST_IMAGES.busybox,
            // 40 MiB of the container's memory in use (its /dev/shm is charged to its cgroup).
            command: ['sh', '-c', 'head -c 41943040 /dev/zero > /dev/shm/fill; sleep 3600'],
            resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
          },
        ],
      }),
    );
    const before = await until(
      () =>
        pod('resize-me')?.status?.containerStatuses?.[0]?.state?.running &&
        pod('resize-me')!.status.containerStatuses[0],
      40_000,
      'resize-me Running',
    );
    const id = before.containerID.replace('containerd://', '');
    const quota = () => cgroupFile('cpu', id, 'cpu.cfs_quota_us');
    expect(quota()).toBe('20000');
    const resize = (limits: { cpu: string; memory: string }) =>
      resizePod(c, 'resize-me', {
        spec: { containers: [{ name: 'main', resources: { requests: { cpu: '100m', memory: '32Mi' }, limits } }] },
      });
    await resize({ cpu: '500m', memory: '64Mi' });
    await until(() => quota() === '50000', 20_000, 'the new quota in the cgroup');
    const after = await until(
      () => {
        const st = pod('resize-me')!.status.containerStatuses[0];
        return st.resources?.limits?.cpu === '500m' && st;
      },
      20_000,
      'the resized status',
    );
    expect(after).toMatchObject({ restartCount: 0, containerID: before.containerID });
    const memoryLimit = () => cgroupFile('memory', id, 'memory.limit_in_bytes');
    expect(memoryLimit()).toBe(String(64 * 2 ** 20));
    // CPU down and memory up together, in place.
    await resize({ cpu: '300m', memory: '96Mi' });
    await until(() => quota() === '30000' && memoryLimit() === String(96 * 2 ** 20), 20_000, 'CPU down, memory up');
    expect(pod('resize-me')!.status.containerStatuses[0]).toMatchObject({
      restartCount: 0,
      containerID: before.containerID,
    });
    // A memory limit below what the container uses is not written: the resize stays in progress with upstream's reason.
    await resizePod(c, 'resize-me', {
      spec: {
        containers: [
          {
            name: 'main',
            resources: { requests: { cpu: '100m', memory: '16Mi' }, limits: { cpu: '500m', memory: '16Mi' } },
          },
        ],
      },
    });
    const refused = await until(
      () => pod('resize-me')!.status.conditions?.find((k: { type: string }) => k.type === 'PodResizeInProgress'),
      20_000,
      'PodResizeInProgress',
    );
    expect(refused).toMatchObject({ status: 'True', reason: 'Error' });
    expect(refused.message).toMatch(
      /^cannot decrease memory limits: \[attempting to set pod memory limit \(16777216\) below current usage \(\d+\), attempting to set container "main" memory limit \(16777216\) below current usage \(\d+\)\]$/,
    );
    expect(memoryLimit()).toBe(String(96 * 2 ** 20));
    expect(pod('resize-me')!.status.containerStatuses[0]).toMatchObject({ restartCount: 0 });
    // A kubelet restart in the middle of it (allocated, not applied): it resumes from the checkpoints, without a new
    // ResizeStarted, and applies the allocation once the container uses less.
    const startedBefore = c.api.store
      .list('events')
      .filter((e) => e.involvedObject.name === 'resize-me' && e.reason === 'ResizeStarted').length;
    await c.restartKubelet();
    await cri.runtime.execSync(id, ['rm', '/dev/shm/fill'], 10);
    await until(() => memoryLimit() === String(16 * 2 ** 20), 40_000, 'the allocated memory limit applied');
    const done = await until(
      () =>
        !pod('resize-me')!.status.conditions.some((k: { type: string }) => k.type === 'PodResizeInProgress') &&
        pod('resize-me')!.status.containerStatuses[0].resources?.limits?.memory === '16Mi' &&
        pod('resize-me')!.status.containerStatuses[0],
      20_000,
      'the resize completed',
    );
    expect(done).toMatchObject({
      restartCount: 0,
      containerID: before.containerID,
      resources: { limits: { memory: '16Mi' } },
    });
    expect(
      c.api.store.list('events').filter((e) => e.involvedObject.name === 'resize-me' && e.reason === 'ResizeStarted'),
    ).toHaveLength(startedBefore);
    c.api.store.remove('pods', 'default', 'resize-me');
  }, 150_000);

  it("resizes a pod's own resources in place on containerd: the pod cgroup's new quota, no restart; the pod's memory limit never below its usage", async () => {
    c.api.store.create(
      'pods',
      boundPod('pod-level-resize', node, {
        resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '96Mi' } },
        containers: [
          {
            name: 'main',
            image: TEST_IMAGES.busybox,
            // 40 MiB of the pod's memory in use (the container's /dev/shm is charged to its cgroup).
            command: ['sh', '-c', 'head -c 41943040 /dev/zero > /dev/shm/fill; sleep 3600'],
          },
        ],
      }),
    );
    const before = await until(
      () =>
        pod('pod-level-resize')?.status?.containerStatuses?.[0]?.state?.running &&
        pod('pod-level-resize')!.status.containerStatuses[0],
      40_000,
      'pod-level-resize Running',
    );
    const uid = pod('pod-level-resize')!.metadata.uid;
    const podCgroup = (controller: string, file: string) => cgroupFile(controller, `pod${uid}`, file);
    expect(podCgroup('cpu', 'cpu.cfs_quota_us')).toBe('20000');
    expect(podCgroup('memory', 'memory.limit_in_bytes')).toBe(String(96 * 2 ** 20));
    const resize = (limits: { cpu: string; memory: string }) =>
      resizePod(c, 'pod-level-resize', { spec: { resources: { requests: { cpu: '100m', memory: '32Mi' }, limits } } });
    // containerd 1.6 answers UpdatePodSandboxResources Unimplemented: the resize completes all the same.
    await resize({ cpu: '500m', memory: '96Mi' });
    await until(() => podCgroup('cpu', 'cpu.cfs_quota_us') === '50000', 20_000, 'the new quota in the pod cgroup');
    const after = await until(
      () => {
        const st = pod('pod-level-resize')!.status;
        return st.resources?.limits?.cpu === '500m' && st;
      },
      20_000,
      'the resized pod status',
    );
    expect(after.containerStatuses[0]).toMatchObject({ restartCount: 0, containerID: before.containerID });
    expect(after.conditions.map((k: { type: string }) => k.type)).not.toContain('PodResizeInProgress');
    await resize({ cpu: '500m', memory: '16Mi' });
    const refused = await until(
      () => pod('pod-level-resize')!.status.conditions?.find((k: { type: string }) => k.type === 'PodResizeInProgress'),
      20_000,
      'PodResizeInProgress',
    );
    expect(refused).toMatchObject({ status: 'True', reason: 'Error' });
    expect(refused.message).toMatch(
      /^cannot decrease memory limits: attempting to set pod memory limit \(16777216\) below current usage \(\d+\)$/,
    );
    expect(podCgroup('memory', 'memory.limit_in_bytes')).toBe(String(96 * 2 ** 20));
    c.api.store.remove('pods', 'default', 'pod-level-resize');
  }, 90_000);

  it("a sandbox stopped behind the kubelet's back (a node reboot's aftermath) is made again, with upstream's SandboxChanged event", async () => {
    c.api.store.create(
      'pods',
      boundPod('resandboxed', node, {
        containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }],
      }),
    );
    await until(() => pod('resandboxed')?.status?.containerStatuses?.[0]?.state?.running, 40_000, 'running');
    const uid = pod('resandboxed')!.metadata.uid as string;
    const [first] = (await cri.runtime.listPodSandbox()).filter((s) => s.metadata?.uid === uid);
    await cri.runtime.stopPodSandbox(first.id);
    const event = await eventOf('resandboxed', 'SandboxChanged', () => true);
    expect(event).toMatchObject({ type: 'Normal', message: 'Pod sandbox changed, it will be killed and re-created.' });
    await until(
      async () =>
        (await cri.runtime.listPodSandbox()).some(
          (s) => s.metadata?.uid === uid && s.id !== first.id && s.state === 'SANDBOX_READY',
        ),
      40_000,
      'a new ready sandbox',
    );
    await until(
      () => pod('resandboxed')?.status?.containerStatuses?.[0]?.state?.running && pod('resandboxed'),
      40_000,
      'running again',
    );
    await kubectl(c, ['delete', 'pod', 'resandboxed', '--wait=false']);
  }, 90_000);

  it('restarts a container of a Never pod when its restart rule matches its exit code (ContainerRestartRules)', async () => {
    c.api.store.create(
      'pods',
      boundPod('rule-42', node, {
        restartPolicy: 'Never',
        volumes: [{ name: 'marks', emptyDir: {} }],
        containers: [
          {
            name: 'main',
            image: TEST_IMAGES.busybox,
            command: ['sh', '-c', 'if [ -f /marks/ran ]; then exit 0; fi; touch /marks/ran; exit 42'],
            volumeMounts: [{ name: 'marks', mountPath: '/marks' }],
            restartPolicy: 'Never',
            restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }],
          },
        ],
      }),
    );
    const done = await until(
      () => pod('rule-42')?.status?.phase === 'Succeeded' && pod('rule-42')!,
      40_000,
      'rule-42 Succeeded',
    );
    expect(done.status.containerStatuses[0]).toMatchObject({ restartCount: 1, state: { terminated: { exitCode: 0 } } });
  }, 60_000);

  it('a kubelet restart (upstream restart_test.go): a running pod keeps its container, start time and status (no write); a pod the apiserver has as Failed is stopped and released, never run again, holds no cpu, keeps its phase and reason', async () => {
    const share = `${Math.floor(milliCpu(c.api.store.get('nodes', '', node)!.status.allocatable.cpu)! * 0.6)}m`;
    const withCpu = (name: string) =>
      boundPod(name, node, {
        terminationGracePeriodSeconds: 2,
        containers: [
          {
            name: 'main',
            image: TEST_IMAGES.busybox,
            command: ['sleep', '3600'],
            resources: { requests: { cpu: share } },
            volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
          },
        ],
        volumes: [{ name: 'scratch', emptyDir: {} }],
      });
    const runs = (name: string) => pod(name)?.status?.containerStatuses?.[0]?.state?.running;
    c.api.store.create('pods', withCpu('evicted'));
    await until(() => runs('evicted'), 40_000, 'evicted Running');
    const uid = pod('evicted')!.metadata.uid;
    const scratch = join(dir, 'root', 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
    expect(existsSync(scratch)).toBe(true);
    const before = pod('app')!.status;
    const t = Date.now();
    // The kubelet reported the pod Failed (an eviction) and died before it stopped its container.
    await c.restartKubelet(() => {
      const o = pod('evicted')!;
      c.api.store.update('pods', {
        ...o,
        status: { ...o.status, phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory.' },
      });
    });
    const containers = () => cri.runtime.listContainers({ label_selector: { 'io.kubernetes.pod.uid': uid } });
    await until(
      async () => (await containers()).every((x) => x.state !== 'CONTAINER_RUNNING'),
      30_000,
      'its container stopped',
    );
    await until(() => !existsSync(scratch), 10_000, 'its emptyDir released');
    expect(await containers()).toHaveLength(1);
    // Its cpu is free: a pod asking for as much is admitted and runs.
    c.api.store.create('pods', withCpu('after-restart'));
    await until(() => runs('after-restart'), 40_000, 'a pod needing the same cpu runs');
    const failed = pod('evicted')!.status;
    expect(failed).toMatchObject({
      phase: 'Failed',
      reason: 'Evicted',
      message: 'The node was low on resource: memory.',
    });
    expect(failed.conditions.find((x: Obj) => x.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'PodFailed',
    });
    const after = pod('app')!.status;
    expect(after.containerStatuses[0].containerID).toBe(before.containerStatuses[0].containerID);
    expect(after.containerStatuses[0].restartCount).toBe(0);
    expect(after.startTime).toBe(before.startTime);
    expect(after.phase).toBe('Running');
    expect(
      c.api.requests
        .filter((r) => r.at > t && r.method === 'PATCH' && r.path === '/api/v1/namespaces/default/pods/app/status')
        .map((r) => r.body),
    ).toEqual([]);
    for (const n of ['evicted', 'after-restart']) await kubectl(c, ['delete', 'pod', n, '--wait=false']);
    await until(() => !pod('evicted') && !pod('after-restart'), 40_000, 'pods gone');
  }, 150_000);

  it('containerd down → Node NotReady with the runtime error; back → Ready', async () => {
    await ctrd.down();
    const down = await until(() => ready()?.status === 'False' && ready(), 30_000, 'node NotReady');
    expect(down.reason).toBe('KubeletNotReady');
    expect(down.message).toMatch(/container runtime is down/);
    await ctrd.up();
    await until(() => ready()?.status === 'True', 40_000, 'node Ready again');
    const reasons = c.api.store
      .list('events')
      .filter((e) => e.involvedObject.kind === 'Node')
      .map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['NodeNotReady', 'NodeReady']));
  }, 90_000);

  it('a deleted pod held by a finalizer ends Failed, its container killed after the grace period: 137, reason Error (upstream Pod SIGKILL and deleted pods tests)', async () => {
    // busybox sleep as PID 1 ignores SIGTERM: containerd kills it once the grace period is over.
    c.api.store.create(
      'pods',
      boundPod(
        'held',
        node,
        { containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }] },
        { finalizers: ['example.com/test-finalizer'] },
      ),
    );
    await until(() => pod('held')?.status?.containerStatuses?.[0]?.state?.running, 40_000, 'held Running');
    const uid = pod('held')!.metadata.uid;
    await kubectl(c, ['delete', 'pod', 'held', '--wait=false']);
    const st = await until(() => pod('held')?.status?.phase === 'Failed' && pod('held')!.status, 40_000, 'held Failed');
    expect(st.containerStatuses[0].state.terminated).toMatchObject({ exitCode: 137, reason: 'Error' });
    await kubectl(c, ['patch', 'pod', 'held', '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    await until(() => !pod('held'), 20_000, 'held gone');
    await until(
      async () => (await cri.runtime.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': uid } })).length === 0,
      30_000,
      'sandbox removed',
    );
  }, 120_000);

  it('kubectl delete pod removes its containers and sandbox from containerd', async () => {
    const uid = pod('app')!.metadata.uid;
    const out = await kubectl(c, ['delete', 'pod', 'app', '--timeout=60s'], 70_000);
    expect(out.stdout).toContain('pod "app" deleted');
    await until(
      async () => (await cri.runtime.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': uid } })).length === 0,
      30_000,
      'sandbox removed',
    );
    expect(await cri.runtime.listContainers({ label_selector: { 'io.kubernetes.pod.uid': uid } })).toEqual([]);
  }, 90_000);

  it('gives a pod on containerd the device a device plugin answers: its env, mount and device node', async () => {
    const share = join(dir, 'widget-share');
    mkdirSync(share, { recursive: true });
    writeFileSync(join(share, 'marker'), 'widget-data\n');
    await until(() => ready()?.status === 'True', 20_000, 'node Ready');
    const plugin = await startSamplePlugin({
      dir: join(dir, 'root', 'device-plugins'),
      name: 'widget',
      resource: 'example.com/widget',
      devices: ['w0', 'w1'],
      mountHostPath: share,
      deviceHostPath: '/dev/null',
    });
    try {
      await until(
        () => c.api.store.get('nodes', '', node)?.status?.allocatable?.['example.com/widget'] === '2',
        20_000,
        'the widgets allocatable',
      );
      c.api.store.create(
        'pods',
        boundPod('widget-user', node, {
          containers: [
            {
              name: 'main',
              image: TEST_IMAGES.busybox,
              command: ['sleep', '3600'],
              resources: { limits: { 'example.com/widget': '1' }, requests: { 'example.com/widget': '1' } },
            },
          ],
        }),
      );
      const status = await until(
        () => pod('widget-user')?.status?.containerStatuses?.[0]?.state?.running && pod('widget-user')!.status,
        40_000,
        'widget-user Running',
      );
      const id = status.containerStatuses[0].containerID.replace('containerd://', '');
      const r = await cri.runtime.execSync(
        id,
        ['sh', '-c', 'echo "$WIDGET_IDS"; cat /widget/marker; ls -l /dev/widget'],
        10,
      );
      const [ids, marker, device] = Buffer.from(r.stdout).toString().trim().split('\n');
      expect([ids, marker]).toEqual(['w0', 'widget-data']);
      // /dev/null's major and minor: 1, 3.
      expect(device).toMatch(/^c.* 1, +3 .*\/dev\/widget$/);
      expect(plugin.allocations).toEqual([['w0']]);
      c.api.store.remove('pods', 'default', 'widget-user');
    } finally {
      await plugin.close();
    }
  }, 90_000);
});
