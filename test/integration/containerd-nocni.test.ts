/**
 * A real containerd WITHOUT a CNI config (NetworkReady=false): pods that are not hostNetwork wait
 * with upstream's message and get no sandbox; hostNetwork pods run. Then image garbage collection
 * by disk-usage thresholds on the same node: unused images go, in-use and sandbox images stay.
 * Then an image credential provider plugin (a real script) gives the node the credentials of a
 * private registry: pods without pull secrets pull from it, one plugin run per registry.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCriClient } from '../../src/cri/client.js';
import type { CriRuntime } from '../../src/cri/services.js';
import { startContainerd, TEST_IMAGES, type Containerd } from '../fixtures/containerd.js';
import {
  freeKubeletPorts,
  httpGet,
  kubeletArgs,
  startKubelet,
  until,
  type Kubelet,
  type KubeletPorts,
} from '../e2e/helpers.js';
import { cstatus, teardown, waitPod, writePod } from './containerd-helpers.js';
import { startRegistry, type Registry } from '../fixtures/registry.js';

const node = 'nocni-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-nocni-'));
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
const UNUSED = 'tskubelet.test/unused:1';
let ctrd: Containerd;
let cri: CriRuntime;
let ports: KubeletPorts;
let kubelet: Kubelet;
let registry: Registry;
const plugins = join(dir, 'credential-providers');
const providerConfig = join(dir, 'credential-providers.yaml');
const args = (extra: string[] = []) =>
  kubeletArgs({
    dir,
    ports,
    node,
    manifests,
    extra: [
      ...ctrd.kubeletFlags,
      '--file-check-frequency',
      '1s',
      '--image-credential-provider-config',
      providerConfig,
      '--image-credential-provider-bin-dir',
      plugins,
      ...extra,
    ],
  });
const imageNames = async () => (await cri.images.listImages()).flatMap((i) => i.repo_tags ?? []).sort();

beforeAll(async () => {
  registry = await startRegistry({
    users: { puller: 'pull-pw' },
    images: [
      { name: 'team/app:1', cmd: ['sleep', '3600'] },
      { name: 'team/other:1', cmd: ['sleep', '3600'] },
    ],
  });
  // The plugin records each request and answers with the registry's credentials for the whole registry, for an hour.
  mkdirSync(plugins);
  const answer = {
    kind: 'CredentialProviderResponse',
    apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
    cacheKeyType: 'Registry',
    cacheDuration: '1h',
    auth: { [registry.host]: { username: 'puller', password: 'pull-pw' } },
  };
  writeFileSync(
    join(plugins, 'test-provider'),
    `#!/bin/sh\ncat >> ${dir}/plugin-requests\necho >> ${dir}/plugin-requests\necho '${JSON.stringify(answer)}'\n`,
  );
  chmodSync(join(plugins, 'test-provider'), 0o755);
  writeFileSync(
    providerConfig,
    [
      'apiVersion: kubelet.config.k8s.io/v1',
      'kind: CredentialProviderConfig',
      'providers:',
      '- name: test-provider',
      `  matchImages: ["${registry.host}"]`,
      '  defaultCacheDuration: 10m',
      '  apiVersion: credentialprovider.kubelet.k8s.io/v1',
    ].join('\n'),
  );
  ctrd = await startContainerd({
    cni: false,
    images: [{ name: UNUSED, cmd: ['true'] }],
    httpRegistries: [registry.host],
  });
  cri = createCriClient(ctrd.endpoint);
  ports = await freeKubeletPorts();
  writePod(manifests, 'podnet', {
    containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }],
  });
  writePod(manifests, 'hostnet', {
    hostNetwork: true,
    containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }],
  });
  kubelet = startKubelet(args());
}, 60_000);

afterAll(async () => {
  await teardown({ kubelet, cri, ctrd, dir });
  await registry?.close();
}, 60_000);

describe('NetworkReady=false', () => {
  it('keeps a pod-network pod pending without a sandbox, runs a hostNetwork pod, and stays healthy', async () => {
    await waitPod(ports.ro, `hostnet-${node}`, (p) => p.status?.phase === 'Running');
    const p = await waitPod(ports.ro, `podnet-${node}`, (x) => !!x.status);
    await until(() => kubelet.output().includes('network is not ready'), 15_000, 'network error logged');
    expect(kubelet.output()).toContain(
      'network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized',
    );
    const again = await waitPod(ports.ro, `podnet-${node}`, () => true);
    expect(again.status!.phase).toBe('Pending');
    expect(cstatus(again)!.state.waiting!.reason).toBe('ContainerCreating');
    expect(await cri.runtime.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': p.metadata.uid! } })).toEqual(
      [],
    );
    expect((await httpGet(`http://127.0.0.1:${ports.hz}/healthz`)).body).toBe('ok');
  });
});

describe('image garbage collection', () => {
  it('above the high threshold removes unused images, keeping those in use and the sandbox image', async () => {
    expect(await imageNames()).toEqual(
      [TEST_IMAGES.busybox, TEST_IMAGES.echo, TEST_IMAGES.nonroot, TEST_IMAGES.pause, UNUSED].sort(),
    );
    await kubelet.stop();
    kubelet = startKubelet(
      args(['--image-gc-high-threshold=1', '--image-gc-low-threshold=0', '--minimum-image-ttl-duration=0s']),
    );
    await until(async () => (await imageNames()).length === 2, 30_000, 'unused images removed').catch(async (err) => {
      throw new Error(
        `${err.message}: ${(await imageNames()).join(' ')}\n${kubelet
          .output()
          .split('\n')
          .filter((l) => /image|garbage/.test(l))
          .join('\n')}`,
      );
    });
    expect(await imageNames()).toEqual([TEST_IMAGES.busybox, TEST_IMAGES.pause]);
    const p = await waitPod(ports.ro, `hostnet-${node}`, (x) => !!cstatus(x)?.state.running);
    expect(cstatus(p)!.restartCount).toBe(0);
    // Upstream's counter of collected images, by reason (here disk usage): the three removed.
    const metrics = (await httpGet(`http://127.0.0.1:${ports.ro}/metrics`)).body;
    expect(metrics).toMatch(/^kubelet_image_garbage_collected_total\{reason="space"\} 3$/m);
  }, 60_000);
});

describe('image credential provider plugins', () => {
  it('pulls from a private registry with the credentials the plugin gives, running it once per registry', async () => {
    writePod(manifests, 'private-a', {
      hostNetwork: true,
      containers: [{ name: 'main', image: `${registry.host}/team/app:1` }],
    });
    writePod(manifests, 'private-b', {
      hostNetwork: true,
      containers: [{ name: 'main', image: `${registry.host}/team/other:1` }],
    });
    for (const n of ['private-a', 'private-b'])
      await waitPod(ports.ro, `${n}-${node}`, (p) => p.status?.phase === 'Running', 60_000, 'Running');
    expect(registry.requests.some((r) => r.user === 'puller' && r.path === '/v2/team/app/manifests/1')).toBe(true);
    expect(registry.requests.some((r) => r.user === 'puller' && r.path === '/v2/team/other/manifests/1')).toBe(true);
    // One run: the answer holds for the registry, so the second image used the cached credentials.
    const runs = readFileSync(join(dir, 'plugin-requests'), 'utf8').trim().split('\n').filter(Boolean);
    expect(runs).toHaveLength(1);
    expect(JSON.parse(runs[0])).toEqual({
      apiVersion: 'credentialprovider.kubelet.k8s.io/v1',
      kind: 'CredentialProviderRequest',
      image: expect.stringMatching(/team\/(app|other):1$/),
    });
    expect(existsSync(providerConfig)).toBe(true);
  });
});
