/**
 * The ConfigMap and Secret managers for `configMapAndSecretChangeDetectionStrategy` (upstream NewMainKubelet): each a
 * manager over the strategy's store, with the names a pod refers to (referenced-objects.ts).
 */
import type { Clock } from '../../lib/clock.js';
import type { KubeClient } from '../../lib/kube-client.js';
import type { Logger } from '../../lib/logger.js';
import { CachingObjectStore } from './caching-object-store.js';
import { gettingObjectStore, ObjectManager, type ManagedResource, type ObjectStore } from './object-manager.js';
import { referencedConfigMaps, referencedSecrets } from './referenced-objects.js';
import { WatchingObjectStore } from './watching-object-store.js';

/** The two managers and what starts their loops. */
export interface ObjectManagers {
  configMaps: ObjectManager;
  secrets: ObjectManager;
  start(signal: AbortSignal): void;
}

/** The managers of `strategy`. */
export function objectManagers(
  strategy: 'Get' | 'Cache' | 'Watch',
  d: {
    client: KubeClient;
    clock: Clock;
    logger: Logger;
    syncFrequencyMs: number;
    /** The Node's `node.alpha.kubernetes.io/ttl` in ms, when it has one (the Cache strategy's TTL). */
    nodeTtlMs?: () => number | undefined;
    /** Told which pods name an object that changed (the Watch strategy). */
    onChange?(podUids: string[]): void;
  },
): ObjectManagers {
  const watching: WatchingObjectStore[] = [];
  const storeOf = (resource: ManagedResource): ObjectStore => {
    if (strategy === 'Get') return gettingObjectStore(d.client, resource);
    if (strategy === 'Cache')
      return new CachingObjectStore({ client: d.client, resource, clock: d.clock, nodeTtlMs: d.nodeTtlMs });
    const store = new WatchingObjectStore({
      client: d.client,
      resource,
      clock: d.clock,
      logger: d.logger,
      // Upstream: an object read by volumes is read every sync period; one only the environment names goes idle.
      maxIdleMs: 5 * d.syncFrequencyMs,
      onChange: d.onChange,
    });
    watching.push(store);
    return store;
  };
  return {
    configMaps: new ObjectManager(storeOf('configmaps'), referencedConfigMaps),
    secrets: new ObjectManager(storeOf('secrets'), referencedSecrets),
    start(signal) {
      for (const store of watching) store.start(signal);
    },
  };
}
