/**
 * Static pod semantics (upstream pkg/kubelet/config/common.go applyDefaults): API defaults,
 * name suffixed with the node name, UID = md5 of the pod content + source, config.hash
 * annotation, spec.nodeName, the NoExecute toleration for file pods, phase Pending.
 */
import { createHash } from 'node:crypto';
import type { Pod } from '../../api/types.js';
import { applyPodDefaults } from '../../api/defaults.js';
import { staticPodNameErrors } from '../../api/validate.js';
import { staticPodAPIReference } from './static-pod-references.js';
import { ConfigHashAnnotation } from './types.js';

/** JSON with object keys sorted, so equal objects hash equally. */
export function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** Where a static pod came from. */
export interface StaticPodOrigin {
  nodeName: string;
  kind: 'file' | 'http';
  location: string;
}

/** Turns a decoded manifest pod into the pod the kubelet runs. */
export function toStaticPod(raw: Pod, origin: StaticPodOrigin): Pod {
  const pod = applyPodDefaults(raw);
  let uid = pod.metadata.uid;
  if (!uid) {
    const h = createHash('md5').update(stableJson(pod));
    if (origin.kind === 'file') h.update(`host:${origin.nodeName}`).update(`file:${origin.location}`);
    else h.update(`url:${origin.location}`);
    uid = h.digest('hex');
  }
  const tolerations = [...((pod.spec.tolerations as unknown[]) ?? [])];
  if (
    origin.kind === 'file' &&
    !tolerations.some(
      (t) =>
        (t as Record<string, unknown>).operator === 'Exists' &&
        (t as Record<string, unknown>).effect === 'NoExecute' &&
        !(t as Record<string, unknown>).key,
    )
  ) {
    tolerations.push({ operator: 'Exists', effect: 'NoExecute' });
  }
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      uid,
      name: `${pod.metadata.name}-${origin.nodeName.toLowerCase()}`,
      annotations: { ...pod.metadata.annotations, [ConfigHashAnnotation]: uid },
    },
    spec: { ...pod.spec, nodeName: origin.nodeName, tolerations },
    status: { phase: 'Pending' },
  };
}

/**
 * The decoded pods of a manifest as the kubelet runs them (`toStatic`), those whose name the
 * node's suffix makes invalid moved to the errors (upstream validates after applyDefaults). Pure
 * but for `toStatic`.
 */
export function namedStaticPods(
  decoded: { pods: Pod[]; errors: string[] },
  toStatic: (pod: Pod) => Pod,
  origin: string,
): { pods: Pod[]; errors: string[] } {
  const pods: Pod[] = [];
  const errors = [...decoded.errors];
  for (const raw of decoded.pods) {
    const pod = toStatic(raw);
    const invalid = staticPodNameErrors(pod.metadata.name!);
    if (invalid.length) {
      errors.push(`${origin}: invalid pod: ${invalid.join('; ')}`);
      continue;
    }
    let reference: string | undefined;
    try {
      reference = staticPodAPIReference(pod);
    } catch (err) {
      errors.push(`${origin}: ${(err as Error).message}`);
      continue;
    }
    if (reference) errors.push(`${origin}: static pods may not reference ${reference}`);
    else pods.push(pod);
  }
  return { pods, errors };
}
