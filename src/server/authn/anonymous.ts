/**
 * Anonymous authentication (`authentication.anonymous.enabled`): requests without credentials
 * become `system:anonymous` in `system:unauthenticated`. Requests with bad credentials stay
 * rejected (the chain's error wins).
 */
import type { Authenticator, UserInfo } from './authenticator.js';

/** The anonymous user. */
export const anonymousUser: UserInfo = { name: 'system:anonymous', groups: ['system:unauthenticated'] };

/** `chain`, falling back to the anonymous user when it finds no credentials at all. */
export function withAnonymous(chain: Authenticator): Authenticator {
  return {
    async authenticate(req) {
      return (await chain.authenticate(req)) ?? anonymousUser;
    },
  };
}
