/**
 * Structural validation of pod manifests at the edge (file and URL sources). Returns every
 * problem with its field path, as the apiserver's validation would name it.
 */
import * as z from 'zod/mini';
import '../lib/zod.js';
import type { Pod } from './types.js';

const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const opt = z.optional;
const containerSchema = z.looseObject({
  name: z.string().check(z.regex(dns1123Label, 'must be a DNS-1123 label'), z.maxLength(63)),
  image: z.string().check(z.minLength(1, 'Required value')),
  command: opt(z.array(z.string())),
  args: opt(z.array(z.string())),
  workingDir: opt(z.string()),
  env: opt(z.array(z.looseObject({ name: z.string().check(z.minLength(1)), value: opt(z.string()) }))),
  imagePullPolicy: opt(z.enum(['Always', 'IfNotPresent', 'Never'])),
  tty: opt(z.boolean()),
  stdin: opt(z.boolean()),
});

const podSchema = z.looseObject({
  apiVersion: opt(z.literal('v1')),
  kind: opt(z.literal('Pod')),
  metadata: z.looseObject({
    name: z.string().check(z.regex(dns1123Subdomain, 'must be a DNS-1123 subdomain'), z.maxLength(253)),
    namespace: opt(z.string().check(z.regex(dns1123Label, 'must be a DNS-1123 label'))),
    labels: opt(z.record(z.string(), z.string())),
    annotations: opt(z.record(z.string(), z.string())),
  }),
  spec: z.looseObject({
    containers: z.array(containerSchema).check(z.minLength(1, 'must have at least one container')),
    initContainers: opt(z.array(containerSchema)),
    restartPolicy: opt(z.enum(['Always', 'OnFailure', 'Never'])),
    terminationGracePeriodSeconds: opt(z.int().check(z.minimum(0))),
    hostNetwork: opt(z.boolean()),
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
  const annotationBytes = Object.entries(pod.metadata.annotations ?? {}).reduce(
    (n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v),
    0,
  );
  if (annotationBytes > MAX_ANNOTATIONS_BYTES)
    errors.push(`metadata.annotations: Too long: must have at most ${MAX_ANNOTATIONS_BYTES} bytes`);
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    if (names.has(c.name)) errors.push(`spec.containers: Duplicate value: "${c.name}"`);
    names.add(c.name);
  }
  errors.push(...hostPortConflicts(pod.spec.containers, 'spec.containers'));
  return errors.length ? { ok: false, errors } : { ok: true, pod };
}

/**
 * Upstream checkHostPortConflicts: two ports of a pod's containers with the same host IP,
 * protocol and host port, named as upstream ("hostIP/protocol/port"). Pure.
 */
export function hostPortConflicts(
  containers: readonly { ports?: readonly { hostPort?: number; hostIP?: string; protocol?: string }[] }[],
  path: string,
): string[] {
  const seen = new Set<string>();
  const errors: string[] = [];
  containers.forEach((c, ci) =>
    (c.ports ?? []).forEach((p, pi) => {
      if (!p.hostPort) return;
      const key = `${p.hostIP ?? ''}/${p.protocol ?? 'TCP'}/${p.hostPort}`;
      if (seen.has(key)) errors.push(`${path}[${ci}].ports[${pi}].hostPort: Duplicate value: "${key}"`);
      seen.add(key);
    }),
  );
  return errors;
}

/** Upstream's limit on a DNS-1123 subdomain, which a pod's name is. */
const MAX_POD_NAME = 253;

/**
 * What upstream's validation finds wrong with a static pod once the kubelet named it (the
 * manifest's name and the node's, which together can be too long or not a DNS-1123 subdomain). Pure.
 */
export function staticPodNameErrors(name: string): string[] {
  const errors: string[] = [];
  if (name.length > MAX_POD_NAME)
    errors.push(`metadata.name: Invalid value: "${name}": must be no more than ${MAX_POD_NAME} characters`);
  if (!dns1123Subdomain.test(name))
    errors.push(
      `metadata.name: Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
    );
  return errors;
}
