/** Loads proto/runtime/v1/api.proto once, with the options every CRI peer in this project uses. */
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const here = dirname(fileURLToPath(import.meta.url));
/** Absolute path of the CRI proto (works from src/ under tsx and from dist/). */
export const criProtoPath = join(here, '..', '..', 'proto', 'runtime', 'v1', 'api.proto');

/** Options matching the shapes in types.ts. */
export const protoOptions: protoLoader.Options = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

let cached: { RuntimeService: grpc.ServiceClientConstructor; ImageService: grpc.ServiceClientConstructor } | undefined;

/** The two service constructors of package runtime.v1. */
export function criServices() {
  if (!cached) {
    const def = protoLoader.loadSync(criProtoPath, protoOptions);
    const pkg = grpc.loadPackageDefinition(def) as unknown as { runtime: { v1: Record<string, grpc.ServiceClientConstructor> } };
    cached = { RuntimeService: pkg.runtime.v1.RuntimeService, ImageService: pkg.runtime.v1.ImageService };
  }
  return cached;
}
