/**
 * The secure port's filter, shared by ordinary requests (Fastify hook) and upgrades (exec, attach,
 * port-forward arrive as raw 'upgrade' events): authenticate → 401, authorize → 403 / 500.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { messageOf } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import type { Authenticator, UserInfo } from './authn/authenticator.js';
import {
  authorizationErrorMessage,
  forbiddenMessage,
  requestAttributes,
  type Authorizer,
  type RequestAttributes,
} from './authz/authorizer.js';

/** What the filter needs. */
export interface AuthFilterDeps {
  authenticator: Authenticator;
  authorizer: Authorizer;
  nodeName: string;
  log: Logger;
}

/** The outcome: let through, or answer `code` with the plain-text `body`. */
export type FilterResult =
  { ok: true; user: UserInfo; attrs: RequestAttributes } | { ok: false; code: 401 | 403 | 500; body: string };

/** Runs the filter for one request. Never throws. */
export async function authFilter(
  d: AuthFilterDeps,
  r: { method: string; url: string; headers: IncomingHttpHeaders; socket: Socket },
): Promise<FilterResult> {
  let user: UserInfo | null = null;
  try {
    user = await d.authenticator.authenticate({ headers: r.headers, socket: r.socket });
  } catch (err) {
    d.log.info({ reason: messageOf(err) }, 'Unable to authenticate the request');
  }
  if (!user) return { ok: false, code: 401, body: 'Unauthorized' };
  const asked = requestAttributes(user, r.method, r.url, d.nodeName);
  for (const attrs of asked) {
    try {
      const decision = await d.authorizer.authorize(attrs);
      if (decision.allowed) return { ok: true, user, attrs };
      d.log.debug(
        { user: user.name, verb: attrs.verb, subresource: attrs.subresource, reason: decision.reason },
        'forbidden',
      );
    } catch (err) {
      const body = authorizationErrorMessage(asked);
      d.log.error({ err: messageOf(err) }, body);
      return { ok: false, code: 500, body };
    }
  }
  return { ok: false, code: 403, body: forbiddenMessage(asked) };
}
