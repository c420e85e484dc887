/** The API object fetcher: a TTL cache, except immutable ConfigMaps/Secrets, which are fetched once. */
import { describe, expect, it } from 'vitest';
import { createKubeClient } from '../../../src/lib/kube-client.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { PodObjectFetcher } from '../../../src/agent/objects/pod-objects.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';
import { ServiceInformer } from '../../../src/agent/objects/service-informer.js';
import { realClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import { until } from '../../e2e/helpers.js';
import type { Pod } from '../../../src/api/types.js';

const logger = createLogger({ level: 'fatal' });

const fake = useFakeApiserver();

describe('PodObjectFetcher', () => {
  it('re-reads a mutable ConfigMap after the TTL; an immutable one never again', async () => {
    const clock = new FakeClock(Date.now());
    const client = await createKubeClient(fake.kubeconfig, { timeoutMs: 3000 });
    const f = new PodObjectFetcher({
      client,
      clock,
      ttlMs: 5000,
      services: new ServiceInformer({ client, clock, logger }),
    });
    fake.api.store.create('configmaps', { metadata: { name: 'm', namespace: 'default' }, data: { k: '1' } });
    fake.api.store.create('configmaps', {
      metadata: { name: 'i', namespace: 'default' },
      immutable: true,
      data: { k: '1' },
    });
    const gets = (n: string) =>
      fake.api.requests.filter((r) => r.method === 'GET' && r.path === `/api/v1/namespaces/default/configmaps/${n}`)
        .length;
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

describe('service links from the watch-fed Service cache (regression: a LIST of the namespace per pod start)', () => {
  it('makes the env from watched Services, follows changes, and lists no Services per pod', async () => {
    const client = await createKubeClient(fake.kubeconfig, { timeoutMs: 3000 });
    const services = new ServiceInformer({ client, clock: realClock, logger });
    const f = new PodObjectFetcher({ client, clock: realClock, services });
    const pod = {
      metadata: { name: 'p', namespace: 'links' },
      spec: { containers: [{ name: 'c', image: 'i' }] },
    } as unknown as Pod;
    // Not read yet: upstream's error, and the container waits.
    await expect(f.forPod(pod)).rejects.toThrow(
      'services have not yet been read at least once, cannot construct envvars',
    );
    fake.api.store.create('services', {
      metadata: { name: 'kubernetes', namespace: 'default' },
      spec: { clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443, protocol: 'TCP' }] },
    });
    fake.api.store.create('services', {
      metadata: { name: 'db', namespace: 'links' },
      spec: { clusterIP: '10.96.0.20', ports: [{ port: 5432, protocol: 'TCP' }] },
    });
    const ctl = new AbortController();
    services.start(ctl.signal);
    try {
      const env = await until(
        async () => (await f.forPod(pod).catch(() => undefined))?.serviceEnv,
        10_000,
        'service env',
      );
      expect(env).toMatchObject({
        KUBERNETES_SERVICE_HOST: '10.96.0.1',
        DB_SERVICE_HOST: '10.96.0.20',
        DB_SERVICE_PORT: '5432',
      });
      fake.api.store.create('services', {
        metadata: { name: 'cache', namespace: 'links' },
        spec: { clusterIP: '10.96.0.30', ports: [{ port: 6379, protocol: 'TCP' }] },
      });
      await until(
        async () => (await f.forPod(pod)).serviceEnv.CACHE_SERVICE_HOST === '10.96.0.30',
        10_000,
        'a new Service seen',
      );
      const before = fake.api.requests.length;
      for (let i = 0; i < 20; i++) await f.forPod(pod);
      expect(fake.api.requests.slice(before).filter((r) => r.path.includes('/services'))).toEqual([]);
    } finally {
      ctl.abort();
    }
  });
});
