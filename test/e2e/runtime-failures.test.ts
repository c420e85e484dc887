/**
 * Runtime calls that fail for one pod, and what the kubelet shows of it, as upstream's.
 *
 * A pod whose containers the runtime fails to stop (upstream SyncTerminatingPod): the kubelet
 * records `FailedKillPod` ("error killing pod: [failed to "KillContainer" for "main" with
 * KillContainerError: …, failed to "KillPodSandbox" …]"), keeps the pod Terminating — its API object, its containers
 * and its sandbox stay — and tries again after its backoff until the stop succeeds; only then is the pod
 * released. Regression: after three failed stops in a row the kubelet went on, removed what it could
 * and deleted the pod from the API while its container still ran.
 *
 * A new sandbox whose status the runtime fails to give: `FailedPodSandBoxStatus` ("Unable to get pod
 * sandbox status: …"), and the pod starts at the next sync. A pod whose container's status the
 * runtime fails to give: `FailedSync` ("error determining status: …", upstream's pod worker).
 *
 * A pod whose image pull takes long: its new sandbox is in its status before the pull ends, so
 * `PodReadyToStartContainers` is True while its container is still `ContainerCreating` (upstream v1.36,
 * kubernetes/kubernetes#134660; before, the condition waited for the pulls).
 *
 * The runtime is the process runtime served by grpc-js in this process, its calls failing or waiting as
 * the test says; the kubelet is the real CLI joined to the fake apiserver.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as grpc from '@grpc/grpc-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessRuntime } from '../../src/process-runtime/runtime.js';
import { ProcessImages } from '../../src/process-runtime/images.js';
import type { ImageService, RuntimeService } from '../../src/cri/services.js';
import { KubeletError } from '../../src/lib/errors.js';
import { createLogger } from '../../src/lib/logger.js';
import { serveCriWithGrpcJs } from '../fixtures/grpc-js-cri-server.js';
import { boundPod, kubectl, startCluster, type Cluster } from './cluster-helpers.js';
import { until } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-killfail-'));
const node = 'killfail-node';
let runtime: ProcessRuntime;
let server: grpc.Server;
let c: Cluster;
let failStops = false;
/** How many PodSandboxStatus calls still fail. */
let sandboxStatusFailures = 0;
/** The pod whose containers' ContainerStatus fails. */
let failContainerStatusOf = '';
/**
 * The runtime calls that stop or remove something, in order: `stop ok|failed`, `remove container`, `remove sandbox`.
 */
const calls: string[] = [];
/** The image whose pulls wait for `releasePull`. */
const SLOW_IMAGE = 'registry.example/slow:1';
let releasePull: () => void = () => undefined;
const pullReleased = new Promise<void>((resolve) => (releasePull = resolve));

