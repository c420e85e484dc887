/**
 * The ConfigMaps or the Secrets the node's pods use (upstream's configmap and secret managers, cacheBasedManager):
 * a pod is registered when it syncs and unregistered once it has terminated, and the store behind the manager keeps
 * each object for as long as a registered pod names it. How the store keeps an object follows
 * `configMapAndSecretChangeDetectionStrategy`:
 *
 * - `Watch` (the default): one watch per object (watching-object-store.ts);
 * - `Cache`: fetched again after a TTL or when a pod naming it registers (caching-object-store.ts);
 * - `Get`: fetched from the apiserver every time.
 */
import type { Pod } from '../../api/types.js';
import { apiError, type KubeClient } from '../../lib/kube-client.js';

/** The resources the managers keep. */
export type ManagedResource = 'configmaps' | 'secrets';

/** What a manager's store does (upstream manager.Store). */
export interface ObjectStore {
  /** `podUid` names the object; the first reference makes the store keep it. */
  addReference(namespace: string, name: string, podUid: string): void;
  /** `podUid` no longer names the object; without references the store lets it go. */
  deleteReference(namespace: string, name: string, podUid: string): void;
  /** The object (null: it does not exist). */
  get<T>(namespace: string, name: string): Promise<T | null>;
}

/** An object fetched from the apiserver (null: 404); any other answer throws. */
export async function fetchObject<T>(
  client: KubeClient,
  resource: ManagedResource,
  namespace: string,
  name: string,
  query?: Record<string, string>,
): Promise<T | null> {
  const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/${resource}/${encodeURIComponent(name)}`;
  const response = await client.request<T & { message?: string }>({ path, query });
  if (response.status === 404) return null;
  if (response.status !== 200 || !response.body) throw apiError(`GET ${path}`, response);
  return response.body;
}

/** The `Get` strategy's store: nothing is kept, every read goes to the apiserver. */
export function gettingObjectStore(client: KubeClient, resource: ManagedResource): ObjectStore {
  return {
    addReference: () => {},
    deleteReference: () => {},
    get: (namespace, name) => fetchObject(client, resource, namespace, name),
  };
}

/** Registers pods' references with a store (upstream cacheBasedManager). */
export class ObjectManager {
  private readonly registered = new Map<string, { namespace: string; names: string[] }>();

  constructor(
    private readonly store: ObjectStore,
    /** The names a pod refers to (referenced-objects.ts). */
    private readonly namesOf: (pod: Pod) => string[],
  ) {}

  /**
   * Registers `pod` (again, after a spec change): its new references are added before its old ones are deleted, so
   * an object it keeps naming is not dropped and fetched again in between.
   */
  registerPod(pod: Pod): void {
    const uid = pod.metadata.uid!;
    const namespace = pod.metadata.namespace ?? 'default';
    const names = this.namesOf(pod);
    const previous = this.registered.get(uid);
    this.registered.set(uid, { namespace, names });
    for (const name of names) this.store.addReference(namespace, name, uid);
    for (const name of previous?.names ?? []) this.store.deleteReference(previous!.namespace, name, uid);
  }

  /** Unregisters the pod with `uid` (a no-op for a pod that was never registered). */
  unregisterPod(uid: string): void {
    const previous = this.registered.get(uid);
    if (!previous) return;
    this.registered.delete(uid);
    for (const name of previous.names) this.store.deleteReference(previous.namespace, name, uid);
  }

  /** The object (null: it does not exist). */
  get<T>(namespace: string, name: string): Promise<T | null> {
    return this.store.get<T>(namespace, name);
  }
}
