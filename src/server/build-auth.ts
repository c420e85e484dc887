/**
 * Composes the secure port's authenticator and authorizer from the configuration, as the Go
 * kubelet's BuildAuth: x509 (when a client CA is set) → bearer token via TokenReview (when
 * `authentication.webhook.enabled`) → anonymous (when enabled; never for bad credentials);
 * `authorization.mode` AlwaysAllow or Webhook (SubjectAccessReview).
 */
import type { ApiClient } from '../lib/kube-client.js';
import type { Clock } from '../lib/clock.js';
import { parseDuration } from '../lib/duration.js';
import type { KubeletConfiguration } from '../config/schema.js';
import { unionAuthenticator, type Authenticator } from './authn/authenticator.js';
import { withAnonymous } from './authn/anonymous.js';
import { x509Authenticator } from './authn/x509.js';
import { tokenWebhookAuthenticator } from './authn/token-webhook.js';
import { alwaysAllow, type Authorizer } from './authz/authorizer.js';
import { webhookAuthorizer } from './authz/webhook.js';

/** What building the auth chain needs. */
export interface BuildAuthOptions {
  authentication: KubeletConfiguration['authentication'];
  authorization: KubeletConfiguration['authorization'];
  /** True when TLS verifies client certificates against a CA (configured or the local one). */
  hasClientCA: boolean;
  /** The apiserver client; required for the webhook modes. */
  api?: ApiClient;
  clock: Clock;
  /** Deadline for each webhook call (ms); default 10 s. */
  webhookTimeoutMs?: number;
}

/** Builds both; throws when a webhook mode is asked for without an apiserver client. */
export function buildAuth(o: BuildAuthOptions): { authenticator: Authenticator; authorizer: Authorizer } {
  const chain: Authenticator[] = [];
  if (o.hasClientCA) chain.push(x509Authenticator);
  if (o.authentication.webhook.enabled) {
    if (!o.api) throw new Error('authentication.webhook.enabled needs an apiserver (--kubeconfig)');
    chain.push(
      tokenWebhookAuthenticator({
        client: o.api,
        clock: o.clock,
        cacheTtlMs: parseDuration(o.authentication.webhook.cacheTTL)!,
        timeoutMs: o.webhookTimeoutMs,
      }),
    );
  }
  let authenticator = unionAuthenticator(chain);
  if (o.authentication.anonymous.enabled) authenticator = withAnonymous(authenticator);
  let authorizer: Authorizer = alwaysAllow;
  if (o.authorization.mode === 'Webhook') {
    if (!o.api) throw new Error('authorization.mode=Webhook needs an apiserver (--kubeconfig)');
    authorizer = webhookAuthorizer({
      client: o.api,
      clock: o.clock,
      timeoutMs: o.webhookTimeoutMs,
      authorizedTtlMs: parseDuration(o.authorization.webhook.cacheAuthorizedTTL)!,
      unauthorizedTtlMs: parseDuration(o.authorization.webhook.cacheUnauthorizedTTL)!,
    });
  }
  return { authenticator, authorizer };
}
