/**
 * Authorization by SubjectAccessReview (authorization.k8s.io/v1), as the Go kubelet's
 * `authorization.mode: Webhook`. Decisions are cached by the review's spec: allowed for
 * `authorizedTtlMs` (5m), denied for `unauthorizedTtlMs` (30s), bounded in size. A failed or
 * timed-out review rejects (the server answers 500) and is not cached.
 */
import type { ApiClient } from '../../lib/kube-client.js';
import type { Clock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import { TtlCache } from '../../lib/ttl-cache.js';
import type { Authorizer, Decision, RequestAttributes } from './authorizer.js';

/** What the webhook authorizer needs. */
export interface WebhookAuthorizerDeps {
  client: ApiClient;
  clock: Clock;
  authorizedTtlMs: number;
  unauthorizedTtlMs: number;
  timeoutMs?: number;
  maxCacheEntries?: number;
}

/** The SubjectAccessReview spec for `a` (pure; the exact body the apiserver sees). */
export function subjectAccessReviewSpec(a: RequestAttributes): Record<string, unknown> {
  return {
    resourceAttributes: {
      namespace: '',
      verb: a.verb,
      group: a.apiGroup,
      version: a.apiVersion,
      resource: a.resource,
      subresource: a.subresource,
      name: a.name,
    },
    user: a.user.name,
    groups: a.user.groups,
    ...(a.user.extra && Object.keys(a.user.extra).length ? { extra: a.user.extra } : {}),
    ...(a.user.uid ? { uid: a.user.uid } : {}),
  };
}

/** Builds the webhook authorizer. */
export function webhookAuthorizer(d: WebhookAuthorizerDeps): Authorizer {
  const cache = new TtlCache<Decision>({ maxEntries: d.maxCacheEntries ?? 10_000, clock: d.clock });
  return {
    async authorize(attrs) {
      const spec = subjectAccessReviewSpec(attrs);
      const key = JSON.stringify(spec);
      const hit = cache.get(key);
      if (hit) return hit;
      let res;
      try {
        res = await d.client.post<{
          status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string };
        }>(
          '/apis/authorization.k8s.io/v1/subjectaccessreviews',
          { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec },
          { timeoutMs: d.timeoutMs },
        );
      } catch (err) {
        throw new Error(`subject access review failed: ${messageOf(err)}`);
      }
      if (res.status !== 200 && res.status !== 201)
        throw new Error(`subject access review failed: apiserver answered ${res.status}`);
      const st = res.body?.status ?? {};
      const decision: Decision = { allowed: st.allowed === true && st.denied !== true, reason: st.reason };
      cache.set(key, decision, decision.allowed ? d.authorizedTtlMs : d.unauthorizedTtlMs);
      return decision;
    },
  };
}
