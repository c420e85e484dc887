/**
 * The pod-resources gRPC API (podresources.v1 PodResourcesLister: List, GetAllocatableResources,
 * Get) on a unix socket, as device plugins and monitoring agents expect it at
 * `<root-dir>/pod-resources/kubelet.sock`. Each container's exclusive CPUs are the CPU manager's
 * (the static policy; none with `none`), its devices the device manager's (one entry per resource
 * and NUMA node, with that node as its topology when the plugin gave one), and its
 * `dynamic_resources` the DRA claims it uses with their prepared devices; the allocatable cpu_ids
 * are the CPUs exclusive allocations come from and the allocatable devices every healthy device
 * of the plugins (one entry each, with its NUMA nodes, as upstream). Each container's memory is
 * the memory manager's blocks (the Static policy: type, size and NUMA nodes; none with `None`),
 * the allocatable memory each NUMA node's of each type. List names the active pods, Get any pod
 * the kubelet has.
 *
 * As upstream's server: calls beyond 100 a second (a burst of 10) are refused with
 * ResourceExhausted "rejected by rate limit", and Get of an unknown pod fails with upstream's
 * error (gRPC Unknown, as Go's plain errors are).
 */
import { mkdir, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Container, Pod } from '../api/types.js';
import type { DynamicResource } from '../agent/dra/claim-info.js';
import { GrpcCallError, GrpcCode } from '../cri/grpc-status.js';
import { serveUnary, type UnaryHandler } from '../cri/grpc-server.js';
import { serviceMethods } from '../cri/proto.js';
import { TokenBucket } from '../lib/token-bucket.js';
import type { PodResourcesMethod } from '../agent/metrics/pod-resources-metrics.js';

/** Upstream's DefaultQPS and DefaultBurstTokens of the pod-resources endpoint. */
export const POD_RESOURCES_QPS = 100;
export const POD_RESOURCES_BURST = 10;

/** The CPU manager's view (agent compose-resource-managers.ts PodCpus). */
interface Cpus {
  allocatableCpus(): readonly number[];
  exclusiveCpus(podUid: string, name: string): readonly number[];
}

/** The memory manager's view: a container's memory blocks, and each NUMA node's allocatable memory. */
interface Memory {
  memoryOf(podUid: string, name: string): readonly MemoryBlockView[];
  allocatableMemory(): readonly MemoryBlockView[];
}
interface MemoryBlockView {
  numaAffinity: readonly number[] | null;
  type: string;
  size: number;
}

/** Blocks as pod-resources' ContainerMemory (upstream containerMemoryFromBlock). */
const containerMemory = (blocks: readonly MemoryBlockView[]) =>
  blocks.map((b) => ({ memory_type: b.type, size: b.size, topology: topologyOf(b.numaAffinity ?? []) }));

/** The device manager's view: a container's devices by resource, and the healthy devices. */
interface Devices {
  deviceGroupsOf(uid: string, container: string): { resource: string; ids: string[]; numaNode?: number }[];
  healthyDevices(): { resource: string; devices: { id: string; numaNodes?: readonly number[] }[] }[];
}

/** The DRA manager's view: the claims a container uses. */
type DynamicResourcesOf = (pod: Pod, container: Container) => DynamicResource[];

function podResources(
  p: Pod,
  o: { cpus?: Cpus; memory?: Memory; devices?: Devices; dynamicResources?: DynamicResourcesOf },
) {
  const containers = [
    ...(p.spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always'),
    ...p.spec.containers,
  ];
  return {
    name: p.metadata.name,
    namespace: p.metadata.namespace,
    containers: containers.map((c) => ({
      name: c.name,
      devices: (o.devices?.deviceGroupsOf(p.metadata.uid!, c.name) ?? []).map((d) => ({
        resource_name: d.resource,
        device_ids: d.ids,
        ...(d.numaNode === undefined ? {} : { topology: topologyOf([d.numaNode]) }),
      })),
      cpu_ids: [...(o.cpus?.exclusiveCpus(p.metadata.uid!, c.name) ?? [])],
      memory: containerMemory(o.memory?.memoryOf(p.metadata.uid!, c.name) ?? []),
      dynamic_resources: o.dynamicResources?.(p, c) ?? [],
    })),
  };
}

/** NUMA nodes as pod-resources' TopologyInfo. */
const topologyOf = (nodes: readonly number[]) => ({ nodes: nodes.map((ID) => ({ ID })) });

/** A pod that still runs or will: not Succeeded or Failed. */
const isActive = (p: Pod) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';

/** Serves the API for `pods()` on `socketPath`; resolves with a stop function. */
export async function servePodResources(
  socketPath: string,
  o: {
    pods(): Pod[];
    cpus?: Cpus;
    memory?: Memory;
    devices?: Devices;
    dynamicResources?: DynamicResourcesOf;
    /** Counts each call the rate limit let through, and whether it failed (the metrics). */
    onCall?: (method: PodResourcesMethod, failed: boolean) => void;
    /** The rate limit (tests); upstream's by default. */
    limiter?: TokenBucket;
  },
): Promise<() => Promise<void>> {
  const svc = serviceMethods('podresources/v1/api.proto', 'v1.PodResourcesLister');
  const limiter = o.limiter ?? new TokenBucket(POD_RESOURCES_QPS, POD_RESOURCES_BURST);
  const impl: Record<PodResourcesMethod, (req: { pod_name?: string; pod_namespace?: string }) => object> = {
    // List: the active pods only (KubeletPodResourcesListUseActivePods); Get answers for any pod the kubelet has.
    List: () => ({
      pod_resources: o
        .pods()
        .filter(isActive)
        .map((p) => podResources(p, o)),
    }),
    GetAllocatableResources: () => ({
      devices: (o.devices?.healthyDevices() ?? []).flatMap((d) =>
        d.devices.map(({ id, numaNodes }) => ({
          resource_name: d.resource,
          device_ids: [id],
          ...(numaNodes ? { topology: topologyOf(numaNodes) } : {}),
        })),
      ),
      cpu_ids: [...(o.cpus?.allocatableCpus() ?? [])],
      memory: containerMemory(o.memory?.allocatableMemory() ?? []),
    }),
    Get: (req) => {
      const p = o.pods().find((x) => x.metadata.name === req.pod_name && x.metadata.namespace === req.pod_namespace);
      if (!p)
        throw new GrpcCallError(GrpcCode.UNKNOWN, `pod ${req.pod_name} in namespace ${req.pod_namespace} not found`);
      return { pod_resources: podResources(p, o) };
    },
  };
  const methods: Record<string, UnaryHandler> = {};
  for (const [name, m] of Object.entries(svc)) {
    if (!(name in impl)) continue;
    const method = name as PodResourcesMethod;
    methods[m.path] = {
      requestDeserialize: (b) => m.requestDeserialize(b),
      responseSerialize: (r) => m.responseSerialize(r as object),
      handle: (req) => {
        if (!limiter.tryTake()) throw new GrpcCallError(GrpcCode.RESOURCE_EXHAUSTED, 'rejected by rate limit');
        try {
          const answer = impl[method](req as { pod_name?: string; pod_namespace?: string });
          o.onCall?.(method, false);
          return answer;
        } catch (err) {
          o.onCall?.(method, true);
          throw err;
        }
      },
    };
  }
  await mkdir(dirname(socketPath), { recursive: true, mode: 0o750 });
  await rm(socketPath, { force: true });
  const server = await serveUnary(socketPath, methods);
  return async () => {
    await server.close();
    await rm(socketPath, { force: true });
  };
}
