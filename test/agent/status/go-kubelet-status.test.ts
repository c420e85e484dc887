/**
 * A pod's status as the Go kubelet v1.36.2 wrote it for the pods of its fixtures (test/fixtures/go-kubelet-1.36/pods.json,
 * copied from ../shared/fixtures), given the same runtime view: every field but the times. Each container the runtime
 * has shows the image as the runtime names it (containerd 1.x: the image's first tag), its allocated requests
 * (`allocatedResources`) and its resources (`{}` when it has none, an init container that finished too), and the pod
 * its requests added up and its resources, whether or not it sets pod-level resources
 * (InPlacePodLevelResourcesVerticalScaling, beta and on in v1.36). Regressions: tskubelet showed the spec's image,
 * `resources` only for running containers that had some, and the pod's only with pod-level resources.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Pod } from '../../../src/api/types.js';
import { generatePodStatus } from '../../../src/agent/status/generate-pod-status.js';
import { specResources } from '../../../src/agent/allocation/resize.js';
import type { PodRuntimeStatus, RuntimeContainer } from '../../../src/agent/runtime/pod-runtime-status.js';

const fixtures = join(import.meta.dirname, '..', '..', 'fixtures', 'go-kubelet-1.36');
const pods = (JSON.parse(readFileSync(join(fixtures, 'pods.json'), 'utf8')) as { items: Pod[] }).items;

/** The runtime's view of a fixture pod: each container in the state, and with the times, its status shows. */
function runtimeOf(pod: Pod): PodRuntimeStatus {
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  const containers = statuses.map((s, i): RuntimeContainer => {
    const started = Date.parse((s.state.running?.startedAt ?? s.state.terminated?.startedAt)!);
    return {
      id: s.containerID!.split('://')[1],
      name: s.name,
      state: s.state.running ? 'running' : 'exited',
      createdAt: started + i,
      startedAt: started,
      finishedAt: s.state.terminated ? Date.parse(s.state.terminated.finishedAt!) : 0,
      exitCode: s.state.terminated?.exitCode ?? 0,
      reason: s.state.terminated?.reason ?? '',
      message: '',
      image: s.image,
      imageRef: s.imageID,
      hash: '',
      restartCount: s.restartCount,
      logPath: '',
      sandboxId: 'sandbox',
    };
  });
  return {
    uid: pod.metadata.uid!,
    name: pod.metadata.name!,
    namespace: pod.metadata.namespace!,
    sandboxes: [{ id: 'sandbox', ready: true, createdAt: 0, attempt: 0, ip: pod.status!.podIP! }],
    containers: containers.reverse(),
  };
}

/** A status with every time replaced, and without undefined fields (as its JSON). */
const withoutTimes = (status: unknown): unknown =>
  JSON.parse(JSON.stringify(status, (key, value: unknown) => (/(Time|At)$/.test(key) ? 'time' : value)));

describe('a pod status, as the Go kubelet v1.36.2 wrote it', () => {
  for (const pod of pods)
    it(`${pod.metadata.name}: every field but the times`, () => {
      const allocation = specResources(pod);
      const status = generatePodStatus(pod, runtimeOf(pod), {
        nowMs: Date.parse(pod.status!.startTime!),
        nodeIP: pod.status!.hostIP!,
        runtimeName: 'containerd',
        reasons: new Map(),
        previous: pod.status,
        allocation: { allocated: allocation, actuated: allocation, resize: {} },
        probes: { startup: () => 'success', readiness: () => 'success' },
      });
      expect(withoutTimes(status)).toEqual(withoutTimes(pod.status));
    });
});
