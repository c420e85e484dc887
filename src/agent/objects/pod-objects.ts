/**
 * Fetches the API objects a pod refers to (upstream configmap/secret managers, TTL strategy):
 * the ConfigMaps and Secrets named in env / envFrom, the imagePullSecrets (each object cached for
 * `ttlMs`), and the Services for service links (from the watch-fed ServiceInformer); a 404 is remembered as "not found"
 * (null);
 * other failures reject (the container gets CreateContainerConfigError and the sync retries).
 */
import type { Container, Pod } from '../../api/types.js';
import type { Clock } from '../../lib/clock.js';
import { apiError, type KubeClient } from '../../lib/kube-client.js';
import { TtlCache } from '../../lib/ttl-cache.js';
import type { PodObjects } from '../runtime/env.js';
import { serviceEnv, servicesForPod } from '../runtime/service-env.js';
import type { ServiceInformer } from './service-informer.js';
import type { PullSecret } from '../images/keyring.js';

/** The names a pod refers to (pure). */
export function podReferences(pod: Pod): { configMaps: string[]; secrets: string[]; pullSecrets: string[] } {
  const cms = new Set<string>();
  const secrets = new Set<string>();
  const all: Container[] = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])];
  for (const c of all) {
    for (const f of (c.envFrom ?? []) as { configMapRef?: { name: string }; secretRef?: { name: string } }[]) {
      if (f.configMapRef) cms.add(f.configMapRef.name);
      if (f.secretRef) secrets.add(f.secretRef.name);
    }
    for (const e of c.env ?? []) {
      const v = e.valueFrom as { configMapKeyRef?: { name: string }; secretKeyRef?: { name: string } } | undefined;
      if (v?.configMapKeyRef) cms.add(v.configMapKeyRef.name);
      if (v?.secretKeyRef) secrets.add(v.secretKeyRef.name);
    }
  }
  const pullSecrets = ((pod.spec.imagePullSecrets ?? []) as { name?: string }[])
    .map((s) => s.name)
    .filter((n): n is string => !!n);
  return { configMaps: [...cms], secrets: [...secrets], pullSecrets };
}

/** How long an immutable object stays cached: for the kubelet's lifetime (bounded by maxEntries). */
const IMMUTABLE_TTL_MS = 100 * 365 * 24 * 3600 * 1000;

/** What the fetcher needs. */
export interface PodObjectsDeps {
  client: KubeClient;
  clock: Clock;
  ttlMs?: number;
  /** The cluster's Services, watch-fed (service-informer.ts). */
  services: Pick<ServiceInformer, 'inNamespace' | 'get'>;
}

/** Fetches and caches. */
export class PodObjectFetcher {
  private readonly cache: TtlCache<unknown>;
  constructor(private readonly deps: PodObjectsDeps) {
    this.cache = new TtlCache({ clock: deps.clock, maxEntries: 4096 });
  }

  /**
   * The object at `path` (null = 404), from the cache when fresh. An object marked `immutable`
   * is fetched once and kept (upstream: immutable ConfigMaps/Secrets are never re-read). With
   * `fresh`, read from the apiserver and left out of the cache (a VolumeAttachment's status).
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
    if (!o.fresh)
      this.cache.set(
        path,
        r.body,
        (r.body as { immutable?: boolean }).immutable === true ? IMMUTABLE_TTL_MS : (this.deps.ttlMs ?? 5000),
      );
    return r.body;
  }

  /** A namespaced core/v1 object by resource ("configmaps", "secrets", "persistentvolumeclaims"). */
  namespaced<T>(resource: string, ns: string, name: string): Promise<T | null> {
    return this.get<T>(`/api/v1/namespaces/${encodeURIComponent(ns)}/${resource}/${encodeURIComponent(name)}`);
  }

  /** The env objects of `pod` (PodObjects) and its pull secrets. */
  async forPod(pod: Pod): Promise<PodObjects & { pullSecrets: PullSecret[] }> {
    const ns = pod.metadata.namespace ?? 'default';
    const refs = podReferences(pod);
    const configMaps = new Map(
      await Promise.all(
        refs.configMaps.map(
          async (n) =>
            [n, await this.get<{ data?: Record<string, string> }>(`/api/v1/namespaces/${ns}/configmaps/${n}`)] as const,
        ),
      ),
    );
    const secretNames = [...new Set([...refs.secrets, ...refs.pullSecrets])];
    const secrets = new Map(
      await Promise.all(
        secretNames.map(async (n) => [n, await this.get<PullSecret>(`/api/v1/namespaces/${ns}/secrets/${n}`)] as const),
      ),
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
