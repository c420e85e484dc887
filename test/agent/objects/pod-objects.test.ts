/** The API objects of a pod: service links from the watch-fed Service cache. */
import { describe, expect, it } from 'vitest';
import { createKubeClient } from '../../../src/lib/kube-client.js';
import { PodObjectFetcher } from '../../../src/agent/objects/pod-objects.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';
import { objectManagers } from '../../../src/agent/objects/object-managers.js';
import { ServiceInformer } from '../../../src/agent/objects/service-informer.js';
import { realClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import { until } from '../../e2e/helpers.js';
import type { Pod } from '../../../src/api/types.js';

const logger = createLogger({ level: 'fatal' });

const fake = useFakeApiserver();

describe('service links from the watch-fed Service cache (regression: a LIST of the namespace per pod start)', () => {
  it('makes the env from watched Services, follows changes, and lists no Services per pod', async () => {
    const client = await createKubeClient(fake.kubeconfig, { timeoutMs: 3000 });
    const services = new ServiceInformer({ client, clock: realClock, logger });
    const f = new PodObjectFetcher({
      client,
      clock: realClock,
      services,
      ...objectManagers('Get', { client, clock: realClock, logger, syncFrequencyMs: 60_000 }),
    });
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
