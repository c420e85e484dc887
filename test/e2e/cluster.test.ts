/**
 * Joining a cluster: the real tskubelet CLI with --kubeconfig against the fake apiserver (real
 * HTTPS, client certificates, resourceVersions, chunked watches with bookmarks, 410, 409, the
 * status subresource) and the real kubectl as the operator's client. Pods run on the embedded
 * process runtime.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cpus } from 'node:os';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
  unlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { findCgroupDir } from '../fixtures/cgroup-tree.js';
import { bytes, milliCpu } from '../../src/api/quantity.js';
import { boundPod, kubectl, resizePod, startCluster, type Cluster } from './cluster-helpers.js';
import https from 'node:https';
import { countProcesses, httpGet, until } from './helpers.js';
import { startSamplePlugin } from '../fixtures/sample-device-plugin.js';
import { startSampleDraDriver, type SampleDraDriver } from '../fixtures/sample-dra-driver.js';
import { podResourcesClient } from './pod-resources-client.js';

const node = 'cluster-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-cluster-'));
let c: Cluster;
type Obj = Record<string, any>;

const pod = (name: string) => c.api.store.get('pods', 'default', name) as Obj | undefined;
const running = (name: string) =>
  pod(name)?.status?.phase === 'Running' && pod(name)?.status?.containerStatuses?.[0]?.state?.running;
const create = (obj: Obj, resource = 'pods') => c.api.store.create(resource, structuredClone(obj));
const logOf = (p: Obj, container = 'main') => {
  const d = join(dir, 'logs', `default_${p.metadata.name}_${p.metadata.uid}`, container);
  return existsSync(d)
    ? readdirSync(d)
        .map((f) => readFileSync(join(d, f), 'utf8'))
        .join('')
    : '';
};

beforeAll(async () => {
  // The embedded runtime's CDI specs (DRA drivers and device plugins name CDI devices).
  mkdirSync(join(dir, 'cdi'), { recursive: true });
  writeFileSync(
    join(dir, 'cdi', 'gpu.json'),
    JSON.stringify({
      cdiVersion: '0.6.0',
      kind: 'gpu.example.com/gpu',
      devices: [
        {
          name: 'dev-0',
          containerEdits: { env: ['GPU_DEVICE=dev-0'], deviceNodes: [{ path: '/dev/gpu0', hostPath: '/dev/null' }] },
        },
      ],
    }),
  );
  process.env.TSKUBELET_CDI_SPEC_DIRS = join(dir, 'cdi');
  c = await startCluster({
    dir,
    node,
    config: [
      'nodeStatusUpdateFrequency: 1s',
      'nodeStatusReportFrequency: 1m0s',
      'nodeLeaseDurationSeconds: 4',
      'kubeReserved: {memory: 256Mi, cpu: 100m}',
      // Devices with NUMA nodes are aligned; everything else has no preference and is admitted as before.
      'topologyManagerPolicy: best-effort',
      // The DRA manager's pass over claims of pods no longer active (default 1m).
      'draManagerReconcilePeriod: 1s',
    ],
    extra: ['--node-labels', 'tier=test,zone=a', '--register-with-taints', 'dedicated=test:NoSchedule'],
  });
  await until(() => c.api.store.get('nodes', '', node), 20_000, 'node registered');
}, 30_000);

// A failed test shows what the kubelet said: races in these tests show there, not in the assertion.
afterEach((context) => {
  if (context.task.result?.state === 'fail') console.log(c.kubelet.output().split('\n').slice(-80).join('\n'));
});

afterAll(async () => {
  await c?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('node', () => {
  it('registers with labels, taints, capacity, allocatable, addresses, node info and becomes Ready', async () => {
    const n = await until(
      () => {
        const x = c.api.store.get('nodes', '', node);
        return x?.status?.conditions?.find((k: Obj) => k.type === 'Ready')?.status === 'True' && x;
      },
      15_000,
      'node Ready',
    );
    expect(n.metadata.labels).toMatchObject({
      'kubernetes.io/hostname': node,
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': expect.stringMatching(/^(amd64|arm64)$/),
      tier: 'test',
      zone: 'a',
    });
    expect(n.spec.taints).toEqual([{ key: 'dedicated', value: 'test', effect: 'NoSchedule' }]);
    expect(n.status.capacity.cpu).toBe(String(cpus().length));
    expect(n.status.capacity.pods).toBe('110');
    expect(n.status.allocatable.cpu).toBe(`${cpus().length * 1000 - 100}m`);
    // Each huge page pool of /sys/kernel/mm/hugepages is a resource of its bytes (none here: "0").
    const pools = existsSync('/sys/kernel/mm/hugepages') ? readdirSync('/sys/kernel/mm/hugepages') : [];
    let hugeBytes = 0;
    for (const dirName of pools) {
      const kb = Number(/^hugepages-(\d+)kB$/.exec(dirName)![1]);
      const total = kb * 1024 * Number(readFileSync(`/sys/kernel/mm/hugepages/${dirName}/nr_hugepages`, 'utf8'));
      const name = kb >= 2 ** 20 ? `hugepages-${kb / 2 ** 20}Gi` : `hugepages-${kb / 1024}Mi`;
      expect([name, bytes(n.status.capacity[name]), bytes(n.status.allocatable[name])]).toEqual([name, total, total]);
      hugeBytes += total;
    }
    expect(Object.keys(n.status.capacity).filter((k) => k.startsWith('hugepages-'))).toHaveLength(pools.length);
    // allocatable memory = capacity − kubeReserved (256Mi) − evictionHard memory.available (100Mi) − huge pages
    expect(bytes(n.status.capacity.memory)! - bytes(n.status.allocatable.memory)!).toBe(356 * 1024 * 1024 + hugeBytes);
    expect(n.status.addresses).toEqual([
      { type: 'InternalIP', address: '127.0.0.1' },
      { type: 'Hostname', address: node },
    ]);
    expect(n.status.daemonEndpoints.kubeletEndpoint.Port).toBe(c.ports.port);
    // The embedded runtime's one handler, from its CRI Status: user namespaces as root
    // (process-runtime/user-namespace.ts).
    expect(n.status.runtimeHandlers).toEqual([
      { name: '', features: { recursiveReadOnlyMounts: false, userNamespaces: process.getuid?.() === 0 } },
    ]);
    // NodeDeclaredFeatures: what a Go kubelet v1.36.2 declares with the default gates.
    expect(n.status.declaredFeatures).toEqual([
      'ExtendWebSocketsToKubelet',
      'InPlacePodLevelResourcesVerticalScaling',
      'InPlacePodVerticalScalingInitContainers',
      'RestartAllContainersOnContainerExits',
    ]);
    expect(n.status.nodeInfo).toMatchObject({
      kubeletVersion: 'v1.36.2',
      operatingSystem: 'linux',
      containerRuntimeVersion: expect.stringMatching(/:\/\//),
      bootID: expect.any(String),
    });
    expect(n.status.conditions.map((k: Obj) => `${k.type}=${k.status}:${k.reason}`)).toEqual([
      'MemoryPressure=False:KubeletHasSufficientMemory',
      'DiskPressure=False:KubeletHasNoDiskPressure',
      'PIDPressure=False:KubeletHasSufficientPID',
      'Ready=True:KubeletReady',
    ]);
    const nodes = await kubectl(c, ['get', 'nodes', '-o', 'wide']);
    expect(nodes.stdout).toMatch(
      new RegExp(`^${node}\\s+Ready\\s+<none>\\s+\\S+\\s+v1\\.36\\.2\\s+127\\.0\\.0\\.1`, 'm'),
    );
    const kinds = c.api.store
      .list('events')
      .filter((e) => e.involvedObject.kind === 'Node')
      .map((e) => e.reason);
    expect(kinds).toEqual(
      expect.arrayContaining([
        'Starting',
        'NodeReady',
        // As upstream's condition setters on a new Node: what kubectl describe node lists.
        'NodeHasSufficientMemory',
        'NodeHasNoDiskPressure',
        'NodeHasSufficientPID',
      ]),
    );
    // Once each: the conditions stay as they were.
    expect(kinds.filter((k) => k === 'NodeHasSufficientMemory')).toHaveLength(1);
    // RegisteredNode is the node lifecycle controller's event, not the kubelet's (upstream records none).
    expect(kinds).not.toContain('RegisteredNode');
  });

  it('kubectl cordon and uncordon show on the Node as upstream (NodeNotSchedulable, NodeSchedulable)', async () => {
    const nodeEvent = (reason: string) =>
      c.api.store.list('events').find((e) => e.reason === reason && e.involvedObject?.kind === 'Node');
    await kubectl(c, ['cordon', node]);
    await until(() => nodeEvent('NodeNotSchedulable'), 30_000, 'NodeNotSchedulable');
    await kubectl(c, ['uncordon', node]);
    await until(() => nodeEvent('NodeSchedulable'), 30_000, 'NodeSchedulable');
    expect(nodeEvent('NodeNotSchedulable')?.message).toBe(`Node ${node} status is now: NodeNotSchedulable`);
    // `kubectl events --for node/…` selects on the involved object's kind, name and apiVersion (v1.35+ kubelets set it).
    const listed = await kubectl(c, ['events', '--for', `node/${node}`]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('NodeNotSchedulable');
    expect(listed.stdout).toContain(`Node/${node}`);
  });

  it('PATCHes node status only when it changes (report frequency 1m), as strategic merge to the status subresource', async () => {
    const patches = () =>
      c.api.requests.filter((r) => r.method === 'PATCH' && r.path === `/api/v1/nodes/${node}/status`);
    await until(() => patches().length >= 1, 10_000, 'first status patch');
    const before = patches().length;
    await new Promise((r) => setTimeout(r, 3500));
    expect(patches().length - before).toBeLessThanOrEqual(1);
    expect(patches()[0].contentType).toBe('application/strategic-merge-patch+json');
    expect(patches()[0].user).toBe(`system:node:${node}`);
    // client-go's request metrics, as upstream's kubelet exports them: count and latency by verb and host.
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    expect(
      Number(/^rest_client_requests_total\{code="200",host="[^"]+",method="PATCH"\} (\d+)$/m.exec(metrics)?.[1]),
    ).toBeGreaterThan(0);
    expect(
      Number(/^rest_client_request_duration_seconds_count\{host="[^"]+",verb="PATCH"\} (\d+)$/m.exec(metrics)?.[1]),
    ).toBeGreaterThan(0);
    // The node startup gauges: a new Node was registered, then became Ready.
    for (const g of ['registration', 'post_registration', 'pre_registration'])
      expect(
        Number(new RegExp(`^kubelet_node_startup_${g}_duration_seconds (\\S+)$`, 'm').exec(metrics)?.[1]),
      ).toBeGreaterThan(0);
    expect(Number(/^kubelet_node_startup_duration_seconds (\S+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
  });

  it('keeps a Lease in kube-node-lease owned by the Node, renewed every duration/4', async () => {
    const lease = await until(
      () => c.api.store.get('coordination.k8s.io/leases', 'kube-node-lease', node),
      10_000,
      'lease',
    );
    const n = c.api.store.get('nodes', '', node)!;
    expect(lease.spec).toMatchObject({ holderIdentity: node, leaseDurationSeconds: 4 });
    const first = lease.spec.renewTime;
    const renewed = await until(
      () => {
        const l = c.api.store.get('coordination.k8s.io/leases', 'kube-node-lease', node)!;
        return l.spec.renewTime !== first && l.metadata.ownerReferences?.[0]?.uid === n.metadata.uid && l;
      },
      10_000,
      'lease renewed',
    );
    expect(renewed.metadata.ownerReferences[0]).toMatchObject({ kind: 'Node', name: node, uid: n.metadata.uid });
    expect(renewed.spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });
});

describe('10250 behind the apiserver', () => {
  it('authenticates bearer tokens with TokenReview and authorizes with SubjectAccessReview against the apiserver', async () => {
    const get = (token: string) =>
      new Promise<number>((resolve, reject) => {
        https
          .get(
            {
              host: '127.0.0.1',
              port: c.ports.port,
              path: '/pods',
              ca: c.ca.cert,
              rejectUnauthorized: false,
              headers: { Authorization: `Bearer ${token}` },
            },
            (res) => {
              res.resume();
              resolve(res.statusCode!);
            },
          )
          .on('error', reject);
      });
    c.api.reviewTokens.set('reader-token', { username: 'reader', groups: ['ops'] });
    c.api.reviewTokens.set('intruder-token', { username: 'intruder' });
    c.api.authorize = (spec) => spec.user !== 'intruder';
    await until(() => get('reader-token').then(() => true), 10_000, '10250 listening');
    expect(await get('reader-token')).toBe(200);
    expect(await get('intruder-token')).toBe(403);
    expect(await get('unknown-token')).toBe(401);
    const sar = c.api.requests.find(
      (r) => r.path === '/apis/authorization.k8s.io/v1/subjectaccessreviews' && r.body?.spec?.user === 'reader',
    )!;
    expect(sar.body!.spec).toMatchObject({
      groups: expect.arrayContaining(['ops', 'system:authenticated']),
      resourceAttributes: { verb: 'get', resource: 'nodes', subresource: 'pods', name: node },
    });
    expect(sar.user).toBe(`system:node:${node}`);
  });

  it('authorizes each path as its fine-grained subresource, falling back to nodes/proxy (KubeletFineGrainedAuthz, GA)', async () => {
    const get = (token: string, path: string, accept?: string) =>
      new Promise<{ status: number; body: string; type?: string }>((resolve, reject) => {
        https
          .get(
            {
              host: '127.0.0.1',
              port: c.ports.port,
              path,
              ca: c.ca.cert,
              rejectUnauthorized: false,
              headers: { Authorization: `Bearer ${token}`, ...(accept ? { Accept: accept } : {}) },
            },
            (res) => {
              let body = '';
              res.on('data', (d) => (body += d));
              res.on('end', () => resolve({ status: res.statusCode!, body, type: res.headers['content-type'] }));
            },
          )
          .on('error', reject);
      });
    // Each user may use exactly one subresource of its node.
    const subresources = ['pods', 'healthz', 'configz', 'proxy', 'stats', 'statusz', 'flagz'];
    for (const sub of subresources) c.api.reviewTokens.set(`${sub}-token`, { username: `only-${sub}` });
    c.api.authorize = (spec) => {
      const only = /^only-(.+)$/.exec(String(spec.user))?.[1];
      return only === undefined || only === spec.resourceAttributes?.subresource;
    };
    const paths = ['/pods', '/runningpods/', '/healthz', '/configz', '/stats/summary', '/statusz', '/flagz'];
    const table: Record<string, Record<string, number>> = {};
    for (const sub of subresources) {
      table[sub] = {};
      for (const path of paths) table[sub][path] = (await get(`${sub}-token`, path)).status;
    }
    expect(table).toEqual({
      pods: {
        '/pods': 200,
        '/runningpods/': 200,
        '/healthz': 403,
        '/configz': 403,
        '/stats/summary': 403,
        '/statusz': 403,
        '/flagz': 403,
      },
      healthz: {
        '/pods': 403,
        '/runningpods/': 403,
        '/healthz': 200,
        '/configz': 403,
        '/stats/summary': 403,
        '/statusz': 403,
        '/flagz': 403,
      },
      configz: {
        '/pods': 403,
        '/runningpods/': 403,
        '/healthz': 403,
        '/configz': 200,
        '/stats/summary': 403,
        '/statusz': 403,
        '/flagz': 403,
      },
      // nodes/proxy still reaches everything the fine-grained subresources name (the fallback).
      proxy: {
        '/pods': 200,
        '/runningpods/': 200,
        '/healthz': 200,
        '/configz': 200,
        '/stats/summary': 403,
        '/statusz': 403,
        '/flagz': 403,
      },
      stats: {
        '/pods': 403,
        '/runningpods/': 403,
        '/healthz': 403,
        '/configz': 403,
        '/stats/summary': 200,
        '/statusz': 403,
        '/flagz': 403,
      },
      statusz: {
        '/pods': 403,
        '/runningpods/': 403,
        '/healthz': 403,
        '/configz': 403,
        '/stats/summary': 403,
        '/statusz': 200,
        '/flagz': 403,
      },
      flagz: {
        '/pods': 403,
        '/runningpods/': 403,
        '/healthz': 403,
        '/configz': 403,
        '/stats/summary': 403,
        '/statusz': 403,
        '/flagz': 200,
      },
    });
    // The structured z-pages (config.k8s.io Statusz / Flagz) to an Accept that names them; plain JSON is refused.
    const structuredStatusz = await get(
      'statusz-token',
      '/statusz',
      'application/json;v=v1beta1;g=config.k8s.io;as=Statusz',
    );
    expect(structuredStatusz.type).toMatch(/^application\/json/);
    expect(JSON.parse(structuredStatusz.body)).toMatchObject({
      kind: 'Statusz',
      apiVersion: 'config.k8s.io/v1beta1',
      metadata: { name: 'kubelet' },
      binaryVersion: '1.36.2',
      emulationVersion: '1.36',
      uptimeSeconds: expect.any(Number),
      paths: expect.arrayContaining(['/pods', '/stats', '/statusz']),
    });
    const structuredFlagz = await get('flagz-token', '/flagz', 'application/json;v=v1alpha1;g=config.k8s.io;as=Flagz');
    expect(JSON.parse(structuredFlagz.body)).toMatchObject({
      kind: 'Flagz',
      apiVersion: 'config.k8s.io/v1alpha1',
      flags: { 'node-ip': '127.0.0.1' },
    });
    expect((await get('statusz-token', '/statusz', 'application/json')).status).toBe(406);
    // The 403 names every subresource asked, as Go prints the list.
    expect((await get('stats-token', '/pods')).body).toBe(
      `Forbidden (user=only-stats, verb=get, resource=nodes, subresource(s)=[pods proxy])\n`,
    );
    expect((await get('stats-token', '/configz')).body).toContain('subresource(s)=[configz proxy])');
    const statusz = (await get('statusz-token', '/statusz')).body;
    expect(statusz).toMatch(/^\nkubelet statusz\nWarning: This endpoint is not meant to be machine parseable/);
    expect(statusz).toMatch(/^Binary version(:|: |=| ) 1\.36\.2$/m);
    expect(statusz).toMatch(/^Paths(:|: |=| ) .*\/pods .*\/statusz/m);
    const flagz = (await get('flagz-token', '/flagz')).body;
    expect(flagz).toMatch(/^\nkubelet flags\n/);
    expect(flagz).toMatch(new RegExp(`^hostname-override(:|: |=| )${node}$`, 'm'));
    expect(flagz).toMatch(/^max-pods(:|: |=| )110$/m);
  });
});

describe('pods from the apiserver', () => {
  it('runs a bound pod; its status reaches Running with podIP and containerStatuses; kubectl shows it', async () => {
    create(boundPod('web', node));
    await until(() => running('web'), 20_000, 'web Running');
    const p = pod('web')!;
    expect(p.status.podIP).toBe('127.0.0.1');
    expect(p.status.containerStatuses[0]).toMatchObject({
      name: 'main',
      ready: true,
      restartCount: 0,
      containerID: expect.stringMatching(/:\/\//),
    });
    expect(p.status.conditions.find((k: Obj) => k.type === 'Ready').status).toBe('True');
    const statusPatch = c.api.requests.find(
      (r) => r.method === 'PATCH' && r.path === '/api/v1/namespaces/default/pods/web/status',
    )!;
    expect(statusPatch.contentType).toBe('application/strategic-merge-patch+json');
    expect(statusPatch.body!.metadata.uid).toBe(p.metadata.uid);
    const out = await kubectl(c, ['get', 'pods', '-o', 'wide']);
    expect(out.stderr).toBe('');
    expect(out.stdout).toMatch(new RegExp(`^web\\s+1/1\\s+Running\\s+0\\s+\\S+\\s+127\\.0\\.0\\.1\\s+${node}`, 'm'));
    const reasons = await until(
      () => {
        const r = c.api.store
          .list('events')
          .filter((e) => e.involvedObject.name === 'web')
          .map((e) => e.reason);
        return r.includes('Started') && r;
      },
      10_000,
      'pod events',
    );
    expect(reasons).toEqual(expect.arrayContaining(['Pulled', 'Created', 'Started']));
    // The pod startup SLI, as upstream's tracker: its klog line (the watch saw it running) and both histograms.
    const line = await until(
      () =>
        c.kubelet
          .output()
          .split('\n')
          .find((l) => l.includes('"Observed pod startup duration" pod="default/web"')),
      10_000,
      'startup line',
    );
    expect(line).toMatch(
      /^I\d{4} [\d:.]+ +\d+ kubelet:0\] "Observed pod startup duration" pod="default\/web" podStartSLOduration=[\d.]+ podStartE2EDuration="[\dmsµ.]+" totalImagesPullingTime="[\dmsµ.]+" totalInitContainerRuntime="0s" isStatefulPod=false podCreationTimestamp="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC"/,
    );
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    expect(Number(/^kubelet_pod_start_sli_duration_seconds_count (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(
      1,
    );
    expect(Number(/^kubelet_pod_start_total_duration_seconds_count (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(
      1,
    );
    // The first stateless pod off the host network: its SLI apart (upstream's INTERNAL gauge).
    expect(Number(/^kubelet_first_network_pod_start_sli_duration_seconds (\S+)$/m.exec(metrics)?.[1])).toBeGreaterThan(
      0,
    );
    // Each status write that reached the apiserver, timed from the change it carried.
    expect(Number(/^kubelet_pod_status_sync_duration_seconds_count (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(
      1,
    );
    const started = c.api.store.list('events').find((e) => e.involvedObject.name === 'web' && e.reason === 'Started')!;
    expect(started).toMatchObject({
      source: { component: 'kubelet', host: node },
      involvedObject: { kind: 'Pod', fieldPath: 'spec.containers{main}', uid: p.metadata.uid },
    });
  });

  it('reports the generation it observed: status and conditions follow a spec update (PodObservedGenerationTracking)', async () => {
    await until(() => running('web'), 20_000, 'web Running');
    const first = await until(() => pod('web')!.status.observedGeneration === 1 && pod('web')!, 10_000, 'generation 1');
    expect(first.metadata.generation).toBe(1);
    expect(first.status.conditions.every((k: Obj) => k.observedGeneration === 1)).toBe(true);
    await kubectl(c, ['patch', 'pod', 'web', '-p', '{"spec":{"activeDeadlineSeconds":36000}}']);
    expect(pod('web')!.metadata.generation).toBe(2);
    const second = await until(
      () => pod('web')!.status.observedGeneration === 2 && pod('web')!,
      10_000,
      'generation 2',
    );
    expect(second.status.conditions.map((k: Obj) => k.observedGeneration)).toEqual(
      second.status.conditions.map(() => 2),
    );
    expect(second.status.phase).toBe('Running');
  });

  it('restarts a container of a Never pod when its restart rule matches the exit code, then the pod Succeeds (ContainerRestartRules)', async () => {
    create(
      boundPod('retry-on-42', node, {
        restartPolicy: 'Never',
        volumes: [{ name: 'marks', emptyDir: {} }],
        containers: [
          {
            name: 'main',
            image: 'busybox',
            // The first run exits 42 (a retryable failure), the second 0.
            command: ['sh', '-c', 'if [ -f /marks/ran ]; then exit 0; fi; touch /marks/ran; exit 42'],
            volumeMounts: [{ name: 'marks', mountPath: '/marks' }],
            restartPolicy: 'Never',
            restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }],
          },
        ],
      }),
    );
    // Says where it stood if it never gets there (a CI run once timed out here, not reproduced since).
    const done = await until(
      () => pod('retry-on-42')?.status?.phase === 'Succeeded' && pod('retry-on-42')!,
      50_000,
      'retry-on-42 Succeeded',
    ).catch((err: Error) => {
      const events = c.api.store
        .list('events')
        .filter((e) => e.involvedObject.name === 'retry-on-42')
        .map((e) => `${e.reason}: ${e.message}`);
      const p = pod('retry-on-42');
      throw new Error(
        `${err.message}; status ${JSON.stringify(p?.status)}; events ${events.join(' | ')}; log ${p ? logOf(p) : ''}`,
      );
    });
    expect(done.status.containerStatuses[0]).toMatchObject({
      restartCount: 1,
      state: { terminated: { exitCode: 0 } },
    });
  }, 60_000);

  it('restarts every container, init containers first, when a rule says RestartAllContainers (RestartAllContainersOnContainerExits)', async () => {
    create(
      boundPod('restart-all', node, {
        restartPolicy: 'Never',
        volumes: [{ name: 'runs', emptyDir: {} }],
        initContainers: [
          {
            name: 'count',
            image: 'busybox',
            command: ['sh', '-c', 'echo run >> /runs/count'],
            volumeMounts: [{ name: 'runs', mountPath: '/runs' }],
          },
        ],
        containers: [
          {
            name: 'main',
            image: 'busybox',
            // The first run asks for a restart of all containers; after the init container ran again, it succeeds.
            command: ['sh', '-c', '[ "$(wc -l < /runs/count)" -ge 2 ] && exit 0; exit 42'],
            volumeMounts: [{ name: 'runs', mountPath: '/runs' }],
            restartPolicy: 'Never',
            restartPolicyRules: [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [42] } }],
          },
        ],
      }),
    );
    const done = await until(
      () => pod('restart-all')?.status?.phase === 'Succeeded' && pod('restart-all')!,
      30_000,
      'restart-all Succeeded',
    );
    expect(done.status.initContainerStatuses[0].restartCount).toBe(1);
    expect(done.status.containerStatuses[0]).toMatchObject({ restartCount: 1, state: { terminated: { exitCode: 0 } } });
    // Each restarted container's last termination is the run before the restart (upstream v1.36, #136964).
    expect(done.status.containerStatuses[0].lastState).toMatchObject({ terminated: { exitCode: 42, reason: 'Error' } });
    expect(done.status.initContainerStatuses[0].lastState).toMatchObject({
      terminated: { exitCode: 0, reason: 'Completed' },
    });
    expect(done.status.conditions.find((k: Obj) => k.type === 'AllContainersRestarting')).toMatchObject({
      status: 'False',
      reason: 'PodCompleted',
    });
  });

  it('resizes a running container in place (kubectl patch --subresource resize): new CPU limit in its cgroup, no restart; an infeasible resize is pending', async () => {
    create(
      boundPod('resizable', node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
          },
        ],
      }),
    );
    await until(() => running('resizable'), 20_000, 'resizable Running');
    const before = pod('resizable')!.status.containerStatuses[0];
    expect(before.allocatedResources).toEqual({ cpu: '100m', memory: '32Mi' });
    const id = before.containerID.replace(/^[a-z]+:\/\//, '');
    const quota = () => {
      const found = findCgroupDir('/sys/fs/cgroup/cpu', id);
      return found ? readFileSync(join(found, 'cpu.cfs_quota_us'), 'utf8').trim() : '';
    };
    if (process.getuid?.() === 0) expect(quota()).toBe('20000');
    const patch = (cpuRequest: string, cpuLimit: string) =>
      resizePod(c, 'resizable', {
        spec: {
          containers: [
            {
              name: 'main',
              resources: { requests: { cpu: cpuRequest, memory: '32Mi' }, limits: { cpu: cpuLimit, memory: '64Mi' } },
            },
          ],
        },
      });
    await patch('150m', '400m');
    const resized = await until(
      () => {
        const st = pod('resizable')!.status.containerStatuses[0];
        return st.resources?.limits?.cpu === '400m' && st;
      },
      20_000,
      'the new limit applied',
    );
    expect(resized).toMatchObject({
      restartCount: 0,
      containerID: before.containerID,
      allocatedResources: { cpu: '150m' },
    });
    if (process.getuid?.() === 0) expect(quota()).toBe('40000');
    expect(pod('resizable')!.status.conditions.map((k: Obj) => k.type)).not.toContain('PodResizeInProgress');
    // The resize as upstream tells it: ResizeStarted, then ResizeCompleted, with the pod's resources and generation.
    const resizeEvents = await until(
      () => {
        const found = c.api.store
          .list('events')
          .filter((e) => e.involvedObject.name === 'resizable' && String(e.reason).startsWith('Resize'));
        return found.length >= 2 && found;
      },
      10_000,
      'the resize events',
    );
    expect(resizeEvents.map((e) => `${e.type} ${e.reason}`)).toEqual([
      'Normal ResizeStarted',
      'Normal ResizeCompleted',
    ]);
    expect(resizeEvents[1].message).toMatch(
      /^Pod resize completed: \{"containers":\[\{"name":"main","resources":\{"limits":\{"cpu":"400m"[^}]*\},"requests":\{"cpu":"150m"[^}]*\}\}\}\],"generation":\d+\}$/,
    );
    // More CPU than the node has: Infeasible, the allocation unchanged.
    await patch('1000', '1000');
    const pending = await until(
      () => pod('resizable')!.status.conditions.find((k: Obj) => k.type === 'PodResizePending'),
      20_000,
      'PodResizePending',
    );
    expect(pending).toMatchObject({ status: 'True', reason: 'Infeasible' });
    expect(pending.message).toMatch(/^Node didn't have enough capacity: cpu, requested: 1000000, capacity: \d+$/);
    expect(pod('resizable')!.status.containerStatuses[0].allocatedResources).toMatchObject({ cpu: '150m' });
    // The node admits a new pod against what the resizable pod holds (150m), not what it asks (regression: its
    // infeasible 1000 CPUs were counted, and every pod was rejected OutOfcpu).
    create(
      boundPod('after-infeasible', node, {
        containers: [
          { name: 'main', image: 'busybox', command: ['sleep', '3600'], resources: { requests: { cpu: '100m' } } },
        ],
      }),
    );
    await until(() => running('after-infeasible'), 20_000, 'after-infeasible Running');
    await kubectl(c, ['delete', 'pod', 'resizable', 'after-infeasible', '--wait=false']);
  });

  it('resizes as each resizePolicy says: CPU down and memory up in place, a RestartContainer resource by a restart; a resize that does not fit now is Deferred until another pod ends', async () => {
    const resources = (cpu: string, memory: string) => ({ requests: { cpu, memory }, limits: { cpu, memory } });
    create(
      boundPod('policies', node, {
        containers: [
          { name: 'inplace', image: 'busybox', command: ['sleep', '3600'], resources: resources('400m', '64Mi') },
          {
            name: 'restarts',
            image: 'busybox',
            command: ['sleep', '3600'],
            resources: resources('100m', '64Mi'),
            resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }],
          },
        ],
      }),
    );
    await until(
      () => running('policies') && pod('policies')!.status.containerStatuses.every((s: Obj) => s.ready),
      20_000,
      'policies Running',
    );
    const statusOf = (name: string) => pod('policies')!.status.containerStatuses.find((s: Obj) => s.name === name);
    const cgroupFile = (containerID: string, controller: string, file: string) => {
      const id = containerID.replace(/^[a-z]+:\/\//, '');
      const found = findCgroupDir(`/sys/fs/cgroup/${controller}`, id);
      return found ? readFileSync(join(found, file), 'utf8').trim() : '';
    };
    const root = process.getuid?.() === 0;
    const before = { inplace: statusOf('inplace'), restarts: statusOf('restarts') };
    // CPU down and memory up at once: the pod cgroup's memory grows before the containers', its CPU shrinks after
    // theirs (regression: its CPU quota was lowered below a container's first, and the kernel refused it).
    await resizePod(c, 'policies', {
      spec: {
        containers: [
          { name: 'inplace', resources: resources('200m', '128Mi') },
          { name: 'restarts', resources: resources('100m', '128Mi') },
        ],
      },
    });
    const resized = await until(
      () =>
        statusOf('inplace').resources?.limits?.memory === '128Mi' &&
        statusOf('restarts').restartCount === 1 &&
        statusOf('restarts').state.running &&
        !pod('policies')!.status.conditions.some((k: Obj) => k.type === 'PodResizeInProgress') && {
          inplace: statusOf('inplace'),
          restarts: statusOf('restarts'),
        },
      30_000,
      'both containers resized',
    );
    // In place for the one, by a restart for the RestartContainer resource of the other.
    expect(resized.inplace).toMatchObject({ restartCount: 0, containerID: before.inplace.containerID });
    expect(resized.restarts.containerID).not.toBe(before.restarts.containerID);
    expect(resized.restarts.resources).toEqual(resources('100m', '128Mi'));
    if (root) {
      expect(cgroupFile(resized.inplace.containerID, 'cpu', 'cpu.cfs_quota_us')).toBe('20000');
      expect(cgroupFile(resized.inplace.containerID, 'memory', 'memory.limit_in_bytes')).toBe(String(128 * 2 ** 20));
      expect(cgroupFile(resized.restarts.containerID, 'memory', 'memory.limit_in_bytes')).toBe(String(128 * 2 ** 20));
    }
    const killing = c.api.store
      .list('events')
      .filter((e) => e.involvedObject.name === 'policies' && e.reason === 'Killing')
      .map((e) => e.message);
    expect(killing).toContain('Container restarts resize requires restart');
    // Deferred: room on the node, not next to another pod; accepted once that pod ends.
    const allocatable = milliCpu((c.api.store.get('nodes', '', node) as Obj).status.allocatable.cpu)!;
    create(
      boundPod('blocker', node, {
        containers: [
          { name: 'main', image: 'busybox', command: ['sleep', '3600'], resources: { requests: { cpu: '200m' } } },
        ],
      }),
    );
    await until(() => running('blocker'), 20_000, 'blocker Running');
    // With its other container's 100m the pod then asks for all but 50m of the node: never next to the blocker's 200m.
    const big = `${allocatable - 150}m`;
    await resizePod(c, 'policies', { spec: { containers: [{ name: 'inplace', resources: resources(big, '128Mi') }] } });
    const deferred = await until(
      () => pod('policies')!.status.conditions.find((k: Obj) => k.type === 'PodResizePending'),
      20_000,
      'PodResizePending',
    );
    expect(deferred).toMatchObject({ status: 'True', reason: 'Deferred' });
    expect(deferred.message).toMatch(
      new RegExp(
        `^Node didn't have enough resource: cpu, requested: ${allocatable - 50}, used: \\d+, capacity: ${allocatable}$`,
      ),
    );
    await kubectl(c, ['delete', 'pod', 'blocker', '--wait=false']);
    const accepted = await until(
      () =>
        statusOf('inplace').allocatedResources?.cpu === big &&
        !pod('policies')!.status.conditions.some((k: Obj) => k.type === 'PodResizePending') &&
        statusOf('inplace'),
      40_000,
      'the deferred resize accepted',
    );
    expect(accepted.restartCount).toBe(0);
    expect(
      c.api.store
        .list('events')
        .filter((e) => e.involvedObject.name === 'policies' && String(e.reason).startsWith('Resize'))
        .map((e) => e.reason),
    ).toEqual(expect.arrayContaining(['ResizeDeferred', 'ResizeStarted', 'ResizeCompleted']));
    // Gone before the next test: it holds nearly all of the node's CPU.
    await kubectl(c, ['delete', 'pod', 'policies', '--wait=false']);
    await until(() => !pod('policies'), 40_000, 'policies gone');
  }, 120_000);

  it("resizes a pod's own resources in place (spec.resources, InPlacePodLevelResourcesVerticalScaling): the sandbox's cgroup takes the new limits, no restart", async () => {
    create(
      boundPod('pod-level', node, {
        resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
        containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }],
      }),
    );
    await until(() => running('pod-level'), 20_000, 'pod-level Running');
    expect(pod('pod-level')!.status).toMatchObject({
      qosClass: 'Burstable',
      allocatedResources: { cpu: '100m', memory: '32Mi' },
      resources: { requests: { cpu: '100m', memory: '32Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
    });
    const containerID = pod('pod-level')!.status.containerStatuses[0].containerID;
    // The embedded runtime's pod cgroup: its sandbox's, the container's cgroup's parent.
    const podCgroup = (controller: string, file: string) => {
      const id = containerID.replace(/^[a-z]+:\/\//, '');
      const found = findCgroupDir(`/sys/fs/cgroup/${controller}`, id);
      return found ? readFileSync(join(dirname(found), file), 'utf8').trim() : '';
    };
    const root = process.getuid?.() === 0;
    if (root) {
      expect(podCgroup('cpu', 'cpu.cfs_quota_us')).toBe('20000');
      expect(podCgroup('memory', 'memory.limit_in_bytes')).toBe(String(64 * 2 ** 20));
    }
    await resizePod(c, 'pod-level', {
      spec: { resources: { requests: { cpu: '150m', memory: '32Mi' }, limits: { cpu: '400m', memory: '96Mi' } } },
    });
    const resized = await until(
      () => {
        const st = pod('pod-level')!.status;
        return st.resources?.limits?.cpu === '400m' && st;
      },
      20_000,
      'the new pod-level limit applied',
    );
    expect(resized).toMatchObject({
      allocatedResources: { cpu: '150m', memory: '32Mi' },
      resources: { requests: { cpu: '150m', memory: '32Mi' }, limits: { cpu: '400m', memory: '96Mi' } },
      containerStatuses: [{ restartCount: 0, containerID }],
    });
    expect(resized.conditions.map((k: Obj) => k.type)).not.toContain('PodResizeInProgress');
    if (root) {
      expect(podCgroup('cpu', 'cpu.cfs_quota_us')).toBe('40000');
      expect(podCgroup('memory', 'memory.limit_in_bytes')).toBe(String(96 * 2 ** 20));
    }
    await kubectl(c, ['delete', 'pod', 'pod-level', '--wait=false']);
  });

  it('gives a variable the value an init container wrote into an env file (env valueFrom.fileKeyRef, EnvFiles)', async () => {
    create(
      boundPod('env-file', node, {
        volumes: [{ name: 'config', emptyDir: {} }],
        initContainers: [
          {
            name: 'write',
            image: 'busybox',
            // It runs half a second: the startup SLI below leaves that out.
            command: [
              'sh',
              '-c',
              'sleep 0.5; printf "# written at start\\nGREETING=hello from init\\n" > /config/app.env',
            ],
            volumeMounts: [{ name: 'config', mountPath: '/config' }],
          },
        ],
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sh', '-c', 'echo "greeting=$GREETING"; sleep 3600'],
            env: [
              {
                name: 'GREETING',
                valueFrom: { fileKeyRef: { volumeName: 'config', path: 'app.env', key: 'GREETING' } },
              },
            ],
          },
        ],
      }),
    );
    await until(() => running('env-file'), 20_000, 'env-file Running');
    await until(() => logOf(pod('env-file')!).includes('greeting=hello from init'), 10_000, 'the variable in the log');
    // The pod startup SLI leaves the init container's run out: from its start to its exit, as the runtime dates it.
    const startup = await until(
      () =>
        c.kubelet
          .output()
          .split('\n')
          .find((l) => l.includes('"Observed pod startup duration" pod="default/env-file"')),
      10_000,
      'startup line',
    );
    expect(/totalInitContainerRuntime="([^"]+)"/.exec(startup)?.[1]).toMatch(/^[\d.]+(ms|s)$/);
    expect(startup).not.toContain('totalInitContainerRuntime="0s"');
  });

  it('kubectl delete pod: grace period honoured, containers stopped, final status, DELETE with UID precondition, object gone', async () => {
    create(
      boundPod('doomed', node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 0.1; done', 'doomed-marker-7f3'],
          },
        ],
      }),
    );
    await until(() => running('doomed'), 20_000, 'doomed Running');
    const uid = pod('doomed')!.metadata.uid;
    const out = await kubectl(c, ['delete', 'pod', 'doomed', '--timeout=30s']);
    expect(out.stdout).toContain('pod "doomed" deleted');
    expect(pod('doomed')).toBeUndefined();
    const del = c.api.requests.find(
      (r) =>
        r.method === 'DELETE' &&
        r.path === '/api/v1/namespaces/default/pods/doomed' &&
        r.user === `system:node:${node}`,
    )!;
    expect(del.body).toMatchObject({ gracePeriodSeconds: 0, preconditions: { uid } });
    // The statuses written before the DELETE: the container handled SIGTERM and exited 0, and the
    // last one, after its release, gives the pod's final phase.
    const patches = c.api.requests.filter(
      (r) => r.method === 'PATCH' && r.path === '/api/v1/namespaces/default/pods/doomed/status',
    );
    const stopped = patches.filter((r) => r.body!.status.containerStatuses).at(-1)!;
    expect(stopped.body!.status.containerStatuses[0].state.terminated).toMatchObject({
      exitCode: 0,
      reason: 'Completed',
    });
    expect(patches.at(-1)!.body!.status.phase).toBe('Succeeded');
    expect(c.api.requests.indexOf(patches.at(-1)!)).toBeLessThan(c.api.requests.indexOf(del));
    expect(countProcesses('doomed-marker-7f3')).toBe(0);
    const killing = c.api.store.list('events').find((e) => e.involvedObject.uid === uid && e.reason === 'Killing');
    expect(killing?.message).toBe('Stopping container main');
  });

  it('honours the grace period for a container that ignores SIGTERM; a force delete kills at once', async () => {
    create(
      boundPod('stubborn', node, {
        terminationGracePeriodSeconds: 3,
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sh', '-c', 'trap "" TERM; while true; do sleep 0.1; done', 'stubborn-marker-1c9'],
          },
        ],
      }),
    );
    create(
      boundPod('forced', node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sh', '-c', 'while true; do sleep 0.1; done', 'forced-marker-5e2'],
          },
        ],
      }),
    );
    await until(() => running('stubborn') && running('forced'), 20_000, 'pods Running');
    const t0 = Date.now();
    const out = await kubectl(c, ['delete', 'pod', 'stubborn', '--timeout=30s']);
    expect(out.stdout).toContain('deleted');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2500);
    expect(countProcesses('stubborn-marker-1c9')).toBe(0);
    // --force --grace-period=0 removes the object at once; the kubelet kills what the apiserver no longer knows.
    await kubectl(c, ['delete', 'pod', 'forced', '--force', '--grace-period=0']);
    expect(pod('forced')).toBeUndefined();
    await until(() => countProcesses('forced-marker-5e2') === 0, 10_000, 'forced pod killed');
  }, 40_000);

  it('never runs a pod the apiserver already reports as finished', async () => {
    create({
      ...boundPod('finished', node, {
        restartPolicy: 'Never',
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'sleep 30', 'finished-marker-9d4'] }],
      }),
      status: { phase: 'Succeeded' },
    });
    create(boundPod('probe-after', node));
    await until(() => running('probe-after'), 20_000, 'a later pod runs');
    expect(countProcesses('finished-marker-9d4')).toBe(0);
    // Its release ran (upstream SyncTerminatedPod for a terminal pod first seen): the phase stays.
    await until(() => pod('finished')?.status?.conditions, 10_000, 'final status written');
    expect(pod('finished')!.status.phase).toBe('Succeeded');
  });

  it("runs no sandbox for a pod whose RuntimeClass is missing or names a handler the runtime lacks: FailedCreatePodSandBox with upstream's message, tried again", async () => {
    create(
      boundPod('rc', node, {
        runtimeClassName: 'sandboxed',
        containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }],
      }),
    );
    const failures = () =>
      c.api.store
        .list('events')
        .filter((e) => e.involvedObject.name === 'rc' && e.reason === 'FailedCreatePodSandBox' && e.type === 'Warning')
        .map((e) => String(e.message));
    await until(
      () => failures().includes('Failed to create pod sandbox: runtimeclass.node.k8s.io "sandboxed" not found'),
      20_000,
      'missing class',
    );
    expect(pod('rc')!.status.containerStatuses[0].state.waiting.reason).toBe('ContainerCreating');
    // The class appears with a handler the embedded runtime does not have (it lists one, the default): the next try
    // reaches the runtime.
    create(
      { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'sandboxed' }, handler: 'runsc' },
      'node.k8s.io/runtimeclasses',
    );
    await until(
      () =>
        failures().some(
          (m) => m.startsWith('Failed to create pod sandbox:') && m.includes('no runtime for "runsc" is configured'),
        ),
      30_000,
      'handler refused',
    );
    expect(pod('rc')!.status.phase).toBe('Pending');
  });

  it('kubectl describe pod shows the kubelet events', async () => {
    const out = await kubectl(c, ['describe', 'pod', 'web']);
    expect(out.stdout).toMatch(/Events:[\s\S]*Normal\s+Started\s+\S+\s+kubelet\s+Started container main/);
  });

  it('builds env from ConfigMaps, Secrets, envFrom and service links; a missing ConfigMap is CreateContainerConfigError until it exists', async () => {
    create(
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'kubernetes', namespace: 'default' },
        spec: { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] },
      },
      'services',
    );
    create(
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'my-db', namespace: 'default' },
        spec: { clusterIP: '10.96.0.20', ports: [{ name: 'pg', port: 5432 }] },
      },
      'services',
    );
    create(
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'creds', namespace: 'default' },
        data: { password: Buffer.from('s3cret').toString('base64') },
      },
      'secrets',
    );
    create(
      boundPod('envpod', node, {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: [
              'sh',
              '-c',
              'echo "COLOR=$COLOR PASS=$PASS APP_MODE=$APP_mode URL=$URL DB=$MY_DB_SERVICE_HOST:$MY_DB_SERVICE_PORT_PG K=$KUBERNETES_SERVICE_HOST L=$MY_DB_PORT"',
            ],
            envFrom: [{ configMapRef: { name: 'settings' }, prefix: 'APP_' }],
            env: [
              { name: 'COLOR', valueFrom: { configMapKeyRef: { name: 'settings', key: 'color' } } },
              { name: 'PASS', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } },
              { name: 'URL', value: 'http://$(MY_DB_SERVICE_HOST):$(COLOR)' },
            ],
          },
        ],
      }),
    );
    // Past ContainerCreating, the state the status shows while the sandbox is made and the image looked for.
    const waiting = await until(
      () => {
        const state = pod('envpod')?.status?.containerStatuses?.[0]?.state?.waiting;
        return state?.reason !== 'ContainerCreating' && state;
      },
      20_000,
      'waiting status',
    );
    expect(waiting).toEqual({ reason: 'CreateContainerConfigError', message: 'configmap "settings" not found' });
    // kubectl describe shows why, as with upstream: a Warning "Failed" event with the same words.
    const failed = c.api.store.list('events').find((e) => e.involvedObject.name === 'envpod' && e.reason === 'Failed');
    expect([failed?.type, failed?.message, failed?.involvedObject.fieldPath]).toEqual([
      'Warning',
      'Error: configmap "settings" not found',
      'spec.containers{main}',
    ]);
    create(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'settings', namespace: 'default' },
        data: { color: 'blue', mode: 'fast' },
      },
      'configmaps',
    );
    await until(() => pod('envpod')?.status?.phase === 'Succeeded', 40_000, 'envpod Succeeded');
    expect(logOf(pod('envpod')!)).toContain(
      'COLOR=blue PASS=s3cret APP_MODE=fast URL=http://10.96.0.20:blue DB=10.96.0.20:5432 K=10.96.0.1 L=tcp://10.96.0.20:5432',
    );
  }, 60_000);
});

describe('ConfigMaps and Secrets kept by watches (configMapAndSecretChangeDetectionStrategy: Watch, the default)', () => {
  it('a ConfigMap volume follows its ConfigMap before the next sync period, read through a watch and never a GET', async () => {
    create(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'watched', namespace: 'default' },
        data: { color: 'blue' },
      },
      'configmaps',
    );
    create(
      boundPod('watched-cm', node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sh', '-c', 'while true; do echo "color=$(cat /etc/config/color)"; sleep 0.3; done'],
            volumeMounts: [{ name: 'config', mountPath: '/etc/config' }],
          },
        ],
        volumes: [{ name: 'config', configMap: { name: 'watched' } }],
      }),
    );
    await until(() => logOf(pod('watched-cm') ?? {}).includes('color=blue'), 20_000, 'configMap file read');
    const current = c.api.store.get('configmaps', 'default', 'watched')!;
    c.api.store.update('configmaps', { ...current, data: { color: 'green' } });
    // The sync period is a minute here: the watch's event syncs the pod at once.
    await until(() => logOf(pod('watched-cm')!).includes('color=green'), 20_000, 'update followed');
    const reads = c.api.requests.filter(
      (r) => r.method === 'GET' && r.path.startsWith('/api/v1/namespaces/default/configmaps'),
    );
    expect(reads.filter((r) => r.path.endsWith('/watched'))).toEqual([]);
    expect(reads.some((r) => r.query.fieldSelector === 'metadata.name=watched' && r.query.watch)).toBe(true);
    expect(pod('watched-cm')!.status.containerStatuses[0].restartCount).toBe(0);
  }, 60_000);
});

describe('deleted pods held by a finalizer (upstream test/e2e_node/deleted_pods_test.go)', () => {
  const FINALIZER = 'example.com/test-finalizer';
  const held = (name: string, spec: Obj) => create(boundPod(name, node, spec, { finalizers: [FINALIZER] }));
  const release = (name: string) =>
    kubectl(c, ['patch', 'pod', name, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  const phaseOf = (name: string) => pod(name)?.status?.phase;

  it('a pod deleted while pending ends Failed; one killed (non-zero exit) ends Failed, whatever its restart policy', async () => {
    held('deleted-pending', {
      containers: [
        {
          name: 'main',
          image: 'busybox',
          command: ['sleep', '3600'],
          env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'absent', key: 'k' } } }],
        },
      ],
    });
    for (const policy of ['Always', 'OnFailure', 'Never'])
      held(`deleted-running-${policy.toLowerCase()}`, {
        restartPolicy: policy,
        terminationGracePeriodSeconds: 1,
        // The marker is the shell's $0: `sleep 3600 marker` fails at once (an invalid interval).
        containers: [
          { name: 'main', image: 'busybox', command: ['sh', '-c', 'sleep 3600; :', `deleted-${policy}-marker`] },
        ],
      });
    const names = ['always', 'onfailure', 'never'].map((p) => `deleted-running-${p}`);
    // (generous bounds: on a loaded 2-core CI machine four pods can take seconds)
    await until(
      () => {
        if (pod('deleted-pending')?.status?.containerStatuses?.[0]?.state?.waiting && names.every(running)) return true;
        // what a timeout reports: each pod's phase and container state as last seen
        throw new Error(
          JSON.stringify(
            ['deleted-pending', ...names].map((n) => [
              n,
              pod(n)?.status?.phase,
              pod(n)?.status?.containerStatuses?.[0]?.state,
            ]),
          ),
        );
      },
      45_000,
      'pods pending and running',
    );
    for (const name of ['deleted-pending', ...names]) await kubectl(c, ['delete', 'pod', name, '--wait=false']);
    await until(() => ['deleted-pending', ...names].every((n) => phaseOf(n) === 'Failed'), 30_000, 'all Failed');
    for (const name of names) expect(pod(name)!.status.containerStatuses[0].state.terminated.exitCode).not.toBe(0);
    // After the final status, the kubelet's DELETE (grace 0): the finalizer alone holds each object.
    await until(
      () => ['deleted-pending', ...names].every((n) => pod(n)!.metadata.deletionGracePeriodSeconds === 0),
      10_000,
      'DELETEs',
    );
    expect(pod('deleted-pending')!.status.containerStatuses[0].state.terminated).toMatchObject({
      reason: 'ContainerStatusUnknown',
      exitCode: 137,
    });
    for (const name of ['deleted-pending', ...names]) await release(name);
    await until(() => ['deleted-pending', ...names].every((n) => !pod(n)), 10_000, 'objects gone with their finalizer');
    await until(
      () => ['Always', 'OnFailure', 'Never'].every((p) => countProcesses(`deleted-${p}-marker`) === 0),
      10_000,
      'processes gone',
    );
  }, 120_000);

  it('a pod whose secret volume cannot be mounted is deleted at once (upstream Terminate Pods: no hang on a missing volume)', async () => {
    create(
      boundPod('no-secret', node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            volumeMounts: [{ name: 'vol1', mountPath: '/mnt/vol1' }],
          },
        ],
        volumes: [{ name: 'vol1', secret: { secretName: 'non-existent-5f1c' } }],
      }),
    );
    await until(
      () =>
        pod('no-secret')?.status?.conditions?.some((x: Obj) => x.type === 'ContainersReady' && x.status === 'False'),
      20_000,
      'ContainersReady False',
    );
    await kubectl(c, ['delete', 'pod', 'no-secret', '--wait=false']);
    await until(() => !pod('no-secret'), 10_000, 'pod gone');
  });

  it('a pod whose containers exit 0 on SIGTERM ends Succeeded, and its emptyDir is unmounted and gone before that status is written', async () => {
    held('deleted-volume', {
      containers: [
        {
          name: 'main',
          image: 'busybox',
          command: [
            'sh',
            '-c',
            'trap "exit 0" TERM; echo HelloWorld >> /data/myfile; while true; do sleep 0.1; done',
            'deleted-volume-marker',
          ],
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
      volumes: [{ name: 'data', emptyDir: {} }],
    });
    await until(() => running('deleted-volume'), 20_000, 'deleted-volume Running');
    const uid = pod('deleted-volume')!.metadata.uid;
    const volumeDir = join(dir, 'root', 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'data');
    expect(existsSync(volumeDir)).toBe(true);
    // What a watcher sees at the moment the phase turns Succeeded (the e2e test's watch).
    const seen: { phase: string; volumeThere: boolean }[] = [];
    const stop = c.api.store.watch(
      'pods',
      0,
      (o) => o.metadata.name === 'deleted-volume',
      (e) => {
        const phase = e.object.status?.phase;
        if (phase === 'Succeeded' && !seen.length) seen.push({ phase, volumeThere: existsSync(volumeDir) });
      },
    );
    try {
      await kubectl(c, ['delete', 'pod', 'deleted-volume', '--wait=false']);
      await until(() => seen.length, 20_000, 'Succeeded seen');
    } finally {
      stop();
    }
    expect(seen).toEqual([{ phase: 'Succeeded', volumeThere: false }]);
    expect(pod('deleted-volume')!.status.containerStatuses[0].state.terminated).toMatchObject({ exitCode: 0 });
    await release('deleted-volume');
    await until(
      () => !pod('deleted-volume') && !existsSync(join(dir, 'root', 'pods', uid)),
      10_000,
      'object and pod directory gone',
    );
  }, 40_000);
});

describe('admission', () => {
  it('rejects pods that do not fit with phase Failed and the upstream reason', async () => {
    create(
      boundPod('greedy', node, {
        containers: [
          { name: 'main', image: 'busybox', command: ['sleep', '1'], resources: { requests: { cpu: '1000' } } },
        ],
      }),
    );
    create(boundPod('elsewhere', node, { nodeSelector: { tier: 'prod' } }));
    const greedy = await until(
      () => pod('greedy')?.status?.phase === 'Failed' && pod('greedy')!.status,
      15_000,
      'greedy rejected',
    );
    expect(greedy.reason).toBe('OutOfcpu');
    expect(greedy.message).toMatch(
      /^Pod was rejected: Node didn't have enough resource: cpu, requested: 1000000, used: \d+, capacity: \d+$/,
    );
    const other = await until(
      () => pod('elsewhere')?.status?.phase === 'Failed' && pod('elsewhere')!.status,
      15_000,
      'elsewhere rejected',
    );
    expect(other).toMatchObject({
      reason: 'NodeAffinity',
      message: "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    });
    // A host port an admitted pod holds (upstream's NodePorts predicate).
    const withHostPort = (name: string) =>
      boundPod(name, node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            ports: [{ containerPort: 80, hostPort: 18080 }],
          },
        ],
      });
    create(withHostPort('port-holder'));
    await until(() => running('port-holder'), 15_000, 'port-holder Running');
    create(withHostPort('port-taker'));
    const taker = await until(
      () => pod('port-taker')?.status?.phase === 'Failed' && pod('port-taker')!.status,
      15_000,
      'port-taker rejected',
    );
    expect(taker).toMatchObject({
      reason: 'NodePorts',
      message:
        "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
    });
    await kubectl(c, ['delete', 'pod', 'port-holder', 'port-taker', '--wait=false']);
    expect(
      c.api.store
        .list('events')
        .some((e) => e.involvedObject.name === 'greedy' && e.reason === 'OutOfcpu' && e.type === 'Warning'),
    ).toBe(true);
    // A rejected pod deleted by the user goes away at once (no containers to wait for).
    await kubectl(c, ['delete', 'pod', 'greedy', '--timeout=20s']);
    expect(pod('greedy')).toBeUndefined();
  });

  it('counts a pod that is still stopping: its cpu is not free until its containers are gone (upstream active pods)', async () => {
    const share = `${Math.floor(milliCpu(c.api.store.get('nodes', '', node)!.status.allocatable.cpu)! * 0.6)}m`;
    const hungry = (name: string, marker: string) =>
      boundPod(name, node, {
        terminationGracePeriodSeconds: 4,
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sh', '-c', "trap '' TERM; while true; do sleep 0.1; done", marker],
            resources: { requests: { cpu: share } },
          },
        ],
      });
    create(hungry('cpu-holder', 'cpu-holder-marker'));
    await until(() => running('cpu-holder'), 15_000, 'cpu-holder Running');
    await kubectl(c, ['delete', 'pod', 'cpu-holder', '--wait=false']);
    await until(() => pod('cpu-holder')?.metadata.deletionTimestamp, 5_000, 'cpu-holder being deleted');
    create(hungry('cpu-wanter', 'cpu-wanter-marker'));
    const refused = await until(
      () => pod('cpu-wanter')?.status?.phase === 'Failed' && pod('cpu-wanter')!.status,
      15_000,
      'cpu-wanter rejected',
    );
    expect(refused.reason).toBe('OutOfcpu');
    expect(countProcesses('cpu-holder-marker')).toBeGreaterThan(0);
    await until(() => !pod('cpu-holder'), 20_000, 'cpu-holder gone');
    await kubectl(c, ['delete', 'pod', 'cpu-wanter', '--wait=false']);
  }, 40_000);

  it('an extended resource an operator advertises (kubectl patch node --subresource=status) becomes allocatable and is admitted against; a cluster-level one is not checked', async () => {
    const patched = await kubectl(c, [
      'patch',
      'node',
      node,
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"capacity":{"example.com/dongle":"4"}}}',
    ]);
    expect(patched.code).toBe(0);
    const n = await until(
      () =>
        c.api.store.get('nodes', '', node)?.status?.allocatable?.['example.com/dongle'] === '4' &&
        c.api.store.get('nodes', '', node)!,
      15_000,
      'dongle allocatable',
    );
    expect(n.status.capacity['example.com/dongle']).toBe('4');
    expect(n.status.capacity.cpu).toBeDefined();
    const dongles = (name: string, count: string, resource = 'example.com/dongle') =>
      boundPod(name, node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            resources: { requests: { [resource]: count }, limits: { [resource]: count } },
          },
        ],
      });
    create(dongles('three-dongles', '3'));
    await until(() => running('three-dongles'), 15_000, 'three-dongles Running');
    create(dongles('two-dongles', '2'));
    const refused = await until(
      () => pod('two-dongles')?.status?.phase === 'Failed' && pod('two-dongles')!.status,
      15_000,
      'two-dongles rejected',
    );
    expect(refused.reason).toBe('OutOfexample.com/dongle');
    expect(refused.message).toBe(
      "Pod was rejected: Node didn't have enough resource: example.com/dongle, requested: 2, used: 3, capacity: 4",
    );
    // Not advertised by the node: a cluster-level resource, left to the scheduler (upstream
    // removeMissingExtendedResources).
    create(dongles('cluster-level', '1', 'example.com/license'));
    await until(() => running('cluster-level'), 15_000, 'cluster-level Running');
    // The kubelet's next status reports keep the operator's resource.
    await new Promise((r) => setTimeout(r, 2500));
    expect(c.api.store.get('nodes', '', node)!.status.capacity['example.com/dongle']).toBe('4');
    for (const name of ['three-dongles', 'two-dongles', 'cluster-level'])
      await kubectl(c, ['delete', 'pod', name, '--wait=false']);
    await until(() => !pod('three-dongles') && !pod('cluster-level'), 20_000, 'pods gone');
  }, 60_000);

  it('admits huge pages against the node’s own pools (upstream: OutOfhugepages-2Mi beyond them)', async () => {
    // More than this machine's 2Mi pool holds (none on these machines; the test leaves the host's pools alone).
    const pool = 2 * 2 ** 20 * Number(readFileSync('/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages', 'utf8'));
    const want = pool + 4 * 2 ** 20;
    create(
      boundPod('huge-wanter', node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            resources: {
              requests: { 'hugepages-2Mi': String(want), memory: '8Mi' },
              limits: { 'hugepages-2Mi': String(want), memory: '8Mi' },
            },
          },
        ],
      }),
    );
    const refused = await until(
      () => pod('huge-wanter')?.status?.phase === 'Failed' && pod('huge-wanter')!.status,
      15_000,
      'huge-wanter rejected',
    );
    expect(refused).toMatchObject({
      reason: 'OutOfhugepages-2Mi',
      message: `Pod was rejected: Node didn't have enough resource: hugepages-2Mi, requested: ${want}, used: 0, capacity: ${pool}`,
    });
    await kubectl(c, ['delete', 'pod', 'huge-wanter', '--wait=false']);
  });

  it("admits against the Node the apiserver has: a label an operator adds counts, and so does a NoExecute taint (upstream's node informer)", async () => {
    await kubectl(c, ['label', 'node', node, 'disktype=ssd']);
    await kubectl(c, ['taint', 'node', node, 'quarantine=yes:NoExecute']);
    await until(
      () => c.api.store.get('nodes', '', node)!.spec?.taints?.some((t: Obj) => t.key === 'quarantine'),
      5_000,
      'taint stored',
    );
    // The kubelet's watch of its Node delivers the change.
    await new Promise((r) => setTimeout(r, 500));
    const tolerant = { tolerations: [{ key: 'quarantine', operator: 'Exists', effect: 'NoExecute' }] };
    create(boundPod('on-ssd', node, { nodeSelector: { disktype: 'ssd' }, ...tolerant }));
    create(boundPod('intolerant', node));
    await until(() => running('on-ssd'), 15_000, 'on-ssd Running');
    const refused = await until(
      () => pod('intolerant')?.status?.phase === 'Failed' && pod('intolerant')!.status,
      15_000,
      'intolerant rejected',
    );
    expect(refused).toMatchObject({
      reason: 'TaintToleration',
      message: "Pod was rejected: Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
    });
    await kubectl(c, ['taint', 'node', node, 'quarantine=yes:NoExecute-']);
    await kubectl(c, ['delete', 'pod', 'on-ssd', 'intolerant', '--wait=false']);
  });

  it('admits a pod on a label its Node watch has not brought yet: a node affinity refusal reads the Node again (upstream v1.35+)', async () => {
    // The kubelet's watch of its Node lags: the label reaches the apiserver, and the scheduler, but not the kubelet.
    c.api.stallWatches(true, 'nodes');
    try {
      expect((await kubectl(c, ['label', 'node', node, 'freshness=new'])).code).toBe(0);
      create(boundPod('on-fresh-label', node, { nodeSelector: { freshness: 'new' } }));
      await until(() => running('on-fresh-label'), 15_000, 'on-fresh-label Running');
    } finally {
      c.api.stallWatches(false, 'nodes');
    }
    expect(pod('on-fresh-label')!.status.reason).toBeUndefined();
    await kubectl(c, ['label', 'node', node, 'freshness-']);
    await kubectl(c, ['delete', 'pod', 'on-fresh-label', '--wait=false']);
  });
});

describe('device plugins (deviceplugin/v1beta1)', () => {
  it('advertise their devices, give a pod one with the env, mount and device the plugin answers, refuse a pod asking too many, and follow health', async () => {
    const pluginDir = join(dir, 'root', 'device-plugins');
    const share = join(dir, 'widget-share');
    mkdirSync(share, { recursive: true });
    writeFileSync(join(share, 'marker'), 'widget-data\n');
    const plugin = await startSamplePlugin({
      dir: pluginDir,
      name: 'widget',
      resource: 'example.com/widget',
      devices: ['w0', 'w1'],
      mountHostPath: share,
      deviceHostPath: '/dev/null',
    });
    try {
      const widgets = () => {
        const st = c.api.store.get('nodes', '', node)!.status;
        return [st.capacity['example.com/widget'], st.allocatable['example.com/widget']];
      };
      await until(() => widgets()[0] === '2' && widgets()[1] === '2', 20_000, 'node capacity with the widgets');
      const asking = (name: string, n: number) =>
        boundPod(name, node, {
          containers: [
            {
              name: 'main',
              image: 'busybox',
              command: ['sh', '-c', 'echo "ids=$WIDGET_IDS"; cat /widget/marker; sleep 3600'],
              resources: { limits: { 'example.com/widget': String(n) }, requests: { 'example.com/widget': String(n) } },
            },
          ],
        });
      create(asking('one-widget', 1));
      await until(() => running('one-widget'), 20_000, 'one-widget Running');
      await until(
        () => /stdout F ids=w0\n.*stdout F widget-data\n/.test(logOf(pod('one-widget')!)),
        10_000,
        'the env and the mount in the container',
      );
      expect(plugin.allocations).toEqual([['w0']]);
      create(asking('three-widgets', 3));
      const refused = await until(
        () => pod('three-widgets')?.status?.phase === 'Failed' && pod('three-widgets')!,
        20_000,
        'refused',
      );
      expect(refused.status).toMatchObject({
        reason: 'UnexpectedAdmissionError',
        message:
          'Pod was rejected: Allocate failed due to requested number of devices unavailable for example.com/widget. Requested: 3, Available: 1, which is unexpected',
      });
      // pod-resources names the device the pod holds.
      const { client, call } = await podResourcesClient(join(dir, 'root'));
      try {
        const got = await call<{ pod_resources: { containers: { devices: unknown[] }[] } }>('Get', {
          pod_name: 'one-widget',
          pod_namespace: 'default',
        });
        expect(got.pod_resources.containers[0].devices).toEqual([
          { resource_name: 'example.com/widget', device_ids: ['w0'], topology: null },
        ]);
        // The allocatable devices: every healthy one, one entry each (upstream without topology).
        const allocatable = await call<{ devices: unknown[] }>('GetAllocatableResources', {});
        expect(allocatable.devices).toEqual([
          { resource_name: 'example.com/widget', device_ids: ['w0'], topology: null },
          { resource_name: 'example.com/widget', device_ids: ['w1'], topology: null },
        ]);
      } finally {
        client.close();
      }
      expect(pod('one-widget')!.status.containerStatuses[0].allocatedResourcesStatus).toEqual([
        { name: 'example.com/widget', resources: [{ resourceID: 'w0', health: 'Healthy' }] },
      ]);
      // A kubelet restart keeps the pod's device and the plugin's answer (the checkpoint); the plugin registers again.
      const checkpoint = JSON.parse(readFileSync(join(pluginDir, 'kubelet_internal_checkpoint'), 'utf8'));
      expect(checkpoint.Data.PodDeviceEntries).toEqual([
        expect.objectContaining({
          ContainerName: 'main',
          ResourceName: 'example.com/widget',
          DeviceIDs: { '-1': ['w0'] },
        }),
      ]);
      let nodeBeforeStart = '';
      await c.restartKubelet(() => {
        nodeBeforeStart = c.api.store.get('nodes', '', node)!.metadata.resourceVersion;
      });
      // As plugins do when kubelet.sock is made anew: register again.
      await until(
        () =>
          plugin.register().then(
            () => true,
            () => false,
          ),
        20_000,
        'the plugin registered again',
      );
      // Admission reads the Node as the apiserver has it, as upstream's. The restarted kubelet has no
      // widgets until the plugin's ListAndWatch answers (upstream's checkpoint restore) and may report
      // none first: wait for its own report of both.
      await until(
        () => c.api.store.get('nodes', '', node)!.metadata.resourceVersion !== nodeBeforeStart && widgets()[1] === '2',
        20_000,
        'the widgets usable again',
      );
      create(asking('another-widget', 1));
      await until(() => running('another-widget'), 20_000, 'another-widget Running');
      await until(() => /stdout F ids=w1\n/.test(logOf(pod('another-widget')!)), 10_000, 'the other widget');
      await until(() => running('one-widget'), 20_000, 'one-widget Running after the restart');
      // The pod kept w0, and its answer came from the checkpoint: Allocate was asked for w1 only.
      expect(plugin.allocations).toEqual([['w0'], ['w1']]);
      await kubectl(c, ['delete', 'pod', 'another-widget', '--wait=false']);
      plugin.setHealth('w1', 'Unhealthy');
      await until(() => widgets()[0] === '2' && widgets()[1] === '1', 20_000, 'one widget unhealthy');
      // The health of a device a pod holds reaches its status (ResourceHealthStatus).
      plugin.setHealth('w0', 'Unhealthy');
      await until(
        () =>
          pod('one-widget')!.status.containerStatuses[0].allocatedResourcesStatus?.[0]?.resources?.[0]?.health ===
          'Unhealthy',
        20_000,
        'allocatedResourcesStatus Unhealthy',
      );
      await kubectl(c, ['delete', 'pod', 'one-widget', 'three-widgets', '--wait=false']);
    } finally {
      await plugin.close();
    }
  });

  it('are taken on the NUMA node the topology manager chose (topologyManagerPolicy best-effort)', async () => {
    // g0 on NUMA node 1, which this machine may not have; g1 on node 0, which every machine has.
    const plugin = await startSamplePlugin({
      dir: join(dir, 'root', 'device-plugins'),
      name: 'gadget',
      resource: 'example.com/gadget',
      devices: ['g0', 'g1'],
      numa: { g0: [1], g1: [0] },
      mountHostPath: dir,
      deviceHostPath: '/dev/null',
    });
    try {
      await until(
        () => c.api.store.get('nodes', '', node)!.status.allocatable['example.com/gadget'] === '2',
        20_000,
        'node allocatable with the gadgets',
      );
      create(
        boundPod('gadget-user', node, {
          containers: [
            {
              name: 'main',
              image: 'busybox',
              command: ['sh', '-c', 'echo "ids=$WIDGET_IDS"; sleep 3600'],
              resources: { limits: { 'example.com/gadget': '1' }, requests: { 'example.com/gadget': '1' } },
            },
          ],
        }),
      );
      await until(() => running('gadget-user'), 20_000, 'gadget-user Running');
      // ID order alone would give g0; node 0 is the narrowest NUMA node with a gadget.
      expect(plugin.allocations).toEqual([['g1']]);
      await until(() => /stdout F ids=g1\n/.test(logOf(pod('gadget-user')!)), 10_000, 'g1 in the container');
      // pod-resources and the checkpoint name the device's NUMA node, as upstream's DevicesPerNUMA.
      const { client, call } = await podResourcesClient(join(dir, 'root'));
      try {
        const got = await call<{ pod_resources: { containers: { devices: unknown[] }[] } }>('Get', {
          pod_name: 'gadget-user',
          pod_namespace: 'default',
        });
        expect(got.pod_resources.containers[0].devices).toEqual([
          { resource_name: 'example.com/gadget', device_ids: ['g1'], topology: { nodes: [{ ID: 0 }] } },
        ]);
        const allocatable = await call<{ devices: { resource_name: string }[] }>('GetAllocatableResources', {});
        expect(allocatable.devices.filter((d) => d.resource_name === 'example.com/gadget')).toEqual([
          { resource_name: 'example.com/gadget', device_ids: ['g0'], topology: { nodes: [{ ID: 1 }] } },
          { resource_name: 'example.com/gadget', device_ids: ['g1'], topology: { nodes: [{ ID: 0 }] } },
        ]);
      } finally {
        client.close();
      }
      const checkpoint = JSON.parse(
        readFileSync(join(dir, 'root', 'device-plugins', 'kubelet_internal_checkpoint'), 'utf8'),
      );
      expect(
        checkpoint.Data.PodDeviceEntries.find((e: Obj) => e.ResourceName === 'example.com/gadget').DeviceIDs,
      ).toEqual({ '0': ['g1'] });
      await kubectl(c, ['delete', 'pod', 'gadget-user', '--wait=false']);
    } finally {
      await plugin.close();
    }
  });
});

/**
 * A ResourceClaim as the scheduler leaves it: its one request allocated `dev-0` of `driver`'s pool
 * `node` (as a share when `shareID` is given) and reserved for the pod.
 */
