/**
 * The authentication seam: a request → the user it proves to be, or null when it proves nothing.
 * Implementations: x509 client certificates (x509.ts); bearer tokens and anonymous come with the
 * security issue. Authenticators never throw for bad credentials; they throw only when they
 * cannot decide (e.g. a webhook failed), which answers 500… or 401 per upstream.
 */
import type { FastifyRequest } from 'fastify';

/** An authenticated user (authentication.k8s.io UserInfo). */
export interface UserInfo { name: string; uid?: string; groups: string[]; extra?: Record<string, string[]> }

/** Authenticates requests. May block (webhooks); idempotent. */
export interface Authenticator { authenticate(req: FastifyRequest): Promise<UserInfo | null> }

/** Tries each authenticator in order; the first user wins. */
export function unionAuthenticator(list: Authenticator[]): Authenticator {
  return { async authenticate(req) { for (const a of list) { const u = await a.authenticate(req); if (u) return u; } return null; } };
}
