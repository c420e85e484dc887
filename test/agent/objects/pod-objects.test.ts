/** The API object fetcher: a TTL cache, except immutable ConfigMaps/Secrets, which are fetched once. */
import { describe, expect, it } from 'vitest';
import { createKubeClient } from '../../../src/lib/kube-client.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { PodObjectFetcher } from '../../../src/agent/objects/pod-objects.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';

const fake = useFakeApiserver();

describe('PodObjectFetcher', () => {
  it('re-reads a mutable ConfigMap after the TTL; an immutable one never again', async () => {
    const clock = new FakeClock(Date.now());
    const f = new PodObjectFetcher({ client: await createKubeClient(fake.kubeconfig, { timeoutMs: 3000 }), clock, ttlMs: 5000 });
    fake.api.store.create('configmaps', { metadata: { name: 'm', namespace: 'default' }, data: { k: '1' } });
    fake.api.store.create('configmaps', { metadata: { name: 'i', namespace: 'default' }, immutable: true, data: { k: '1' } });
    const gets = (n: string) => fake.api.requests.filter((r) => r.method === 'GET' && r.path === `/api/v1/namespaces/default/configmaps/${n}`).length;
    for (let round = 0; round < 3; round++) {
      await f.namespaced('configmaps', 'default', 'm');
      await f.namespaced('configmaps', 'default', 'i');
      await f.namespaced('configmaps', 'default', 'm');
      clock.advance(6000);
    }
    expect(gets('m')).toBe(3);
    expect(gets('i')).toBe(1);
    expect(await f.namespaced('configmaps', 'default', 'missing')).toBeNull();
  });
});
