/**
 * The ConfigMap and Secret managers of each configMapAndSecretChangeDetectionStrategy, against the fake apiserver:
 * Watch (one watch per registered object), Cache (a TTL, refreshed when a pod registers) and Get.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createKubeClient, type KubeClient } from '../../../src/lib/kube-client.js';
import { FakeClock, realClock, type Clock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import type { Pod } from '../../../src/api/types.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';
import { until } from '../../e2e/helpers.js';
import { WatchingObjectStore } from '../../../src/agent/objects/watching-object-store.js';
import { CachingObjectStore } from '../../../src/agent/objects/caching-object-store.js';
import { gettingObjectStore, ObjectManager } from '../../../src/agent/objects/object-manager.js';
import { referencedConfigMaps } from '../../../src/agent/objects/referenced-objects.js';

const logger = createLogger({ level: 'fatal' });
const fake = useFakeApiserver();

type Data = { data?: Record<string, string> };

/** A pod in `namespace` whose container reads the ConfigMaps `names` through envFrom. */
function podNaming(uid: string, namespace: string, ...names: string[]): Pod {
  return {
    metadata: { name: `pod-${uid}`, namespace, uid },
    spec: { containers: [{ name: 'c', image: 'i', envFrom: names.map((name) => ({ configMapRef: { name } })) }] },
  } as unknown as Pod;
}

const configMap = (namespace: string, name: string, data: Record<string, string>, extra: object = {}) =>
  fake.api.store.create('configmaps', { metadata: { name, namespace }, data, ...extra });

const requestsFor = (namespace: string, name: string) =>
  fake.api.requests.filter(
    (r) =>
      r.method === 'GET' &&
      (r.path === `/api/v1/namespaces/${namespace}/configmaps/${name}` ||
        (r.path === `/api/v1/namespaces/${namespace}/configmaps` && r.query.fieldSelector === `metadata.name=${name}`)),
  );

const stops: AbortController[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop.abort();
  fake.api.inject(undefined);
});

async function watching(o: { clock?: Clock; maxIdleMs?: number } = {}) {
  const client = await createKubeClient(fake.kubeconfig, { timeoutMs: 3000 });
  const changes: string[][] = [];
  const store = new WatchingObjectStore({
    client,
    resource: 'configmaps',
    clock: o.clock ?? realClock,
    logger,
    maxIdleMs: o.maxIdleMs ?? 60_000,
    onChange: (uids) => changes.push(uids),
  });
  const stop = new AbortController();
  stops.push(stop);
  store.start(stop.signal);
  return { store, manager: new ObjectManager(store, referencedConfigMaps), changes, client };
}

describe('Watch strategy', () => {
  it('reads a registered ConfigMap from its watch: no GET, one watch for all pods, a change seen and told', async () => {
    const { store, manager, changes } = await watching();
    configMap('w-a', 'app', { color: 'blue' });
    manager.registerPod(podNaming('u1', 'w-a', 'app'));
    manager.registerPod(podNaming('u2', 'w-a', 'app'));
    expect((await manager.get<Data>('w-a', 'app'))?.data).toEqual({ color: 'blue' });
    expect(store.watching).toBe(1);
    const current = fake.api.store.get('configmaps', 'w-a', 'app')!;
    fake.api.store.update('configmaps', { ...current, data: { color: 'green' } });
    await until(() => changes.length > 0, 10_000, 'change told');
    expect(changes[0]!.sort()).toEqual(['u1', 'u2']);
    expect((await manager.get<Data>('w-a', 'app'))?.data).toEqual({ color: 'green' });
    const requests = requestsFor('w-a', 'app');
    // One list and one watch, both by field selector; never a GET of the object.
    expect(requests.map((r) => [r.path, r.query.watch ?? 'list'])).toEqual([
      ['/api/v1/namespaces/w-a/configmaps', 'list'],
      ['/api/v1/namespaces/w-a/configmaps', '1'],
    ]);
    // Re-made at most every half hour, as upstream's object reflectors (MinWatchTimeout 30 min).
    expect(Number(requests[1]!.query.timeoutSeconds)).toBeGreaterThanOrEqual(1800);
    // The watch stays while a pod names the object, and stops with the last one.
    manager.unregisterPod('u1');
    expect(store.watching).toBe(1);
    manager.unregisterPod('u2');
    expect(store.watching).toBe(0);
  });

  it('a pod that stops naming an object (a new spec) lets it go; the one it names now is watched', async () => {
    const { store, manager } = await watching();
    configMap('w-b', 'old', { v: '1' });
    configMap('w-b', 'new', { v: '2' });
    manager.registerPod(podNaming('u1', 'w-b', 'old'));
    await manager.get('w-b', 'old');
    manager.registerPod(podNaming('u1', 'w-b', 'new'));
    expect(store.watching).toBe(1);
    expect((await manager.get<Data>('w-b', 'new'))?.data).toEqual({ v: '2' });
    // No longer registered: read with a GET, as an object no pod names.
    expect((await manager.get<Data>('w-b', 'old'))?.data).toEqual({ v: '1' });
    expect(requestsFor('w-b', 'old').at(-1)?.path).toBe('/api/v1/namespaces/w-b/configmaps/old');
  });

  it('a missing object reads as null until it is created, and its creation is told', async () => {
    const { manager, changes } = await watching();
    manager.registerPod(podNaming('u1', 'w-c', 'later'));
    expect(await manager.get('w-c', 'later')).toBeNull();
    configMap('w-c', 'later', { ready: 'yes' });
    await until(() => changes.length > 0, 10_000, 'creation told');
    expect((await manager.get<Data>('w-c', 'later'))?.data).toEqual({ ready: 'yes' });
  });

  it('an immutable object stops its watch and is still served', async () => {
    const { store, manager } = await watching();
    configMap('w-d', 'fixed', { k: 'v' }, { immutable: true });
    manager.registerPod(podNaming('u1', 'w-d', 'fixed'));
    expect((await manager.get<Data>('w-d', 'fixed'))?.data).toEqual({ k: 'v' });
    expect(store.watching).toBe(0);
    const before = requestsFor('w-d', 'fixed').length;
    expect((await manager.get<Data>('w-d', 'fixed'))?.data).toEqual({ k: 'v' });
    expect(requestsFor('w-d', 'fixed').length).toBe(before);
  });

  it("a read fails after a second with upstream's message while the object cannot be listed", async () => {
    const { manager } = await watching();
    fake.api.inject((r) =>
      r.path === '/api/v1/namespaces/w-e/configmaps' ? { code: 503, reason: 'ServiceUnavailable' } : undefined,
    );
    manager.registerPod(podNaming('u1', 'w-e', 'down'));
    await expect(manager.get('w-e', 'down')).rejects.toThrow(
      'failed to sync configmaps cache: timed out waiting for the condition',
    );
  });

  it('a watch not read for its idle time stops, and the next read starts it again', async () => {
    const clock = new FakeClock(Date.now());
    const { store, manager } = await watching({ clock, maxIdleMs: 60_000 });
    configMap('w-f', 'env-only', { k: 'v1' });
    manager.registerPod(podNaming('u1', 'w-f', 'env-only'));
    await manager.get('w-f', 'env-only');
    clock.advance(60_000);
    expect(store.watching).toBe(1);
    clock.advance(60_000);
    expect(store.watching).toBe(0);
    const current = fake.api.store.get('configmaps', 'w-f', 'env-only')!;
    fake.api.store.update('configmaps', { ...current, data: { k: 'v2' } });
    // Read afresh: the change made while nothing watched is not missed.
    expect((await manager.get<Data>('w-f', 'env-only'))?.data).toEqual({ k: 'v2' });
    expect(store.watching).toBe(1);
  });
});