function createAllocatedClaim(o: {
  name: string;
  request: string;
  driver: string;
  pod: string;
  podUid: string;
  shareID?: string;
}) {
  const result = { request: o.request, driver: o.driver, pool: 'node', device: 'dev-0' };
  create(
    {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaim',
      metadata: { name: o.name, namespace: 'default' },
      spec: { devices: { requests: [{ name: o.request, exactly: { deviceClassName: o.driver } }] } },
      status: {
        allocation: { devices: { results: [o.shareID ? { ...result, shareID: o.shareID } : result] } },
        reservedFor: [{ resource: 'pods', name: o.pod, uid: o.podUid }],
      },
    },
    'resource.k8s.io/resourceclaims',
  );
}

/** A pod whose container uses the whole of claim `claimName` (as `ref`) and prints the CDI device it gets. */
function createClaimingPod(name: string, ref: string, claimName: string) {
  create(
    boundPod(name, node, {
      resourceClaims: [{ name: ref, resourceClaimName: claimName }],
      containers: [
        {
          name: 'main',
          image: 'busybox',
          command: ['sh', '-c', 'echo "device=$GPU_DEVICE"; sleep 3600'],
          resources: { claims: [{ name: ref }] },
        },
      ],
    }),
  );
}

describe('Dynamic Resource Allocation (resource.k8s.io/v1, dra/v1)', () => {
  it('prepares a claim through its driver before the container starts, gives it the CDI device, unprepares it when the pod is gone', async () => {
    const driver = await startSampleDraDriver({
      root: join(dir, 'root'),
      name: 'gpu.example.com',
      cdiKind: 'gpu.example.com/gpu',
    });
    try {
      create(
        boundPod('claimer', node, {
          resourceClaims: [{ name: 'gpu', resourceClaimName: 'gpu-claim' }],
          containers: [
            {
              name: 'main',
              image: 'busybox',
              command: ['sh', '-c', 'echo "gpu=$GPU_DEVICE"; sleep 3600'],
              resources: { claims: [{ name: 'gpu' }] },
            },
          ],
        }),
      );
      const SHARE = '3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d';
      // The claim is not there yet: the pod waits, saying why.
      await until(
        () =>
          c.api.store
            .list('events')
            .find((e) => e.involvedObject.name === 'claimer' && e.reason === 'FailedPrepareDynamicResources'),
        20_000,
        'FailedPrepareDynamicResources',
      );
      // The scheduler's allocation, reserved for the pod: a share of the device's capacity
      // (DRAConsumableCapacity), which pod-resources reports.
      createAllocatedClaim({
        name: 'gpu-claim',
        request: 'gpu',
        driver: 'gpu.example.com',
        pod: 'claimer',
        podUid: pod('claimer')!.metadata.uid,
        shareID: SHARE,
      });
      await until(() => running('claimer'), 30_000, 'claimer Running');
      await until(() => /stdout F gpu=dev-0\n/.test(logOf(pod('claimer')!)), 10_000, 'the CDI device in the container');
      // The CDI annotation upstream sets for runtimes without CDI_devices, in the container's CRI config.
      const claimUid = c.api.store.get('resource.k8s.io/resourceclaims', 'default', 'gpu-claim')!.metadata.uid;
      const containerId = pod('claimer')!.status.containerStatuses[0].containerID.replace(/^[a-z]+:\/\//, '');
      const record = JSON.parse(
        readFileSync(join(dir, 'root', 'process-runtime', 'containers', `${containerId}.json`), 'utf8'),
      );
      expect(record.config.annotations[`cdi.k8s.io/gpu.example.com_${claimUid}`]).toBe('gpu.example.com/gpu=dev-0');
      expect(driver.calls).toEqual([{ method: 'NodePrepareResources', claims: ['gpu-claim'] }]);
      // The claim in use, by driver and across drivers, as upstream's node e2e tests read it.
      const inUse = async () => (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
      expect(await inUse()).toMatch(/^dra_resource_claims_in_use\{driver_name="gpu.example.com"\} 1$/m);
      expect(await inUse()).toMatch(/^dra_resource_claims_in_use\{driver_name="<any>"\} 1$/m);
      // The pod's claims prepared once, in one gRPC call to the driver (upstream's DRA histograms).
      expect(await inUse()).toMatch(
        /^dra_operations_duration_seconds_count\{is_error="false",operation_name="PrepareResources"\} 1$/m,
      );
      expect(await inUse()).toMatch(
        /^dra_grpc_operations_duration_seconds_count\{driver_name="gpu.example.com",grpc_status_code="OK",method_name="\/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin\/NodePrepareResources"\} 1$/m,
      );
      // pod-resources names the claim and its prepared device (dynamic_resources).
      const { client, call } = await podResourcesClient(join(dir, 'root'));
      try {
        const got = await call<{ pod_resources: { containers: { dynamic_resources: unknown[] }[] } }>('Get', {
          pod_name: 'claimer',
          pod_namespace: 'default',
        });
        expect(got.pod_resources.containers[0].dynamic_resources).toEqual([
          {
            claim_name: 'gpu-claim',
            claim_namespace: 'default',
            claim_resources: [
              {
                cdi_devices: [{ name: 'gpu.example.com/gpu=dev-0' }],
                driver_name: 'gpu.example.com',
                pool_name: 'node',
                device_name: 'dev-0',
                share_id: SHARE,
              },
            ],
          },
        ]);
      } finally {
        client.close();
      }
      const checkpoint = JSON.parse(readFileSync(join(dir, 'root', 'dra_manager_state'), 'utf8'));
      expect(JSON.parse(checkpoint.Data).ClaimInfoStateList).toEqual([
        expect.objectContaining({ ClaimName: 'gpu-claim', Namespace: 'default' }),
      ]);
      await kubectl(c, ['delete', 'pod', 'claimer', '--wait=false']);
      await until(
        () => driver.calls.some((x) => x.method === 'NodeUnprepareResources'),
        30_000,
        'NodeUnprepareResources',
      );
      expect(driver.calls.at(-1)).toEqual({ method: 'NodeUnprepareResources', claims: ['gpu-claim'] });
      await until(
        async () => /^dra_resource_claims_in_use\{driver_name="<any>"\} 0$/m.test(await inUse()),
        10_000,
        'no claim in use',
      );
      expect(await inUse()).toMatch(
        /^dra_operations_duration_seconds_count\{is_error="false",operation_name="UnprepareResources"\} 1$/m,
      );
    } finally {
      driver.close();
    }
  });

  it("unprepares a finished pod's claim before its status says Succeeded, and tries again while the driver refuses", async () => {
    const driver = await startSampleDraDriver({
      root: join(dir, 'root'),
      name: 'gpu.example.com',
      cdiKind: 'gpu.example.com/gpu',
    });
    try {
      driver.failUnprepare(1);
      const created = create(
        boundPod('claim-job', node, {
          restartPolicy: 'Never',
          resourceClaims: [{ name: 'gpu', resourceClaimName: 'job-claim' }],
          containers: [
            { name: 'main', image: 'busybox', command: ['sleep', '1'], resources: { claims: [{ name: 'gpu' }] } },
          ],
        }),
      );
      createAllocatedClaim({
        name: 'job-claim',
        request: 'gpu',
        driver: 'gpu.example.com',
        pod: 'claim-job',
        podUid: created.metadata.uid,
      });
      // The driver's calls at the moment a watcher (the claim controller) first sees the pod Succeeded.
      let callsWhenSucceeded: SampleDraDriver['calls'] | undefined;
      const stop = c.api.store.watch(
        'pods',
        0,
        (o) => o.metadata.name === 'claim-job',
        (e) => {
          if (e.object.status?.phase === 'Succeeded') callsWhenSucceeded ??= [...driver.calls];
        },
      );
      try {
        await until(() => callsWhenSucceeded, 40_000, 'claim-job Succeeded');
      } finally {
        stop();
      }
      // Upstream: unprepared after the containers stop and before the status changes; the refusal retried.
      expect(callsWhenSucceeded).toEqual([
        { method: 'NodePrepareResources', claims: ['job-claim'] },
        { method: 'NodeUnprepareResources', claims: ['job-claim'], error: 'device still busy' },
        { method: 'NodeUnprepareResources', claims: ['job-claim'] },
      ]);
      const checkpoint = JSON.parse(readFileSync(join(dir, 'root', 'dra_manager_state'), 'utf8'));
      expect(JSON.parse(checkpoint.Data).ClaimInfoStateList ?? []).toEqual([]);
      await kubectl(c, ['delete', 'pod', 'claim-job', '--wait=false']);
      await until(() => !pod('claim-job'), 20_000, 'claim-job gone');
    } finally {
      driver.close();
    }
  }, 60_000);

  it('prepares the claim the scheduler made for a DRA-backed extended resource, and gives the device to the container it maps to', async () => {
    const driver = await startSampleDraDriver({
      root: join(dir, 'root'),
      name: 'gpu.example.com',
      cdiKind: 'gpu.example.com/gpu',
    });
    try {
      const request = 'container-0-request-0';
      const created = create({
        ...boundPod('ext-user', node, {
          containers: [
            {
              name: 'main',
              image: 'busybox',
              command: ['sh', '-c', 'echo "device=$GPU_DEVICE"; sleep 3600'],
              resources: { limits: { 'example.com/gpu': '1' }, requests: { 'example.com/gpu': '1' } },
            },
          ],
        }),
        // As the scheduler records it (DRAExtendedResource).
        status: {
          extendedResourceClaimStatus: {
            resourceClaimName: 'ext-user-extended-resources-abcde',
            requestMappings: [{ containerName: 'main', resourceName: 'example.com/gpu', requestName: request }],
          },
        },
      });
      createAllocatedClaim({
        name: 'ext-user-extended-resources-abcde',
        request,
        driver: 'gpu.example.com',
        pod: 'ext-user',
        podUid: created.metadata.uid,
      });
      await until(() => running('ext-user'), 30_000, 'ext-user Running');
      await until(
        () => /stdout F device=dev-0\n/.test(logOf(pod('ext-user')!)),
        10_000,
        'the CDI device in the container',
      );
      expect(driver.calls[0]).toEqual({
        method: 'NodePrepareResources',
        claims: ['ext-user-extended-resources-abcde'],
      });
      await kubectl(c, ['delete', 'pod', 'ext-user', '--wait=false']);
      await until(
        () => driver.calls.some((x) => x.method === 'NodeUnprepareResources'),
        30_000,
        'NodeUnprepareResources',
      );
    } finally {
      driver.close();
    }
  });

  it("reports a claimed device's health from its driver's NodeWatchResources stream in allocatedResourcesStatus (ResourceHealthStatus)", async () => {
    // A driver that serves only v1alpha1 of the health service: the kubelet falls back to it.
    const driver = await startSampleDraDriver({
      root: join(dir, 'root'),
      name: 'health.example.com',
      // The CDI device the embedded runtime has a spec for.
      cdiKind: 'gpu.example.com/gpu',
      health: 'v1alpha1',
    });
    try {
      create(
        boundPod('watched', node, {
          resourceClaims: [{ name: 'accel', resourceClaimName: 'accel-claim' }],
          containers: [
            {
              name: 'main',
              image: 'busybox',
              command: ['sleep', '3600'],
              resources: { claims: [{ name: 'accel', request: 'fpga' }] },
            },
          ],
        }),
      );
      createAllocatedClaim({
        name: 'accel-claim',
        request: 'fpga',
        driver: 'health.example.com',
        pod: 'watched',
        podUid: pod('watched')!.metadata.uid,
      });
      await until(() => running('watched'), 30_000, 'watched Running');
      const statusOf = () => pod('watched')!.status.containerStatuses[0].allocatedResourcesStatus;
      // Nothing said yet: Unknown.
      await until(() => statusOf(), 10_000, 'allocatedResourcesStatus');
      expect(statusOf()).toEqual([
        { name: 'claim:accel/fpga', resources: [{ resourceID: 'health.example.com/node/dev-0', health: 'Unknown' }] },
      ]);
      await driver.reportHealth([{ device: 'dev-0', health: 'UNHEALTHY', message: 'ECC errors' }]);
      const unhealthy = await until(
        () => statusOf()?.[0]?.resources[0]?.health === 'Unhealthy' && statusOf(),
        20_000,
        'the device Unhealthy in the pod status',
      );
      expect(unhealthy[0].resources[0]).toEqual({
        resourceID: 'health.example.com/node/dev-0',
        health: 'Unhealthy',
        message: 'ECC errors',
      });
      await driver.reportHealth([{ device: 'dev-0', health: 'HEALTHY' }]);
      await until(() => statusOf()?.[0]?.resources[0]?.health === 'Healthy', 20_000, 'the device Healthy again');
      await kubectl(c, ['delete', 'pod', 'watched', '--wait=false']);
      await until(() => !pod('watched'), 30_000, 'watched gone');
    } finally {
      driver.close();
    }
  }, 90_000);

  it('prepares a claim again after a kubelet restart, and unprepares the claim of a pod deleted while the kubelet was down, known from dra_manager_state (the reconcile loop)', async () => {
    const driver = await startSampleDraDriver({
      root: join(dir, 'root'),
      name: 'keep.example.com',
      cdiKind: 'gpu.example.com/gpu',
    });
    try {
      createClaimingPod('keeper', 'gpu', 'keep-claim');
      const uid = await until(() => pod('keeper')?.metadata.uid, 10_000, 'the pod');
      createAllocatedClaim({
        name: 'keep-claim',
        request: 'gpu',
        driver: 'keep.example.com',
        pod: 'keeper',
        podUid: uid,
      });
      await until(() => running('keeper'), 30_000, 'keeper Running');
      const claimUid = c.api.store.get('resource.k8s.io/resourceclaims', 'default', 'keep-claim')!.metadata.uid;
      const saved = () =>
        (
          JSON.parse(JSON.parse(readFileSync(join(dir, 'root', 'dra_manager_state'), 'utf8')).Data)
            .ClaimInfoStateList as Obj[]
        ).find((x) => x.ClaimName === 'keep-claim');
      expect(saved()).toMatchObject({
        ClaimUID: claimUid,
        PodUIDs: { [uid]: {} },
        DriverState: { 'keep.example.com': { Devices: [{ PoolName: 'node', DeviceName: 'dev-0' }] } },
      });
      // A restart with the pod kept: its claim is prepared once more, as upstream's, and the pod runs on.
      const prepares = () => driver.calls.filter((x) => x.method === 'NodePrepareResources').length;
      expect(prepares()).toBe(1);
      await c.restartKubelet();
      await until(() => prepares() === 2, 30_000, 'the claim prepared again after the restart');
      await until(() => running('keeper'), 30_000, 'keeper Running after the restart');
      await new Promise((r) => setTimeout(r, 1500));
      expect(prepares()).toBe(2);
      expect(saved()).toMatchObject({ PodUIDs: { [uid]: {} } });
      await c.restartKubelet(async () => {
        await kubectl(c, ['delete', 'pod', 'keeper', '--grace-period=0', '--force']);
      });
      // No pod refers to the claim any more: only the checkpoint says it is prepared.
      await until(
        () => driver.calls.some((x) => x.method === 'NodeUnprepareResources'),
        30_000,
        'NodeUnprepareResources after the restart',
      );
      expect(driver.calls.at(-1)).toEqual({ method: 'NodeUnprepareResources', claims: ['keep-claim'] });
      await until(() => !saved(), 10_000, 'the claim gone from the checkpoint');
    } finally {
      driver.close();
    }
  }, 60_000);

  it('speaks v1beta1 to a driver that registers only v1beta1.DRAPlugin', async () => {
    const driver = await startSampleDraDriver({
      root: join(dir, 'root'),
      name: 'fpga.example.com',
      // The CDI spec the tests install (its kind is the GPU's: a driver may name any).
      cdiKind: 'gpu.example.com/gpu',
      version: 'v1beta1',
    });
    try {
      createClaimingPod('beta-claimer', 'fpga', 'fpga-claim');
      const uid = await until(() => pod('beta-claimer')?.metadata.uid, 10_000, 'the pod');
      createAllocatedClaim({
        name: 'fpga-claim',
        request: 'fpga',
        driver: 'fpga.example.com',
        pod: 'beta-claimer',
        podUid: uid,
      });
      await until(() => running('beta-claimer'), 30_000, 'beta-claimer Running');
      await until(() => /stdout F device=dev-0\n/.test(logOf(pod('beta-claimer')!)), 10_000, 'the CDI device');
      expect(driver.calls[0]).toEqual({ method: 'NodePrepareResources', claims: ['fpga-claim'] });
      await kubectl(c, ['delete', 'pod', 'beta-claimer', '--wait=false']);
      await until(
        () => driver.calls.some((x) => x.method === 'NodeUnprepareResources'),
        30_000,
        'NodeUnprepareResources over v1beta1',
      );
    } finally {
      driver.close();
    }
  });

  it("fails the preparation, with upstream's message, when a driver answers a device that is no qualified CDI name", async () => {
    const driver = await startSampleDraDriver({
      root: join(dir, 'root'),
      name: 'bad.example.com',
      // `gpu0=dev-0`: no vendor/class, so no CDI annotation can be made.
      cdiKind: 'gpu0',
    });
    try {
      createClaimingPod('bad-claimer', 'dev', 'bad-claim');
      const uid = await until(() => pod('bad-claimer')?.metadata.uid, 10_000, 'the pod');
      createAllocatedClaim({
        name: 'bad-claim',
        request: 'dev',
        driver: 'bad.example.com',
        pod: 'bad-claimer',
        podUid: uid,
      });
      const event = await until(
        () =>
          c.api.store
            .list('events')
            .find(
              (e) =>
                e.involvedObject.name === 'bad-claimer' &&
                e.reason === 'FailedPrepareDynamicResources' &&
                /CDIDevices/.test(e.message),
            ),
        30_000,
        'FailedPrepareDynamicResources for the device name',
      );
      expect(event.message).toContain(
        `failed to add CDIDevices to claimInfo default/bad-claim: can't generate CDI annotations: unqualified device "gpu0=dev-0", missing vendor`,
      );
      expect(pod('bad-claimer')!.status.containerStatuses?.[0]?.state?.running).toBeUndefined();
      await kubectl(c, ['delete', 'pod', 'bad-claimer', '--wait=false']);
    } finally {
      driver.close();
    }
  });
});

describe('static pods', () => {
  it('get a mirror pod, recreated when deleted, removed with the static pod', async () => {
    writeFileSync(
      join(c.manifests, 'static.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: etcd, namespace: kube-system}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: busybox, command: [sleep, "3600"]}\n',
    );
    const name = `etcd-${node}`;
    const mirror = await until(
      () => {
        const m = c.api.store.get('pods', 'kube-system', name);
        return m?.status?.phase === 'Running' && m;
      },
      20_000,
      'mirror pod Running',
    );
    const n = c.api.store.get('nodes', '', node)!;
    expect(mirror.metadata.annotations['kubernetes.io/config.mirror']).toBe(
      mirror.metadata.annotations['kubernetes.io/config.hash'],
    );
    // As upstream's mirror client, every annotation of the static pod: its MirrorPod specs find them.
    expect(mirror.metadata.annotations['kubernetes.io/config.source']).toBe('file');
    expect(mirror.metadata.annotations['kubernetes.io/config.seen']).toMatch(/^\d{4}-/);
    expect(mirror.metadata.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Node', name: node, uid: n.metadata.uid, controller: true },
    ]);
    const out = await kubectl(c, ['get', 'pods', '-n', 'kube-system']);
    expect(out.stdout).toMatch(new RegExp(`^${name}\\s+1/1\\s+Running`, 'm'));
    c.api.store.remove('pods', 'kube-system', name);
    const again = await until(
      () => {
        const m = c.api.store.get('pods', 'kube-system', name);
        return m && m.metadata.uid !== mirror.metadata.uid && m;
      },
      15_000,
      'mirror pod recreated',
    );
    expect(again.metadata.annotations['kubernetes.io/config.mirror']).toBe(
      mirror.metadata.annotations['kubernetes.io/config.mirror'],
    );
    // An edited manifest is a new static pod (new hash): the stale mirror pod is replaced.
    writeFileSync(
      join(c.manifests, 'static.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: etcd, namespace: kube-system, labels: {v: "2"}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: busybox, command: [sleep, "3601"]}\n',
    );
    const edited = await until(
      () => {
        const m = c.api.store.get('pods', 'kube-system', name);
        return m?.metadata.labels?.v === '2' && m;
      },
      20_000,
      'mirror pod replaced',
    );
    expect(edited.metadata.annotations['kubernetes.io/config.mirror']).not.toBe(
      again.metadata.annotations['kubernetes.io/config.mirror'],
    );
    expect(edited.metadata.annotations['kubernetes.io/config.mirror']).toBe(
      edited.metadata.annotations['kubernetes.io/config.hash'],
    );
    unlinkSync(join(c.manifests, 'static.yaml'));
    await until(() => !c.api.store.get('pods', 'kube-system', name), 15_000, 'mirror pod removed');
  });

  it('a mirror pod stays Running, same UID, while its removed static pod stops within its grace period; then it goes (upstream MirrorPodWithGracePeriod)', async () => {
    writeFileSync(
      join(c.manifests, 'graceful.yaml'),
      `apiVersion: v1\nkind: Pod\nmetadata: {name: graceful, namespace: kube-system}\nspec:\n  terminationGracePeriodSeconds: 4\n  containers:\n  - {name: main, image: busybox, command: [sh, -c, "trap '' TERM; while true; do sleep 0.1; done", graceful-marker]}\n`,
    );
    const name = `graceful-${node}`;
    const mirror = await until(
      () =>
        c.api.store.get('pods', 'kube-system', name)?.status?.phase === 'Running' &&
        c.api.store.get('pods', 'kube-system', name),
      20_000,
      'mirror Running',
    );
    unlinkSync(join(c.manifests, 'graceful.yaml'));
    expect(countProcesses('graceful-marker')).toBeGreaterThan(0);
    const t0 = Date.now();
    while (Date.now() - t0 < 2500) {
      const m = c.api.store.get('pods', 'kube-system', name);
      expect(m?.metadata.uid).toBe(mirror.metadata.uid);
      expect(m?.status?.phase).toBe('Running');
      await new Promise((r) => setTimeout(r, 200));
    }
    await until(
      () => !c.api.store.get('pods', 'kube-system', name),
      15_000,
      'mirror pod removed once the static pod stopped',
    );
    expect(countProcesses('graceful-marker')).toBe(0);
  }, 40_000);
});

describe('critical pod preemption (upstream pkg/kubelet/preemption)', () => {
  it('a static pod that does not fit preempts the pods that free its cpu: Failed / Preempting with DisruptionTarget, an event, kubelet_preemptions; a besteffort pod stays', async () => {
    const allocatable = milliCpu(c.api.store.get('nodes', '', node)!.status.allocatable.cpu)!;
    // The victim ignores SIGTERM: it stops at the end of its 3 s grace period.
    create(
      boundPod('victim', node, {
        terminationGracePeriodSeconds: 3,
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sh', '-c', "trap '' TERM; while true; do sleep 0.1; done", 'victim-marker-8c2'],
            resources: { requests: { cpu: '200m' } },
          },
        ],
      }),
    );
    create(boundPod('bystander', node));
    await until(() => running('victim') && running('bystander'), 20_000, 'victim and bystander Running');
    // The static pod asks for the whole node's cpu, as upstream's critical pod test does.
    writeFileSync(
      join(c.manifests, 'critical.yaml'),
      `apiVersion: v1\nkind: Pod\nmetadata: {name: critical, namespace: kube-system}\nspec:\n  containers:\n  - {name: main, image: busybox, command: [sh, -c, "while true; do sleep 0.1; done", critical-marker-8c2], resources: {requests: {cpu: ${allocatable}m}}}\n`,
    );
    // It starts only once the victim is stopped (upstream killPodNow).
    const seen: { victim: number; critical: number }[] = [];
    const sampler = setInterval(
      () => seen.push({ victim: countProcesses('victim-marker-8c2'), critical: countProcesses('critical-marker-8c2') }),
      50,
    );
    const victim = await until(
      () => pod('victim')?.status?.phase === 'Failed' && pod('victim'),
      20_000,
      'victim preempted',
    );
    expect(victim.status).toMatchObject({ reason: 'Preempting', message: 'Preempted in order to admit critical pod' });
    expect(victim.status.conditions.find((x: Obj) => x.type === 'DisruptionTarget')).toMatchObject({
      status: 'True',
      reason: 'TerminationByKubelet',
      message: 'Pod was preempted by Kubelet to accommodate a critical pod.',
    });
    await until(
      () => c.api.store.get('pods', 'kube-system', `critical-${node}`)?.status?.phase === 'Running',
      20_000,
      'critical pod Running',
    );
    await until(() => seen.some((x) => x.critical > 0), 5_000, 'critical process sampled');
    clearInterval(sampler);
    expect(seen.filter((x) => x.victim > 0 && x.critical > 0)).toEqual([]);
    expect(seen.some((x) => x.victim > 0)).toBe(true);
    expect(running('bystander')).toBeTruthy();
    const event = c.api.store
      .list('events')
      .find((e) => e.involvedObject.uid === victim.metadata.uid && e.reason === 'Preempting');
    expect(event).toMatchObject({ type: 'Warning', message: 'Preempted in order to admit critical pod' });
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    expect(Number(/^kubelet_preemptions\{preemption_signal="cpu"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(
      1,
    );
    unlinkSync(join(c.manifests, 'critical.yaml'));
    await kubectl(c, ['delete', 'pod', 'bystander', '--wait=false']);
  }, 60_000);
});

describe('kubelet restart with a runtime that lost its containers (the embedded runtime forgets them when the kubelet stops)', () => {
  it('the pod runs again counting on from its logs (upstream calcRestartCountByLogDir): restartCount 1 in 1.log beside 0.log, its start time kept', async () => {
    create(
      boundPod('lost', node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sh', '-c', 'echo up; while true; do sleep 0.1; done', 'lost-marker-3f1'],
          },
        ],
      }),
    );
    await until(() => running('lost') && logOf(pod('lost')!).includes('up'), 20_000, 'lost Running');
    const before = pod('lost')!.status;
    const logs = join(dir, 'logs', `default_lost_${pod('lost')!.metadata.uid}`, 'main');
    await c.restartKubelet();
    const after = await until(
      () =>
        running('lost') &&
        pod('lost')!.status.containerStatuses[0].containerID !== before.containerStatuses[0].containerID &&
        pod('lost')!.status,
      30_000,
      'lost running again',
    );
    expect(after.containerStatuses[0].restartCount).toBe(1);
    expect(readdirSync(logs).sort()).toEqual(['0.log', '1.log']);
    expect(after.startTime).toBe(before.startTime);
    expect(countProcesses('lost-marker-3f1')).toBe(1);
    await kubectl(c, ['delete', 'pod', 'lost', '--wait=false']);
    await until(() => !pod('lost'), 20_000, 'lost gone');
  }, 60_000);

  it('a pod found Succeeded and being deleted after a restart is deleted from the API, its volume released (upstream regression test for kubernetes#116925)', async () => {
    create(
      boundPod('terminal-deleted', node, {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
          },
        ],
        volumes: [{ name: 'scratch', emptyDir: {} }],
      }),
    );
    await until(() => running('terminal-deleted'), 20_000, 'Running');
    const uid = pod('terminal-deleted')!.metadata.uid;
    const scratch = join(dir, 'root', 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
    expect(existsSync(scratch)).toBe(true);
    // Deleted gracefully; its container exited 0, the kubelet wrote Succeeded and died before the DELETE.
    await c.restartKubelet(async () => {
      await kubectl(c, ['delete', 'pod', 'terminal-deleted', '--wait=false']);
      const o = pod('terminal-deleted')!;
      expect(o.metadata.deletionTimestamp).toBeDefined();
      c.api.store.update('pods', { ...o, status: { ...o.status, phase: 'Succeeded' } });
    });
    await until(() => !pod('terminal-deleted'), 20_000, 'deleted from the API');
    await until(() => !existsSync(scratch), 10_000, 'volume released');
  }, 60_000);

  it("a static pod's start time is its mirror pod's (upstream's old status for a static pod), and its restart count goes on", async () => {
    writeFileSync(
      join(c.manifests, 'restarted.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: restarted, namespace: kube-system}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: busybox, command: [sleep, "3600"]}\n',
    );
    const name = `restarted-${node}`;
    const mirror = () => c.api.store.get('pods', 'kube-system', name);
    const before = await until(
      () => mirror()?.status?.containerStatuses?.[0]?.state?.running && mirror()!.status,
      20_000,
      'mirror pod Running',
    );
    await new Promise((r) => setTimeout(r, 1100));
    await c.restartKubelet();
    const after = await until(
      () =>
        mirror()?.status?.containerStatuses?.[0]?.state?.running &&
        mirror()!.status.containerStatuses[0].restartCount === 1 &&
        mirror()!.status,
      30_000,
      'static pod running again',
    );
    expect(after.startTime).toBe(before.startTime);
    unlinkSync(join(c.manifests, 'restarted.yaml'));
    await until(() => !mirror(), 15_000, 'mirror pod removed');
  }, 60_000);
});

describe('apiserver disruptions', () => {
  it('survives watch drops, 410 Gone and an apiserver restart: no pod restarted, no status lost, new pods still start', async () => {
    create(boundPod('steady', node));
    await until(() => running('steady'), 20_000, 'steady Running');
    const before = pod('steady')!.status.containerStatuses[0];
    const lists = () =>
      c.api.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/pods' && !r.query.watch).length;
    const listsBefore = lists();
    c.api.dropWatches();
    create(boundPod('after-drop', node));
    await until(() => running('after-drop'), 20_000, 'pod created after a watch drop runs');
    // The kubelet's resourceVersion falls behind a compaction: its re-watch gets 410 Gone.
    c.api.stallWatches(true);
    for (let i = 0; i < 3; i++)
      create(
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `churn-${i}`, namespace: 'default' } },
        'configmaps',
      );
    c.api.store.compact();
    c.api.dropWatches();
    c.api.stallWatches(false);
    await until(() => lists() > listsBefore, 15_000, 'relist after 410');
    create(boundPod('after-410', node));
    await until(() => running('after-410'), 20_000, 'pod created after 410 runs');
    // A pod whose status changes while the apiserver is down.
    create(
      boundPod('short', node, {
        restartPolicy: 'Never',
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'sleep 2; exit 3'] }],
      }),
    );
    await until(() => running('short'), 20_000, 'short Running');
    await c.api.restart(3000);
    const short = await until(
      () => pod('short')?.status?.phase === 'Failed' && pod('short')!.status,
      30_000,
      'short pod status written after the restart',
    );
    expect(short.containerStatuses[0].state.terminated).toMatchObject({ exitCode: 3, reason: 'Error' });
    create(boundPod('after-restart', node));
    await until(() => running('after-restart'), 20_000, 'pod created after the apiserver restart runs');
    const after = pod('steady')!.status.containerStatuses[0];
    expect(after.containerID).toBe(before.containerID);
    expect(after.restartCount).toBe(0);
    expect(c.kubelet.proc.exitCode).toBeNull();
  }, 120_000);
});
