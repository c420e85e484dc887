/**
 * A terminal verdict the kubelet reached itself (active deadline, eviction, preemption) and how it
 * shows in the pod's status: phase Failed with its reason and message and, when the kubelet
 * disrupted the pod, upstream's DisruptionTarget condition (reason TerminationByKubelet), its
 * transition time kept from the status before. Pure.
 */
import type { PodStatus } from '../../api/types.js';
import { rfc3339 } from '../../lib/time.js';

/** The verdict; `disruption`: the DisruptionTarget condition's message, when the kubelet disrupted the pod. */
export interface Verdict {
  reason: string;
  message: string;
  disruption?: string;
}

/** `st` with `verdict` applied (`previous`: the status before, `nowMs`: now). */
export function withVerdict(
  st: PodStatus,
  verdict: Verdict,
  previous: PodStatus | undefined,
  nowMs: number,
): PodStatus {
  const out: PodStatus = { ...st, phase: 'Failed', reason: verdict.reason, message: verdict.message };
  if (!verdict.disruption || st.conditions?.some((c) => c.type === 'DisruptionTarget')) return out;
  const since = previous?.conditions?.find((c) => c.type === 'DisruptionTarget')?.lastTransitionTime;
  out.conditions = [
    ...(st.conditions ?? []),
    {
      type: 'DisruptionTarget',
      ...(st.observedGeneration ? { observedGeneration: st.observedGeneration } : {}),
      status: 'True',
      lastProbeTime: null,
      lastTransitionTime: since ?? rfc3339(nowMs),
      reason: 'TerminationByKubelet',
      message: verdict.disruption,
    },
  ];
  return out;
}
