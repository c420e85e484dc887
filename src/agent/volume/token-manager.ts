/**
 * Service-account tokens for projected volumes through the TokenRequest API (upstream
 * pkg/kubelet/token/token_manager.go): one token per (namespace, service account, audiences,
 * expiration, bound pod); a cached token is refreshed once 80 % of its lifetime has passed or it
 * is older than 24 h, with up to 10 s of jitter, as upstream.
 */
import { rfc3339 } from '../../lib/time.js';
import type { Clock } from '../../lib/clock.js';
import { apiError, type KubeClient } from '../../lib/kube-client.js';

const MAX_TTL_MS = 24 * 3600 * 1000;
const MAX_JITTER_MS = 10_000;

/** What a token is requested for. */
export interface TokenKey {
  namespace: string;
  serviceAccount: string;
  audiences: string[];
  expirationSeconds: number;
  pod: { name: string; uid: string };
}

interface Cached {
  token: string;
  expiresAt: number;
  expirationSeconds: number;
  podUid: string;
}

/** A token as TokenRequestStatus carries it. */
export interface TokenStatus {
  token: string;
  /** RFC 3339 with seconds, as a metav1.Time. */
  expirationTimestamp: string;
}

const statusOf = (c: Cached): TokenStatus => ({
  token: c.token,
  expirationTimestamp: rfc3339(c.expiresAt),
});

/** Upstream requiresRefresh (pure): true once the token is within 20 % of its TTL of expiring or older than 24 h. */
export function requiresRefresh(
  t: { expiresAt: number; expirationSeconds: number },
  nowMs: number,
  jitterMs: number,
): boolean {
  const issuedAt = t.expiresAt - t.expirationSeconds * 1000;
  if (nowMs > issuedAt + MAX_TTL_MS - jitterMs) return true;
  return nowMs > t.expiresAt - (t.expirationSeconds * 1000 * 20) / 100 - jitterMs;
}

/** Requests and caches tokens. */
export class TokenManager {
  private readonly cache = new Map<string, Cached>();
  constructor(private readonly deps: { client: KubeClient; clock: Clock; random?: () => number }) {}

  private static keyOf(k: TokenKey): string {
    return JSON.stringify([k.namespace, k.serviceAccount, k.audiences, k.expirationSeconds, k.pod.uid]);
  }

  /**
   * A valid token and when it expires (RFC 3339, as TokenRequestStatus); requests a new one when none is cached or the
   * cached one needs a refresh.
   */
  async getToken(k: TokenKey): Promise<TokenStatus> {
    const key = TokenManager.keyOf(k);
    const now = this.deps.clock.now();
    const hit = this.cache.get(key);
    const jitter = (this.deps.random ?? Math.random)() * MAX_JITTER_MS;
    if (hit && !requiresRefresh(hit, now, jitter)) return statusOf(hit);
    const path = `/api/v1/namespaces/${encodeURIComponent(k.namespace)}/serviceaccounts/${encodeURIComponent(k.serviceAccount)}/token`;
    const body = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: k.audiences,
        expirationSeconds: k.expirationSeconds,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: k.pod.name, uid: k.pod.uid },
      },
    };
    try {
      const r = await this.deps.client.request<{ status?: { token?: string; expirationTimestamp?: string } }>({
        method: 'POST',
        path,
        body,
      });
      if ((r.status !== 201 && r.status !== 200) || !r.body?.status?.token) throw apiError(`POST ${path}`, r);
      const expiresAt = Date.parse(r.body.status.expirationTimestamp ?? '') || now + k.expirationSeconds * 1000;
      const fresh = {
        token: r.body.status.token,
        expiresAt,
        expirationSeconds: k.expirationSeconds,
        podUid: k.pod.uid,
      };
      this.cache.set(key, fresh);
      return statusOf(fresh);
    } catch (err) {
      // Upstream keeps serving a cached token that has not expired when a refresh fails.
      if (hit && hit.expiresAt > now) return statusOf(hit);
      throw new Error(`failed to fetch token: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Forgets the tokens bound to pod `uid` (upstream DeleteServiceAccountToken). */
  forgetPod(uid: string): void {
    for (const [k, v] of this.cache) if (v.podUid === uid) this.cache.delete(k);
  }
}
