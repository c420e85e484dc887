/**
 * A pod's runtime handler from its RuntimeClass (upstream runtimeclass.Manager
 * LookupRuntimeHandler): no `runtimeClassName` is the runtime's default handler (""); a named one
 * is read from node.k8s.io/v1 RuntimeClass through the object cache. The errors are upstream's:
 * the pod's sandbox is not created while they last.
 */
import type { Pod } from '../../api/types.js';
import { messageOf } from '../../lib/errors.js';

/** What a RuntimeClass says (node.k8s.io/v1: `handler` is a top-level field). */
interface RuntimeClass {
  handler?: string;
}

/** The handler `pod` runs with; `get` reads an API object by path (null: 404). */
export async function lookupRuntimeHandler(pod: Pod, get: <T>(path: string) => Promise<T | null>): Promise<string> {
  const name = (pod.spec as { runtimeClassName?: string }).runtimeClassName;
  if (!name) return '';
  let rc: RuntimeClass | null;
  try {
    rc = await get<RuntimeClass>(`/apis/node.k8s.io/v1/runtimeclasses/${encodeURIComponent(name)}`);
  } catch (err) {
    throw new Error(`failed to lookup RuntimeClass ${name}: ${messageOf(err)}`, { cause: err });
  }
  if (!rc) throw new Error(`runtimeclass.node.k8s.io "${name}" not found`);
  return rc.handler ?? '';
}
