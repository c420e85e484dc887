/**
 * The service accounts and pod-bound tokens image credential providers with tokenAttributes get
 * (upstream's service account provider for credential plugins): the service account read from the
 * apiserver, its token through the TokenRequest API for the provider's audience, bound to the pod
 * whose image is pulled (cached and refreshed by the token manager).
 */
import type { Clock } from '../../lib/clock.js';
import { apiError, type KubeClient } from '../../lib/kube-client.js';
import { TokenManager } from '../volume/token-manager.js';
import type { ServiceAccountSource } from './credential-provider.js';

/** A token's lifetime (the TokenRequest API's default). */
const TOKEN_SECONDS = 3600;

/** Service accounts and their pod-bound tokens from the apiserver (credential providers with tokenAttributes). */
export function serviceAccountSource(api: KubeClient, clock: Clock): ServiceAccountSource {
  const tokens = new TokenManager({ client: api, clock });
  return {
    async serviceAccount(namespace, name) {
      const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}`;
      const r = await api.request<{ metadata?: { uid?: string; annotations?: Record<string, string> } }>({
        method: 'GET',
        path,
      });
      if (r.status !== 200 || !r.body?.metadata)
        throw apiError(`failed to get service account ${namespace}/${name}`, r);
      return { uid: r.body.metadata.uid ?? '', annotations: r.body.metadata.annotations ?? {} };
    },
    token: async (pod, serviceAccount, audience) =>
      (
        await tokens.getToken({
          namespace: pod.namespace,
          serviceAccount,
          audiences: [audience],
          expirationSeconds: TOKEN_SECONDS,
          pod: { name: pod.name, uid: pod.uid },
        })
      ).token,
  };
}
