/** Pod config contracts: sources produce full snapshots; the merge turns them into updates. */
import type { Pod } from '../../api/types.js';

/** What an update asks of the kubelet (upstream kubetypes.PodOperation). */
export type PodOperation = 'ADD' | 'UPDATE' | 'REMOVE' | 'RECONCILE';

/** One batch of pods with the same operation from one source. */
export interface PodUpdate {
  op: PodOperation;
  source: string;
  pods: Pod[];
}

/** A source of pods. `start` must not block; it calls `emit` with every pod the source has now. */
export interface PodSource {
  /** Short source name: "file", "http" or "api" (kubernetes.io/config.source). */
  readonly name: string;
  start(opts: { signal: AbortSignal; emit: (pods: Pod[]) => void }): void;
}

/** Annotation keys the kubelet sets on pods from its sources. */
export const ConfigSourceAnnotation = 'kubernetes.io/config.source';
export const ConfigHashAnnotation = 'kubernetes.io/config.hash';
export const ConfigSeenAnnotation = 'kubernetes.io/config.seen';
export const ConfigMirrorAnnotation = 'kubernetes.io/config.mirror';

/** True for pods that came from a file or URL (static pods). */
export function isStaticPod(pod: Pod): boolean {
  const src = pod.metadata.annotations?.[ConfigSourceAnnotation];
  return src === 'file' || src === 'http';
}

/** True for a mirror pod (the apiserver's copy of a static pod). */
export function isMirrorPod(pod: Pod): boolean {
  return pod.metadata.annotations?.[ConfigMirrorAnnotation] !== undefined;
}
