/**
 * The resources a pod's status shows, as the Go kubelet v1.36.2 showed them for the pods of its fixtures
 * (test/fixtures/go-kubelet-1.36/pods.json, copied from ../shared/fixtures): each container the runtime has shows
 * its allocated requests (`allocatedResources`) and its resources (`{}` when it has none, an init container that
 * finished too), and the pod its requests added up and its resources, whether or not it sets pod-level resources
 * (InPlacePodLevelResourcesVerticalScaling, beta and on in v1.36). Regression: tskubelet showed `resources` only for
 * running containers that had some, and the pod's only with pod-level resources.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ContainerStatus, Pod } from '../../../src/api/types.js';
import { generatePodStatus } from '../../../src/agent/status/generate-pod-status.js';
import { specResources } from '../../../src/agent/allocation/resize.js';
import type { PodRuntimeStatus, RuntimeContainer } from '../../../src/agent/runtime/pod-runtime-status.js';

const fixtures = join(import.meta.dirname, '..', '..', 'fixtures', 'go-kubelet-1.36');
const pods = (JSON.parse(readFileSync(join(fixtures, 'pods.json'), 'utf8')) as { items: Pod[] }).items;

/** The runtime's view of a fixture pod: each container in the state its status shows. */
function runtimeOf(pod: Pod): PodRuntimeStatus {
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  const containers = statuses.map((s, i): RuntimeContainer => ({
    id: s.containerID!.split('://')[1],
    name: s.name,
    state: s.state.running ? 'running' : 'exited',
    createdAt: i + 1,
    startedAt: i + 1,
    finishedAt: s.state.terminated ? i + 2 : 0,
    exitCode: s.state.terminated?.exitCode ?? 0,
    reason: s.state.terminated?.reason ?? '',
    message: '',
    image: s.image,
    imageRef: s.imageID,
    hash: '',
    restartCount: s.restartCount,
    logPath: '',
    sandboxId: 'sandbox',
  }));
  return {
    uid: pod.metadata.uid!,
    name: pod.metadata.name!,
    namespace: pod.metadata.namespace!,
    sandboxes: [{ id: 'sandbox', ready: true, createdAt: 0, attempt: 0, ip: pod.status!.podIP! }],
    containers: containers.reverse(),
  };
}

const resourcesOf = (statuses: ContainerStatus[] | undefined) =>
  (statuses ?? []).map((s) => ({ name: s.name, resources: s.resources, allocatedResources: s.allocatedResources }));

describe("a pod status's resources, as the Go kubelet v1.36.2 showed them", () => {
  for (const pod of pods)
    it(`${pod.metadata.name}: every container's and the pod's`, () => {
      const allocation = specResources(pod);
      const status = generatePodStatus(pod, runtimeOf(pod), {
        nowMs: Date.parse(pod.status!.startTime!),
        nodeIP: pod.status!.hostIP!,
        runtimeName: 'containerd',
        reasons: new Map(),
        previous: pod.status,
        allocation: { allocated: allocation, actuated: allocation, resize: {} },
      });
      expect(status.phase).toBe(pod.status!.phase);
      expect(resourcesOf(status.containerStatuses)).toEqual(resourcesOf(pod.status!.containerStatuses));
      expect(resourcesOf(status.initContainerStatuses)).toEqual(resourcesOf(pod.status!.initContainerStatuses));
      expect(status.resources).toEqual(pod.status!.resources);
      expect(status.allocatedResources).toEqual(pod.status!.allocatedResources);
    });
});
