/**
 * The API objects a pod refers to: its ConfigMaps and Secrets through the kubelet's object managers (object-manager.ts,
 * which keep them as `configMapAndSecretChangeDetectionStrategy` says), the Services for service links (from the
 * watch-fed ServiceInformer), and other objects by path (claims, volumes, CSIDrivers), each cached for `ttlMs`. A 404
 * reads as "not found" (null); other failures reject (the container gets CreateContainerConfigError and the sync
 * retries).
 */
import { allContainers } from '../../api/containers.js';
import type { Pod } from '../../api/types.js';
import type { Clock } from '../../lib/clock.js';
import { apiError, type KubeClient } from '../../lib/kube-client.js';
import { TtlCache } from '../../lib/ttl-cache.js';
import type { PodObjects } from '../runtime/env.js';
import { serviceEnv, servicesForPod } from '../runtime/service-env.js';
import type { ServiceInformer } from './service-informer.js';
import type { PullSecret } from '../images/keyring.js';
import type { ObjectManager } from './object-manager.js';
import { environmentReferences, pullSecretNames } from './referenced-objects.js';

/**
 * The names the environments of a pod's containers (init, regular, ephemeral) refer to, and its pull secrets (pure).
 */
export function podReferences(pod: Pod): { configMaps: string[]; secrets: string[]; pullSecrets: string[] } {
  return {
    ...environmentReferences(allContainers(pod)),
    pullSecrets: pullSecretNames(pod),
  };
}

/** What the fetcher needs. */
export interface PodObjectsDeps {
  client: KubeClient;
  clock: Clock;
  ttlMs?: number;
  /** The cluster's Services, watch-fed (service-informer.ts). */
  services: Pick<ServiceInformer, 'inNamespace' | 'get'>;
  /** The ConfigMaps and the Secrets of the registered pods. */
  configMaps: ObjectManager;
  secrets: ObjectManager;
}

/** Fetches and caches. */
export class PodObjectFetcher {
  private readonly cache: TtlCache<unknown>;
  constructor(private readonly deps: PodObjectsDeps) {
    this.cache = new TtlCache({ clock: deps.clock, maxEntries: 4096 });
  }

  /**
   * The object at `path` (null = 404), from the cache when fresh. With `fresh`, read from the apiserver and left out
   * of the cache (a VolumeAttachment's status).
   */
  async get<T>(path: string, o: { fresh?: boolean } = {}): Promise<T | null> {
    const hit = o.fresh ? undefined : this.cache.get(path);
    if (hit !== undefined) return hit as T | null;
    const r = await this.deps.client.request<T & { message?: string }>({ path });
    if (r.status === 404) {
      if (!o.fresh) this.cache.set(path, null, this.deps.ttlMs ?? 5000);
      return null;
    }
    if (r.status !== 200 || !r.body) throw apiError(`GET ${path}`, r);
    if (!o.fresh) this.cache.set(path, r.body, this.deps.ttlMs ?? 5000);
    return r.body;
  }

  /** A namespaced core/v1 object by resource ("configmaps", "secrets", "persistentvolumeclaims"). */
  namespaced<T>(resource: string, ns: string, name: string): Promise<T | null> {
    if (resource === 'configmaps') return this.deps.configMaps.get<T>(ns, name);
    if (resource === 'secrets') return this.deps.secrets.get<T>(ns, name);
    return this.get<T>(`/api/v1/namespaces/${encodeURIComponent(ns)}/${resource}/${encodeURIComponent(name)}`);
  }

  /** Makes the object managers keep what `pod` names (upstream: at each sync of a pod not terminating). */
  registerPod(pod: Pod): void {
    this.deps.configMaps.registerPod(pod);
    this.deps.secrets.registerPod(pod);
  }

  /** Lets the object managers drop what the pod with `uid` named (upstream: once it has terminated). */
  unregisterPod(uid: string): void {
    this.deps.configMaps.unregisterPod(uid);
    this.deps.secrets.unregisterPod(uid);
  }

  /** The env objects of `pod` (PodObjects) and its pull secrets. */
  async forPod(pod: Pod): Promise<PodObjects & { pullSecrets: PullSecret[] }> {
    const ns = pod.metadata.namespace ?? 'default';
    const refs = podReferences(pod);
    const configMaps = new Map(
      await Promise.all(
        refs.configMaps.map(
          async (n) => [n, await this.deps.configMaps.get<{ data?: Record<string, string> }>(ns, n)] as const,
        ),
      ),
    );
    const secretNames = [...new Set([...refs.secrets, ...refs.pullSecrets])];
    const secrets = new Map(
      await Promise.all(secretNames.map(async (n) => [n, await this.deps.secrets.get<PullSecret>(ns, n)] as const)),
    );
    const links = pod.spec.enableServiceLinks !== false;
    const list = links ? this.deps.services.inNamespace(ns) : [];
    const master = this.deps.services.get('default', 'kubernetes');
    return {
      configMaps,
      secrets,
      serviceEnv: serviceEnv(
        servicesForPod(ns, { enableServiceLinks: links, inNamespace: list, masterService: master ?? undefined }),
      ),
      pullSecrets: refs.pullSecrets.map((n) => secrets.get(n)).filter((s): s is PullSecret => !!s),
    };
  }
}
