/**
 * Route schema fragments. Route schemas document the node API (they generate `openapi/`); the
 * handlers validate input themselves so that errors carry the Go kubelet's exact codes and
 * messages, which is why the servers do not compile these schemas into validators.
 */
import type { FastifySchema } from 'fastify';

/** A valid pod namespace / name / container name / uid path segment (DNS-1123-ish, as upstream validates). */
export const pathSegment = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** The first invalid one of named path segments (`invalid <name> "<value>"`); absent ones are skipped. */
export function invalidPathSegment(segments: [name: string, value: string | undefined][]): string | undefined {
  for (const [what, v] of segments)
    if (v !== undefined && (v.length > 253 || !pathSegment.test(v))) return `invalid ${what} "${v}"`;
  return undefined;
}

/**
 * A URL path's segments, each percent-decoded; a segment that is not valid percent-encoding becomes `undecodable(raw)`
 * (a value the caller then refuses or keeps as it came). Pure.
 */
export function decodedPathSegments(pathname: string, undecodable: (raw: string) => string): string[] {
  return pathname
    .split('/')
    .filter(Boolean)
    .map((segment) => {
      try {
        return decodeURIComponent(segment);
      } catch {
        return undecodable(segment);
      }
    });
}

/** A JSON Schema reference to a component in the generated document. */
export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** A JSON response. */
export const jsonResponse = (description: string, schemaName: string) => ({
  description,
  content: { 'application/json': { schema: ref(schemaName) } },
});

/** A text/plain response. */
export const textResponse = (description: string) => ({
  description,
  content: { 'text/plain': { schema: { type: 'string' } } },
});

/** A Kubernetes Status error response. */
export const statusResponse = (description: string) => jsonResponse(description, 'Status');

/** Shared component schemas (abridged: the full Pod type is core/v1's). */
export const componentSchemas = {
  Status: {
    type: 'object',
    description: 'meta/v1 Status: the body of every error answer with a JSON body.',
    required: ['kind', 'apiVersion', 'status', 'code'],
    properties: {
      kind: { const: 'Status' },
      apiVersion: { const: 'v1' },
      metadata: { type: 'object' },
      status: { enum: ['Success', 'Failure'] },
      message: { type: 'string' },
      reason: { type: 'string' },
      code: { type: 'integer' },
    },
  },
  Pod: {
    type: 'object',
    description: 'core/v1 Pod (see the Kubernetes API reference).',
    properties: { metadata: { type: 'object' }, spec: { type: 'object' }, status: { type: 'object' } },
  },
  Configz: {
    type: 'object',
    required: ['kubeletconfig'],
    properties: {
      kubeletconfig: {
        type: 'object',
        description: 'KubeletConfiguration fields (kubelet.config.k8s.io/v1beta1 names).',
      },
    },
  },
  Summary: {
    type: 'object',
    description:
      'kubelet stats/v1alpha1 Summary: `node` (NodeStats) and `pods` (PodStats[]), upstream field names; unknown figures are omitted.',
    required: ['node', 'pods'],
    properties: { node: { type: 'object' }, pods: { type: 'array', items: { type: 'object' } } },
  },
  MachineInfo: {
    type: 'object',
    description:
      'cAdvisor MachineInfo (num_cores, memory_capacity, machine_id, system_uuid, boot_id, disk_map: the disks of /sys/block but loop, ram and sr devices by "major:minor" with name, major, minor, size in bytes and scheduler, …).',
  },
  PodList: {
    type: 'object',
    description: 'core/v1 PodList.',
    required: ['kind', 'apiVersion', 'items'],
    properties: {
      kind: { const: 'PodList' },
      apiVersion: { const: 'v1' },
      metadata: { type: 'object' },
      items: { type: 'array', items: ref('Pod') },
    },
  },
} as const;

/** Marks a helper route (405 answers, disabled-endpoint catch-alls) as not part of the document. */
export const hidden = { hide: true } as { hide: true } & FastifySchema;
