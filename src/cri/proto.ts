/** Loads proto/runtime/v1/api.proto once, with the options every CRI peer in this project uses. */
import * as protoLoader from '@grpc/proto-loader';
import { packagePath } from '../lib/package-path.js';

/** Absolute path of the CRI proto (works from src/ under tsx and from the bundle in dist/). */
export const criProtoPath = packagePath('proto', 'runtime', 'v1', 'api.proto');

/** Options matching the shapes in types.ts. */
export const protoOptions: protoLoader.Options = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true };

let cached: protoLoader.PackageDefinition | undefined;

/** The package definition of runtime.v1 (services by full name, then methods with their codecs). */
function criDefinition(): protoLoader.PackageDefinition {
  cached ??= protoLoader.loadSync(criProtoPath, protoOptions);
  return cached;
}

/** The methods of `runtime.v1.<service>`, by name. */
export function criMethods(service: 'RuntimeService' | 'ImageService'): Record<string, protoLoader.MethodDefinition<object, object>> {
  return criDefinition()[`runtime.v1.${service}`] as protoLoader.ServiceDefinition as Record<string, protoLoader.MethodDefinition<object, object>>;
}
