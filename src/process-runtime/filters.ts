/** CRI list filters as pure predicates (label selectors are ANDed exact matches). */
import type * as cri from '../cri/types.js';

/** True when every selector entry is present in `labels` with the same value. */
export function matchesLabels(labels: cri.Labels, selector: cri.Labels | undefined): boolean {
  if (!selector) return true;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** PodSandboxFilter semantics. */
export function sandboxMatches(s: cri.PodSandbox, f: cri.PodSandboxFilter | undefined): boolean {
  if (!f) return true;
  if (f.id && !s.id.startsWith(f.id)) return false;
  if (f.state && f.state.state !== s.state) return false;
  return matchesLabels(s.labels, f.label_selector);
}

/** ContainerFilter semantics. */
export function containerMatches(c: cri.Container, f: cri.ContainerFilter | undefined): boolean {
  if (!f) return true;
  if (f.id && !c.id.startsWith(f.id)) return false;
  if (f.pod_sandbox_id && !c.pod_sandbox_id.startsWith(f.pod_sandbox_id)) return false;
  if (f.state && f.state.state !== c.state) return false;
  return matchesLabels(c.labels, f.label_selector);
}
