/**
 * The authentication seam: a request → the user it proves to be.
 *
 * Contract of `authenticate`: resolves a user when the request carries valid credentials;
 * resolves null when it carries none this authenticator understands; rejects when it carries
 * credentials that are invalid or cannot be checked (bad certificate, rejected token, webhook
 * down). Any rejection answers 401 — a bad credential never falls through to anonymous, as
 * upstream (union.NewFailOnError in front of the anonymous authenticator).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';

/** An authenticated user (authentication.k8s.io UserInfo). */
export interface UserInfo {
  name: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** What authenticators see of a request: its headers and the (TLS) socket it came on. */
export interface AuthnRequest {
  headers: IncomingHttpHeaders;
  socket: Socket;
}

/** Authenticates requests. May block (webhooks); idempotent. */
export interface Authenticator {
  authenticate(req: AuthnRequest): Promise<UserInfo | null>;
}

/** Why credentials were rejected (logged, never sent to the client). */
export class AuthenticationError extends Error {}

/** The group every authenticated (non-anonymous) user gets. */
export const AllAuthenticated = 'system:authenticated';

/**
 * Tries each authenticator in order; the first user wins. When none yields a user but one
 * rejected, the first rejection is re-thrown. Users get `system:authenticated` added.
 */
export function unionAuthenticator(list: Authenticator[]): Authenticator {
  return {
    async authenticate(req) {
      let firstError: unknown;
      for (const a of list) {
        try {
          const u = await a.authenticate(req);
          if (u) return u.groups.includes(AllAuthenticated) ? u : { ...u, groups: [...u.groups, AllAuthenticated] };
        } catch (err) {
          firstError ??= err;
        }
      }
      if (firstError) throw firstError;
      return null;
    },
  };
}
