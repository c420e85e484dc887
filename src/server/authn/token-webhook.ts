/**
 * Bearer tokens checked with the TokenReview API (authentication.k8s.io/v1), as the Go kubelet's
 * `authentication.webhook`. Answers are cached for `cacheTtlMs` (authenticated and not) keyed by
 * a hash of the token; webhook failures are not cached and reject the request (401).
 */
import { createHash } from 'node:crypto';
import type { ApiClient } from '../../lib/kube-client.js';
import type { Clock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import { TtlCache } from '../../lib/ttl-cache.js';
import { AuthenticationError, type Authenticator, type UserInfo } from './authenticator.js';

/** What the token authenticator needs. */
export interface TokenWebhookDeps {
  client: ApiClient;
  cacheTtlMs: number;
  clock: Clock;
  timeoutMs?: number;
  maxCacheEntries?: number;
}

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  error?: string;
}

/** The bearer token of a request, if any (`Authorization: Bearer <token>`). */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}

/** Builds the TokenReview authenticator. */
export function tokenWebhookAuthenticator(d: TokenWebhookDeps): Authenticator {
  const cache = new TtlCache<UserInfo | null>({ maxEntries: d.maxCacheEntries ?? 10_000, clock: d.clock });
  return {
    async authenticate(req) {
      const token = bearerToken(req.headers.authorization);
      if (!token) return null;
      const key = createHash('sha256').update(token).digest('hex');
      let user = cache.get(key);
      if (user === undefined) {
        let res;
        try {
          res = await d.client.post<{ status?: TokenReviewStatus }>(
            '/apis/authentication.k8s.io/v1/tokenreviews',
            { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
            { timeoutMs: d.timeoutMs },
          );
        } catch (err) {
          throw new AuthenticationError(`token review failed: ${messageOf(err)}`);
        }
        if (res.status !== 200 && res.status !== 201)
          throw new AuthenticationError(`token review failed: apiserver answered ${res.status}`);
        const st = res.body?.status ?? {};
        user =
          st.authenticated && st.user?.username
            ? { name: st.user.username, uid: st.user.uid, groups: st.user.groups ?? [], extra: st.user.extra }
            : null;
        cache.set(key, user, d.cacheTtlMs);
      }
      if (!user) throw new AuthenticationError('invalid bearer token');
      return user;
    },
  };
}
