/**
 * Structural validation of pod manifests at the edge (file and URL sources). Returns every
 * problem with its field path, as the apiserver's validation would name it.
 */
import { z } from 'zod';
import type { Pod } from './types.js';

const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const containerSchema = z.looseObject({
  name: z.string().regex(dns1123Label, 'must be a DNS-1123 label').max(63),
  image: z.string().min(1, 'Required value'),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  workingDir: z.string().optional(),
  env: z.array(z.looseObject({ name: z.string().min(1), value: z.string().optional() })).optional(),
  imagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
  tty: z.boolean().optional(),
  stdin: z.boolean().optional(),
});

const podSchema = z.looseObject({
  apiVersion: z.literal('v1').optional(),
  kind: z.literal('Pod').optional(),
  metadata: z.looseObject({
    name: z.string().regex(dns1123Subdomain, 'must be a DNS-1123 subdomain').max(253),
    namespace: z.string().regex(dns1123Label, 'must be a DNS-1123 label').optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
  spec: z.looseObject({
    containers: z.array(containerSchema).min(1, 'must have at least one container'),
    initContainers: z.array(containerSchema).optional(),
    restartPolicy: z.enum(['Always', 'OnFailure', 'Never']).optional(),
    terminationGracePeriodSeconds: z.number().int().min(0).optional(),
    hostNetwork: z.boolean().optional(),
  }),
});

/** Upstream TotalAnnotationSizeLimitB: keys and values of all annotations together. */
export const MAX_ANNOTATIONS_BYTES = 256 * 1024;

/** Validates a decoded object as a Pod; `ok: false` carries "path: reason" messages. */
export function validatePod(obj: unknown): { ok: true; pod: Pod } | { ok: false; errors: string[] } {
  const res = podSchema.safeParse(obj);
  if (!res.success) {
    return { ok: false, errors: res.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`) };
  }
  const pod = res.data as unknown as Pod;
  const names = new Set<string>();
  const errors: string[] = [];
  const annotationBytes = Object.entries(pod.metadata.annotations ?? {}).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
  if (annotationBytes > MAX_ANNOTATIONS_BYTES) errors.push(`metadata.annotations: Too long: must have at most ${MAX_ANNOTATIONS_BYTES} bytes`);
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    if (names.has(c.name)) errors.push(`spec.containers: Duplicate value: "${c.name}"`);
    names.add(c.name);
  }
  return errors.length ? { ok: false, errors } : { ok: true, pod };
}
