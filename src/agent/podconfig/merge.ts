/**
 * The merge step of PodConfig as a pure function: a source's previous pods plus its new
 * snapshot → the next state and the ADD / UPDATE / REMOVE / RECONCILE updates (upstream
 * config.go merge + checkAndUpdatePod). Duplicate pod names within a source are rejected.
 */
import type { Pod } from '../../api/types.js';
import { ConfigSeenAnnotation, ConfigSourceAnnotation } from './types.js';
import { deepEqual } from '../../lib/deep-equal.js';

/** The outcome of merging one snapshot. */
export interface MergeResult {
  next: Map<string, Pod>;
  adds: Pod[];
  updates: Pod[];
  removes: Pod[];
  reconciles: Pod[];
  errors: string[];
}

function annotationsWithoutSeen(p: Pod): Record<string, string> {
  const { [ConfigSeenAnnotation]: _seen, ...rest } = p.metadata.annotations ?? {};
  return rest;
}

/** True when the change needs the pod to be synced again (spec, labels, annotations, deletion). */
function needsUpdate(oldPod: Pod, newPod: Pod): boolean {
  return (
    !deepEqual(oldPod.spec, newPod.spec) ||
    !deepEqual(oldPod.metadata.labels ?? {}, newPod.metadata.labels ?? {}) ||
    !deepEqual(annotationsWithoutSeen(oldPod), annotationsWithoutSeen(newPod)) ||
    oldPod.metadata.deletionTimestamp !== newPod.metadata.deletionTimestamp ||
    oldPod.metadata.deletionGracePeriodSeconds !== newPod.metadata.deletionGracePeriodSeconds
  );
}

/** Merges `snapshot` into `previous` for `source`; `seenAt` stamps newly seen pods. */
export function mergeSnapshot(
  previous: ReadonlyMap<string, Pod>,
  snapshot: Pod[],
  source: string,
  seenAt: string,
): MergeResult {
  const res: MergeResult = { next: new Map(), adds: [], updates: [], removes: [], reconciles: [], errors: [] };
  const names = new Set<string>();
  for (const incoming of snapshot) {
    const fullName = `${incoming.metadata.name}_${incoming.metadata.namespace}`;
    if (names.has(fullName)) {
      res.errors.push(
        `duplicate pod name "${incoming.metadata.name}" in namespace "${incoming.metadata.namespace}" from source "${source}"; ignoring the later one`,
      );
      continue;
    }
    names.add(fullName);
    const uid = incoming.metadata.uid!;
    const old = previous.get(uid);
    const annotated: Pod = {
      ...incoming,
      metadata: {
        ...incoming.metadata,
        annotations: {
          ...incoming.metadata.annotations,
          [ConfigSourceAnnotation]: source,
          [ConfigSeenAnnotation]: old?.metadata.annotations?.[ConfigSeenAnnotation] ?? seenAt,
        },
      },
    };
    if (!old) {
      res.adds.push(annotated);
      res.next.set(uid, annotated);
    } else if (needsUpdate(old, annotated)) {
      res.updates.push(annotated);
      res.next.set(uid, annotated);
    } else if (!deepEqual(old.status ?? {}, annotated.status ?? {})) {
      res.reconciles.push(annotated);
      res.next.set(uid, annotated);
    } else {
      res.next.set(uid, old);
    }
  }
  for (const [uid, old] of previous) if (!res.next.has(uid)) res.removes.push(old);
  return res;
}
