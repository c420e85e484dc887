/**
 * The pod-resources gRPC API (podresources.v1 PodResourcesLister: List, GetAllocatableResources,
 * Get) on a unix socket, as device plugins and monitoring agents expect it at
 * `<root-dir>/pod-resources/kubelet.sock`. tskubelet has no CPU, memory or device managers yet,
 * so containers report no exclusive cpus, memory blocks or devices (empty lists, as the Go
 * kubelet with the `none` policies does); every running pod and container is listed.
 */
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { Pod } from '../api/types.js';

const protoPath = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'proto', 'podresources', 'v1', 'api.proto');

function podResources(p: Pod) {
  const containers = [...(p.spec.initContainers ?? []).filter((c) => c.restartPolicy === 'Always'), ...p.spec.containers];
  return {
    name: p.metadata.name,
    namespace: p.metadata.namespace,
    containers: containers.map((c) => ({ name: c.name, devices: [], cpu_ids: [], memory: [] })),
  };
}

/** Serves the API for `pods()` on `socketPath`; resolves with a stop function. */
export async function servePodResources(socketPath: string, o: { pods(): Pod[] }): Promise<() => Promise<void>> {
  const def = protoLoader.loadSync(protoPath, { keepCase: true, longs: Number, enums: String, defaults: true });
  const svc = (grpc.loadPackageDefinition(def) as unknown as { v1: { PodResourcesLister: grpc.ServiceClientConstructor } }).v1.PodResourcesLister.service;
  const server = new grpc.Server();
  server.addService(svc, {
    List: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { pod_resources: o.pods().map(podResources) }),
    GetAllocatableResources: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { devices: [], cpu_ids: [], memory: [] }),
    Get: (call: grpc.ServerUnaryCall<{ pod_name: string; pod_namespace: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      const p = o.pods().find((x) => x.metadata.name === call.request.pod_name && x.metadata.namespace === call.request.pod_namespace);
      if (!p) {
        cb({ code: grpc.status.NOT_FOUND, details: `pod ${call.request.pod_name} not found in namespace ${call.request.pod_namespace}` });
        return;
      }
      cb(null, { pod_resources: podResources(p) });
    },
  });
  await mkdir(dirname(socketPath), { recursive: true, mode: 0o750 });
  await rm(socketPath, { force: true });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socketPath}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  return () =>
    new Promise<void>((resolve) =>
      server.tryShutdown(() => {
        void rm(socketPath, { force: true }).then(() => resolve());
      }),
    );
}