describe('Cache strategy', () => {
  async function caching(nodeTtlMs?: number) {
    const clock = new FakeClock(Date.now());
    const client: KubeClient = await createKubeClient(fake.kubeconfig, { timeoutMs: 3000 });
    const store = new CachingObjectStore({ client, resource: 'configmaps', clock, nodeTtlMs: () => nodeTtlMs });
    return { clock, manager: new ObjectManager(store, referencedConfigMaps) };
  }
  const gets = (namespace: string, name: string) =>
    requestsFor(namespace, name).map((r) => r.query.resourceVersion ?? '');

  it('reads once per TTL (a minute without the Node annotation) and again after a pod registers', async () => {
    const { clock, manager } = await caching();
    configMap('c-a', 'app', { k: 'v' });
    manager.registerPod(podNaming('u1', 'c-a', 'app'));
    await manager.get('c-a', 'app');
    await manager.get('c-a', 'app');
    expect(gets('c-a', 'app')).toEqual(['']);
    clock.advance(59_000);
    await manager.get('c-a', 'app');
    expect(gets('c-a', 'app')).toEqual(['']);
    clock.advance(2000);
    await manager.get('c-a', 'app');
    // A refresh may come from the apiserver's cache, as upstream's.
    expect(gets('c-a', 'app')).toEqual(['', '0']);
    manager.registerPod(podNaming('u1', 'c-a', 'app'));
    await manager.get('c-a', 'app');
    // After a registration the object is read afresh, not from the apiserver's cache.
    expect(gets('c-a', 'app')).toEqual(['', '0', '']);
  });

  it("follows the Node's TTL annotation (0: every read), but never reads an immutable object again", async () => {
    const { manager } = await caching(0);
    configMap('c-b', 'hot', { k: 'v' });
    configMap('c-b', 'fixed', { k: 'v' }, { immutable: true });
    manager.registerPod(podNaming('u1', 'c-b', 'hot', 'fixed'));
    for (let i = 0; i < 3; i++) {
      await manager.get('c-b', 'hot');
      await manager.get('c-b', 'fixed');
    }
    manager.registerPod(podNaming('u1', 'c-b', 'hot', 'fixed'));
    await manager.get('c-b', 'fixed');
    expect([gets('c-b', 'hot').length, gets('c-b', 'fixed').length]).toEqual([3, 1]);
  });

  it('a refresh that fails serves what was read before; with nothing read, the failure', async () => {
    const { clock, manager } = await caching();
    configMap('c-c', 'app', { k: 'v' });
    manager.registerPod(podNaming('u1', 'c-c', 'app', 'never-read'));
    await manager.get('c-c', 'app');
    fake.api.inject((r) => (r.path.startsWith('/api/v1/namespaces/c-c/') ? { code: 500, reason: 'Boom' } : undefined));
    clock.advance(61_000);
    expect((await manager.get<Data>('c-c', 'app'))?.data).toEqual({ k: 'v' });
    await expect(manager.get('c-c', 'never-read')).rejects.toThrow('HTTP 500');
  });
});

describe('Get strategy', () => {
  it('reads the apiserver every time', async () => {
    const client = await createKubeClient(fake.kubeconfig, { timeoutMs: 3000 });
    const manager = new ObjectManager(gettingObjectStore(client, 'configmaps'), referencedConfigMaps);
    configMap('g-a', 'app', { k: 'v' });
    manager.registerPod(podNaming('u1', 'g-a', 'app'));
    for (let i = 0; i < 3; i++) await manager.get('g-a', 'app');
    expect(await manager.get('g-a', 'missing')).toBeNull();
    expect(requestsFor('g-a', 'app').length).toBe(3);
  });
});
