/**
 * kubeAPIQPS / kubeAPIBurst: the apiserver client waits for its turn, as client-go's rate limiter (a real HTTP server
 * counts arrivals).
 */
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeClient } from '../../src/lib/kube-client.js';
import { kubeconfigText } from '../fixtures/kubeconfig.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-rate-'));
const arrivals: number[] = [];
const paths: string[] = [];
const server = http.createServer((req, res) => {
  arrivals.push(performance.now());
  paths.push(req.url ?? '');
  res.setHeader('Content-Type', 'application/json');
  res.end('{"kind":"Status"}');
});
let kubeconfig = '';
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    kubeconfigText(`{server: "http://127.0.0.1:${(server.address() as { port: number }).port}"}`, '{token: t}'),
  );
});
afterAll(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('apiserver client rate limit', () => {
  it('sends the burst at once, then one request per 1/qps', async () => {
    arrivals.length = 0;
    const client = await createKubeClient(kubeconfig, { timeoutMs: 5000, qps: 20, burst: 2 });
    const t0 = performance.now();
    const statuses = await Promise.all(
      Array.from({ length: 6 }, () => client.request({ path: '/api/v1/nodes' }).then((r) => r.status)),
    );
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
    arrivals.sort((a, b) => a - b);
    // Four requests beyond the burst of two, 50 ms apart: by the k-th arrival, k + 1 requests were sent, the last of
    // them no sooner than (k - 1) × 50 ms. (Gaps between arrivals are not bounded: a loaded machine may delay one.)
    for (let k = 2; k < 6; k++) expect(arrivals[k] - t0).toBeGreaterThanOrEqual((k - 1) * 50 - 5);
  });
  it('a request whose signal aborts while it waits is not sent', async () => {
    arrivals.length = 0;
    const client = await createKubeClient(kubeconfig, { timeoutMs: 5000, qps: 1, burst: 1 });
    await client.request({ path: '/first' });
    const ac = new AbortController();
    const waiting = client.request({ path: '/second', signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    await expect(waiting).rejects.toThrow(/aborted/);
    expect(arrivals).toHaveLength(1);
  });
  it('the unthrottled view (heartbeats, events) does not wait behind the limited requests', async () => {
    paths.length = 0;
    const client = await createKubeClient(kubeconfig, { timeoutMs: 5000, qps: 2, burst: 1 });
    const limited = Promise.all([1, 2, 3].map((i) => client.request({ path: `/limited-${i}` })));
    expect((await client.unthrottled().request({ path: '/heartbeat' })).status).toBe(200);
    await limited;
    // The heartbeat went out while two limited requests still waited their 500 ms turns.
    expect(paths).toEqual(['/limited-1', '/heartbeat', '/limited-2', '/limited-3']);
    const u = client.unthrottled();
    expect(u.unthrottled()).toBe(u);
  });
});
