/** Grace periods (upstream minimumGracePeriodInSeconds and the pod's effective grace period). */
import type { Pod } from '../../api/types.js';

/** The smallest grace period the kubelet gives (upstream minimumGracePeriodInSeconds). */
export const MIN_GRACE_SECONDS = 2;

/** The grace period for killing `pod`: override, deletion grace, spec, default 30 s. */
export function gracePeriodOf(pod: Pod, override?: number): number {
  const g = override ?? pod.metadata.deletionGracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30;
  return g === 0 ? 0 : Math.max(MIN_GRACE_SECONDS, g);
}
