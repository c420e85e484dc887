/**
 * Local storage limits (upstream eviction manager's localStorageEviction), pure: a pod is evicted
 * at once when an emptyDir (on disk) holds more than its `sizeLimit`, when the pod's ephemeral
 * storage (containers' writable layers and logs, emptyDir and configMap volumes, the pod's own files) exceeds the
 * pod's `ephemeral-storage` limit (its containers' as upstream's PodLimits adds them up), or when one container's (or
 * sidecar's) writable layer and logs exceed its own limit — checked in that order, with upstream's messages.
 */
import type { Container, Pod } from '../../api/types.js';
import { bytes, formatQuantity, quantityFormat } from '../../api/quantity.js';
import { podResourceLimits } from '../../api/pod-resources.js';

/** What a pod uses on local disk. */
export interface LocalStorageUsage {
  /** By volume name: bytes used (measured volumes only). */
  volumes: ReadonlyMap<string, number>;
  /** By container name: writable layer + logs, bytes. */
  containers: ReadonlyMap<string, number>;
  /**
   * The pod's own files in its ephemeral storage (the files directly under its log directory, its etc-hosts), bytes.
   */
  podFiles?: number;
}

interface VolumeSpec {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: string };
  configMap?: unknown;
}

/** Upstream's eviction signals of local storage limits (the kubelet_evictions label). */
export type LocalStorageSignal = 'emptydirfs.limit' | 'ephemeralpodfs.limit' | 'ephemeralcontainerfs.limit';

/** The first local storage limit `pod` exceeds (its signal and upstream's message), or undefined. */
export function localStorageViolation(
  pod: Pod,
  u: LocalStorageUsage,
): { signal: LocalStorageSignal; message: string } | undefined {
  const volumes = (pod.spec.volumes ?? []) as VolumeSpec[];
  for (const v of volumes) {
    const limit = v.emptyDir?.sizeLimit;
    const used = u.volumes.get(v.name);
    if (limit === undefined || used === undefined || v.emptyDir?.medium === 'Memory') continue;
    const max = bytes(limit);
    if (max !== undefined && max > 0 && used > max)
      return {
        signal: 'emptydirfs.limit',
        message: `Usage of EmptyDir volume "${v.name}" exceeds the limit "${asGoQuantity(limit)}". `,
      };
  }
  // The pod's limit as upstream's resourcehelper.PodLimits adds it up (sidecars, init containers, overhead).
  const total = podResourceLimits(pod)['ephemeral-storage'];
  const podLimit = bytes(total);
  if (total !== undefined && podLimit !== undefined) {
    const local = volumes
      .filter((v) => (v.emptyDir && v.emptyDir.medium !== 'Memory') || v.configMap)
      .map((v) => u.volumes.get(v.name) ?? 0);
    const used = [...u.containers.values(), ...local].reduce((n, b) => n + b, u.podFiles ?? 0);
    if (used > podLimit)
      return {
        signal: 'ephemeralpodfs.limit',
        message: `Pod ephemeral local storage usage exceeds the total limit of containers ${total}. `,
      };
  }
  // Sidecars have limits of their own too (upstream kubernetes/kubernetes#138462).
  for (const c of [...pod.spec.containers, ...(pod.spec.initContainers ?? []).filter(isRestartable)]) {
    const limit = c.resources?.limits?.['ephemeral-storage'];
    const max = bytes(limit);
    const used = u.containers.get(c.name);
    if (limit !== undefined && max && used !== undefined && used > max)
      return {
        signal: 'ephemeralcontainerfs.limit',
        message: `Container ${c.name} exceeded its local ephemeral storage limit "${asGoQuantity(limit)}". `,
      };
  }
  return undefined;
}

const isRestartable = (c: Container) => c.restartPolicy === 'Always';

/** A quantity as Go's Quantity.String() spells it once parsed ("1024Mi" → "1Gi"). */
function asGoQuantity(q: string): string {
  const n = bytes(q);
  return n === undefined ? q : formatQuantity(n, quantityFormat(q));
}