/** The process runtime's images, a pull of SLOW_IMAGE waiting until the test releases it. */
function slowPulls(images: ProcessImages): ImageService {
  return new Proxy(images, {
    get(target, key, receiver) {
      if (key === 'pullImage')
        return async (image: { image: string }, ...rest: unknown[]) => {
          if (image.image === SLOW_IMAGE) await pullReleased;
          return (target.pullImage as (...a: unknown[]) => Promise<string>)(image, ...rest);
        };
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * The process runtime, its StopContainer and StopPodSandbox failing while `failStops` is set, its status calls as the
 * test says; stops and removals logged.
 */
function failingStops(rt: ProcessRuntime): RuntimeService {
  return new Proxy(rt, {
    get(target, key, receiver) {
      if (key === 'stopContainer')
        return async (id: string, timeout: number) => {
          if (failStops) {
            calls.push('stop failed');
            throw new KubeletError('Internal', 'the shim did not answer');
          }
          await target.stopContainer(id, timeout);
          calls.push('stop ok');
        };
      if (key === 'podSandboxStatus')
        return async (id: string) => {
          if (sandboxStatusFailures > 0) {
            sandboxStatusFailures--;
            throw new KubeletError('Unavailable', 'sandbox status: the shim did not answer');
          }
          return target.podSandboxStatus(id);
        };
      if (key === 'containerStatus')
        return async (id: string) => {
          const answer = await target.containerStatus(id);
          if (failContainerStatusOf && answer.status.labels?.['io.kubernetes.pod.name'] === failContainerStatusOf)
            throw new KubeletError('Internal', 'container status: the task is gone');
          return answer;
        };
      // Stopping the sandbox would stop its containers: a shim that does not answer fails that too.
      if (key === 'stopPodSandbox')
        return async (id: string) => {
          if (failStops) throw new KubeletError('Internal', 'the shim did not answer');
          await target.stopPodSandbox(id);
        };
      if (key === 'removeContainer' || key === 'removePodSandbox')
        return async (id: string) => {
          calls.push(key === 'removeContainer' ? 'remove container' : 'remove sandbox');
          await target[key](id);
        };
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

beforeAll(async () => {
  runtime = new ProcessRuntime({
    stateDir: join(dir, 'runtime'),
    podIP: '127.0.0.1',
    mode: 'in-process',
    logger: createLogger({ level: 'fatal' }),
    version: 'test',
  });
  await runtime.start();
  const endpoint = `unix://${join(dir, 'cri.sock')}`;
  server = await serveCriWithGrpcJs(
    endpoint,
    failingStops(runtime),
    slowPulls(new ProcessImages(join(dir, 'runtime'))),
  );
  c = await startCluster({ dir, node, extra: ['--container-runtime-endpoint', endpoint] });
}, 30_000);

afterAll(async () => {
  failStops = false;
  releasePull();
  await c?.close();
  server?.forceShutdown();
  await runtime?.shutdown();
  rmSync(dir, { recursive: true, force: true });
});

const pod = () => c.api.store.get('pods', 'default', 'stubborn');
const runningContainers = async () =>
  (await runtime.listContainers({ state: { state: 'CONTAINER_RUNNING' } })).filter(
    (x) => x.labels?.['io.kubernetes.pod.name'] === 'stubborn',
  );

const events = (pod: string, reason: string) =>
  c.api.store.list('events').filter((e) => e.reason === reason && e.involvedObject?.name === pod);

describe('a pod the runtime fails to stop', () => {
  it('stays Terminating with a FailedKillPod event, and is released once a later stop succeeds', async () => {
    await until(() => c.api.store.get('nodes', '', node), 20_000, 'node registered');
    c.api.store.create('pods', boundPod('stubborn', node));
    await until(() => pod()?.status?.phase === 'Running', 30_000, 'stubborn Running');
    failStops = true;
    expect((await kubectl(c, ['delete', 'pod', 'stubborn', '--wait=false'])).code).toBe(0);
    const event = await until(
      () =>
        c.api.store.list('events').find((e) => e.reason === 'FailedKillPod' && e.involvedObject?.name === 'stubborn'),
      30_000,
      'FailedKillPod event',
    );
    expect(event.type).toBe('Warning');
    const uid = pod()?.metadata.uid as string;
    // grpc-go's status text, as upstream prints the runtime's errors.
    const refused = 'rpc error: code = Internal desc = the shim did not answer';
    expect(event.message).toBe(
      `error killing pod: [failed to "KillContainer" for "main" with KillContainerError: "${refused}", ` +
        `failed to "KillPodSandbox" for "${uid}" with KillPodSandboxError: "${refused}"]`,
    );
    // Longer than the three quick tries the kubelet used to make before going on: nothing is released.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(pod()).toBeDefined();
    expect(await runningContainers()).toHaveLength(1);
    expect(calls).not.toContain('remove container');
    expect(calls).not.toContain('remove sandbox');
    failStops = false;
    // The worker's backoff is 10–15 s: the next try stops the container and the pod goes.
    await until(() => !pod(), 40_000, 'stubborn deleted from the API');
    expect(await runningContainers()).toHaveLength(0);
    const firstOk = calls.indexOf('stop ok');
    expect(firstOk).toBeGreaterThan(0);
    expect(calls.slice(0, firstOk).every((x) => x === 'stop failed')).toBe(true);
  }, 90_000);
});

describe('status calls that fail', () => {
  it("a new sandbox's status: FailedPodSandBoxStatus, and the pod starts at the next sync", async () => {
    sandboxStatusFailures = 1;
    c.api.store.create('pods', boundPod('sandbox-status', node));
    const event = await until(() => events('sandbox-status', 'FailedPodSandBoxStatus')[0], 30_000, 'the event');
    expect(event).toMatchObject({
      type: 'Warning',
      message:
        'Unable to get pod sandbox status: rpc error: code = Unavailable desc = sandbox status: the shim did not answer',
    });
    await until(
      () => c.api.store.get('pods', 'default', 'sandbox-status')?.status?.phase === 'Running',
      40_000,
      'sandbox-status Running',
    );
    // The sandbox made before the failure is the one the pod runs in: no second one.
    const sandboxes = (await runtime.listPodSandbox()).filter((s) => s.metadata.name === 'sandbox-status');
    expect(sandboxes).toHaveLength(1);
    expect(events('sandbox-status', 'FailedCreatePodSandBox')).toEqual([]);
  }, 60_000);

  it("a container's status: FailedSync, as upstream's pod worker reports it; Running once it answers", async () => {
    failContainerStatusOf = 'container-status';
    try {
      c.api.store.create('pods', boundPod('container-status', node));
      const event = await until(() => events('container-status', 'FailedSync')[0], 40_000, 'the event');
      expect(event).toMatchObject({
        type: 'Warning',
        message: 'error determining status: rpc error: code = Internal desc = container status: the task is gone',
      });
    } finally {
      failContainerStatusOf = '';
    }
    await until(
      () => c.api.store.get('pods', 'default', 'container-status')?.status?.phase === 'Running',
      40_000,
      'container-status Running',
    );
  }, 90_000);
});

describe('a pull that takes long', () => {
  it('PodReadyToStartContainers turns True once the sandbox is made, while the container still waits', async () => {
    c.api.store.create(
      'pods',
      boundPod('slow-pull', node, {
        containers: [{ name: 'main', image: SLOW_IMAGE, imagePullPolicy: 'Always', command: ['sleep', '3600'] }],
      }),
    );
    const slow = () => c.api.store.get('pods', 'default', 'slow-pull');
    const condition = (type: string) =>
      (slow()?.status?.conditions as { type: string; status: string }[] | undefined)?.find((x) => x.type === type);
    await until(() => condition('PodReadyToStartContainers')?.status === 'True', 30_000, 'the condition True');
    expect(slow()?.status?.containerStatuses?.[0]?.state).toEqual({ waiting: { reason: 'ContainerCreating' } });
    expect(slow()?.status?.podIP).toBe('127.0.0.1');
    releasePull();
    await until(() => slow()?.status?.phase === 'Running', 30_000, 'slow-pull Running');
  }, 70_000);
});
