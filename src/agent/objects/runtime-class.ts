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

/** The RuntimeClass name of `pod` ("" for the default). */
const classOf = (pod: Pod) => (pod.spec as { runtimeClassName?: string }).runtimeClassName ?? '';

/** The handler `pod` runs with; `get` reads an API object by path (null: 404). */
export async function lookupRuntimeHandler(pod: Pod, get: <T>(path: string) => Promise<T | null>): Promise<string> {
  const name = classOf(pod);
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

/** At most this many classes are remembered (a node runs pods of a handful). */
const MAX_CLASSES = 1000;

/**
 * The handlers of pods' RuntimeClasses: looked up (async) when a sandbox is made, and remembered
 * so that what depends on a handler's features (recursive read-only mounts, in the pod's status)
 * can ask synchronously, as upstream's informer-backed manager answers. Without an apiserver
 * every pod has the default handler, and no handler is known to have features (upstream has no
 * RuntimeClass manager then).
 */
export class RuntimeClassHandlers {
  private readonly byClass = new Map<string, string>();
  constructor(private readonly get?: <T>(path: string) => Promise<T | null>) {}

  /** The pod's handler, read now (lookupRuntimeHandler's errors). */
  async handlerOf(pod: Pod): Promise<string> {
    if (!this.get) return '';
    const handler = await lookupRuntimeHandler(pod, this.get);
    const name = classOf(pod);
    if (name) {
      if (this.byClass.size >= MAX_CLASSES && !this.byClass.has(name)) this.byClass.clear();
      this.byClass.set(name, handler);
    }
    return handler;
  }

  /** The pod's handler as last read; undefined while its class has not been read, and always without an apiserver. */
  knownHandlerOf(pod: Pod): string | undefined {
    if (!this.get) return undefined;
    const name = classOf(pod);
    return name ? this.byClass.get(name) : '';
  }
}

/**
 * Whether `handler` makes recursive read-only mounts, by the runtime's Status list (upstream
 * runtimeHandlerSupportsRecursiveReadOnlyMounts): no list (a runtime before containerd 2) or an
 * unlisted handler cannot. Pure.
 */
export function handlerSupportsRecursiveReadOnly(
  handlers: readonly { name: string; features: { recursiveReadOnlyMounts: boolean } }[],
  handler: string | undefined,
): boolean {
  if (handler === undefined) return false;
  return handlers.find((h) => h.name === handler)?.features.recursiveReadOnlyMounts ?? false;
}
