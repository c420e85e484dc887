/**
 * The apiserver client's requests and watches share one HTTP/2 connection, as client-go's do (a kubelet with a watch
 * per ConfigMap and Secret would otherwise hold a TLS connection each); against an apiserver that speaks only HTTP/1.1
 * they go as HTTP/1.1 requests; a connection that goes away, or goes silent, is replaced.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import { setMaxListeners } from 'node:events';
import { createKubeClient, type KubeClient } from '../../src/lib/kube-client.js';
import { ApiserverSession } from '../../src/lib/h2-session.js';
import { startFakeWithKubeconfig, type FakeKubeApiserver } from '../fixtures/apiserver/server.js';
import { until } from '../e2e/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-h2-'));
const servers: FakeKubeApiserver[] = [];
afterAll(async () => {
  for (const api of servers) await api.close();
  rmSync(dir, { recursive: true, force: true });
});

async function fake(http1Only: boolean) {
  const started = await startFakeWithKubeconfig(mkdtempSync(join(dir, 'api-')), { user: 'tester', http1Only });
  servers.push(started.api);
  return { ...started, client: await createKubeClient(started.kubeconfig, { timeoutMs: 5000 }) };
}

/** Opens `count` watches of one ConfigMap each; resolves once each had its first event; returns their stop. */
async function watchConfigMaps(api: FakeKubeApiserver, client: KubeClient, count: number) {
  const stop = new AbortController();
  // One signal for all of them, as the kubelet's lifetime signal (which has no listener limit either).
  setMaxListeners(0, stop.signal);
  const seen = new Set<string>();
  for (let i = 0; i < count; i++) {
    if (!api.store.get('configmaps', 'default', `cm-${i}`))
      api.store.create('configmaps', { metadata: { name: `cm-${i}`, namespace: 'default' }, data: { i: String(i) } });
    void client
      .watch<{ metadata: { name: string } }>(
        {
          path: '/api/v1/namespaces/default/configmaps',
          query: { fieldSelector: `metadata.name=cm-${i}`, resourceVersion: '0' },
          signal: stop.signal,
        },
        (event) => seen.add(event.object.metadata.name),
      )
      .catch(() => {});
  }
  await until(() => seen.size === count, 10_000, 'every watch delivered');
  return { stop: () => stop.abort(), seen };
}

describe('watches over HTTP/2', () => {
  it('share one connection: 100 watches, one HTTP/2 connection, every event delivered', async () => {
    const { api, client } = await fake(false);
    const watches = await watchConfigMaps(api, client, 100);
    try {
      const watchRequests = api.requests.filter((r) => r.query.watch);
      expect(watchRequests).toHaveLength(100);
      expect(new Set(watchRequests.map((r) => r.httpVersion))).toEqual(new Set(['2.0']));
      expect(api.connections.h2).toBe(1);
      // A change reaches its watch over the shared connection.
      watches.seen.clear();
      const current = api.store.get('configmaps', 'default', 'cm-42')!;
      api.store.update('configmaps', { ...current, data: { i: 'changed' } });
      await until(() => watches.seen.has('cm-42'), 5000, 'change delivered');
    } finally {
      watches.stop();
    }
  });

  it('a connection that went away is replaced by the next watch', async () => {
    const { api, client } = await fake(false);
    const first = await watchConfigMaps(api, client, 3);
    first.stop();
    await api.restart(100);
    const second = await watchConfigMaps(api, client, 3);
    second.stop();
    expect(api.connections.h2).toBe(2);
  });

  it('go as HTTP/1.1 requests to an apiserver that does not offer HTTP/2', async () => {
    const { api, client } = await fake(true);
    const watches = await watchConfigMaps(api, client, 5);
    watches.stop();
    expect(new Set(api.requests.filter((r) => r.query.watch).map((r) => r.httpVersion))).toEqual(new Set(['1.1']));
    expect(api.connections.h2).toBe(0);
  });
});

describe('the HTTP/2 connection health check', () => {
  it('drops a connection that went silent (no PING answer) and connects again', async () => {
    const { api } = await fake(false);
    // A relay to the apiserver that can stop passing bytes while keeping both ends open (a half-open connection).
    let blackhole = false;
    const relay = net.createServer((client) => {
      const upstream = net.connect(api.port, '127.0.0.1');
      client.on('data', (chunk) => blackhole || upstream.write(chunk));
      upstream.on('data', (chunk) => blackhole || client.write(chunk));
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    try {
      const port = (relay.address() as net.AddressInfo).port;
      const session = new ApiserverSession(
        `https://127.0.0.1:${port}`,
        { rejectUnauthorized: false },
        { readIdleMs: 200, pingTimeoutMs: 300 },
      );
      const read = async () => {
        const answer = await session.request(
          'GET',
          '/api/v1/namespaces/default/configmaps',
          { authorization: 'Bearer test-token' },
          { timeoutMs: 2000 },
        );
        answer.stream.resume();
        return answer.status;
      };
      expect(await read()).toBe(200);
      blackhole = true;
      // Silent: the PING goes unanswered and the connection is dropped; the relay passes bytes again for the next.
      await new Promise((resolve) => setTimeout(resolve, 800));
      blackhole = false;
      expect(await read()).toBe(200);
      expect(api.connections.h2).toBe(2);
      session.close();
    } finally {
      relay.close();
    }
  });
});

describe('requests', () => {
  it('share the HTTP/2 connection too: a burst of 60 opens no other connection; writes carry their body', async () => {
    const { api, client } = await fake(false);
    await Promise.all(
      Array.from({ length: 60 }, () => client.request({ path: '/api/v1/namespaces/default/configmaps' })),
    );
    const created = await client.post<{ metadata: { name: string } }>('/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'posted' },
      data: { k: 'v' },
    });
    expect([created.status, created.body?.metadata.name]).toEqual([201, 'posted']);
    expect(api.store.get('configmaps', 'default', 'posted')?.data).toEqual({ k: 'v' });
    // A DELETE carries its DeleteOptions (regression: Node ends a DELETE's stream at once unless told).
    const uid = api.store.get('configmaps', 'default', 'posted')!.metadata.uid;
    const deleted = await client.request({
      method: 'DELETE',
      path: '/api/v1/namespaces/default/configmaps/posted',
      body: { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid } },
    });
    expect([deleted.status, api.store.get('configmaps', 'default', 'posted')]).toEqual([200, undefined]);
    expect(api.connections).toEqual({ h2: 1, 'http/1.1': 0 });
    expect(new Set(api.requests.map((r) => r.httpVersion))).toEqual(new Set(['2.0']));
  });

  it('over HTTP/1.1 keep at most 25 idle connections after a burst, as client-go (MaxIdleConnsPerHost)', async () => {
    const { api, client } = await fake(true);
    await Promise.all(
      Array.from({ length: 60 }, () => client.request({ path: '/api/v1/namespaces/default/configmaps' })),
    );
    expect(api.connections['http/1.1']).toBeGreaterThan(25);
    await until(() => api.openConnections() <= 25, 5000, 'idle connections beyond 25 closed');
  });
});
