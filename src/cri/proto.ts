/** Loads the project's proto files once each, with the options every gRPC peer in this project uses. */
import * as protoLoader from '@grpc/proto-loader';
import { packagePath } from '../lib/package-path.js';

/** Options matching the shapes in types.ts. */
export const protoOptions: protoLoader.Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

const cached = new Map<string, protoLoader.PackageDefinition>();

/**
 * The methods of the service `fullName` ("runtime.v1.RuntimeService") in proto/<file> (found from src/ under tsx and
 * from the bundle in dist/), by method name.
 */
export function serviceMethods(
  file: string,
  fullName: string,
): Record<string, protoLoader.MethodDefinition<object, object>> {
  let def = cached.get(file);
  if (!def) cached.set(file, (def = protoLoader.loadSync(packagePath('proto', file), protoOptions)));
  const svc = def[fullName] as protoLoader.ServiceDefinition | undefined;
  if (!svc) throw new Error(`no service ${fullName} in proto/${file}`);
  return svc as Record<string, protoLoader.MethodDefinition<object, object>>;
}

/** The methods of `runtime.v1.<service>`, by name. */
export function criMethods(
  service: 'RuntimeService' | 'ImageService',
): Record<string, protoLoader.MethodDefinition<object, object>> {
  return serviceMethods('runtime/v1/api.proto', `runtime.v1.${service}`);
}
