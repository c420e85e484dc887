/**
 * The `Cache` strategy's store (upstream's TTL-based objectStore): an object is fetched when it is first read, again
 * once its TTL has passed, and again after any pod naming it registers (every pod sync), so a pod that starts or
 * restarts a container sees the object as it is now. The TTL is the Node's `node.alpha.kubernetes.io/ttl`
 * annotation (seconds; the TTL controller sets it by cluster size), else one minute. A refresh that fails keeps
 * serving what was fetched before; an immutable object is never fetched again.
 */
import type { Clock } from '../../lib/clock.js';
import type { KubeClient } from '../../lib/kube-client.js';
import { fetchObject, type ManagedResource, type ObjectStore } from './object-manager.js';

/** Upstream's TTL when the Node carries no TTL annotation. */
export const DEFAULT_OBJECT_TTL_MS = 60_000;

type Stored = { metadata?: { resourceVersion?: string }; immutable?: boolean };

interface Item {
  references: number;
  /** Unset: not fetched since the last registration. */
  data?: { object: Stored | null; fetchedAtMs: number };
}

/**
 * Whether `fetched` is older than `cached` by resourceVersion (upstream isObjectOlder: a GET served from the
 * apiserver's watch cache may lag what was read before). Pure.
 */
export function isOlder(fetched: Stored | null, cached: Stored | null): boolean {
  const fetchedVersion = Number(fetched?.metadata?.resourceVersion);
  const cachedVersion = Number(cached?.metadata?.resourceVersion);
  return Number.isFinite(fetchedVersion) && Number.isFinite(cachedVersion) && fetchedVersion < cachedVersion;
}

/** Objects kept for a TTL. */
export class CachingObjectStore implements ObjectStore {
  private readonly items = new Map<string, Item>();

  constructor(
    private readonly deps: {
      client: KubeClient;
      resource: ManagedResource;
      clock: Clock;
      /** The Node's TTL annotation in ms, when it has one. */
      nodeTtlMs?: () => number | undefined;
    },
  ) {}

  addReference(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const item = this.items.get(key) ?? { references: 0 };
    item.references++;
    // The next read fetches it: a pod that registers sees the object as it is now.
    if (!item.data?.object?.immutable) item.data = undefined;
    this.items.set(key, item);
  }

  deleteReference(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const item = this.items.get(key);
    if (!item) return;
    if (--item.references <= 0) this.items.delete(key);
  }

  async get<T>(namespace: string, name: string): Promise<T | null> {
    const item = this.items.get(`${namespace}/${name}`);
    // Not registered (a volume's secret named by its PersistentVolume, not by a pod): read as it is.
    if (!item) return fetchObject<T>(this.deps.client, this.deps.resource, namespace, name);
    const now = this.deps.clock.now();
    const ttlMs = this.deps.nodeTtlMs?.() ?? DEFAULT_OBJECT_TTL_MS;
    const cached = item.data;
    if (cached && (cached.object?.immutable || now < cached.fetchedAtMs + ttlMs)) return cached.object as T | null;
    let fetched: Stored | null;
    try {
      // A refresh may be served from the apiserver's cache (resourceVersion 0), as upstream's.
      fetched = await fetchObject<Stored>(
        this.deps.client,
        this.deps.resource,
        namespace,
        name,
        cached?.object ? { resourceVersion: '0' } : undefined,
      );
    } catch (err) {
      if (cached) return cached.object as T | null;
      throw err;
    }
    if (cached && isOlder(fetched, cached.object)) return cached.object as T | null;
    item.data = { object: fetched, fetchedAtMs: now };
    return fetched as T | null;
  }
}
