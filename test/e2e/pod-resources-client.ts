/** A real gRPC client (grpc-js) of the kubelet's pod-resources API on `<root-dir>/pod-resources/kubelet.sock`. */
import { join } from 'node:path';

export async function podResourcesClient(rootDir: string) {
  const grpc = await import('@grpc/grpc-js');
  const protoLoader = await import('@grpc/proto-loader');
  const def = protoLoader.loadSync(join(import.meta.dirname, '..', '..', 'proto', 'podresources', 'v1', 'api.proto'), {
    keepCase: true,
    longs: Number,
    defaults: true,
  });
  const Lister = (grpc.loadPackageDefinition(def) as any).v1.PodResourcesLister;
  const client = new Lister(
    `unix://${join(rootDir, 'pod-resources', 'kubelet.sock')}`,
    grpc.credentials.createInsecure(),
  );
  const call = <T>(m: string, req: object) =>
    new Promise<T>((resolve, reject) =>
      client[m](req, (err: Error | null, res: T) => (err ? reject(err) : resolve(res))),
    );
  return { grpc, client, call };
}
