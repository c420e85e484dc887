/**
 * The apiserver client as client-go behaves under load: an answer that says when to come back (429,
 * or a 5xx with Retry-After) is asked again after that many seconds, up to 10 times; one that does
 * not say stands. A real HTTP server answers.
 */
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubeClient, retryAfterMs } from '../../src/lib/kube-client.js';
import { jittered } from '../../src/lib/list-watch.js';
import { kubeconfigText } from '../fixtures/kubeconfig.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-retry-'));
/** Per path: the answers still to give before a 200. */
const script = new Map<string, { status: number; retryAfter?: string }[]>();
const seen: { path: string; at: number; method: string }[] = [];
const server = http.createServer((req, res) => {
  seen.push({ path: req.url ?? '', at: performance.now(), method: req.method ?? '' });
  const next = script.get(req.url ?? '')?.shift();
  res.setHeader('Content-Type', 'application/json');
  if (next) {
    if (next.retryAfter !== undefined) res.setHeader('Retry-After', next.retryAfter);
    res.statusCode = next.status;
    return res.end(JSON.stringify({ kind: 'Status', code: next.status }));
  }
  res.end('{"kind":"Status","code":200}');
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

describe('429 and Retry-After (client-go checkWait)', () => {
  it('asks again after Retry-After seconds, POSTs included, and returns the answer that came', async () => {
    script.set('/api/v1/nodes', [
      { status: 429, retryAfter: '1' },
      { status: 503, retryAfter: '0' },
    ]);
    script.set('/api/v1/namespaces/default/events', [{ status: 429, retryAfter: '1' }]);
    const client = await createKubeClient(kubeconfig, { timeoutMs: 5000 });
    seen.length = 0;
    const [get, post] = await Promise.all([
      client.request({ path: '/api/v1/nodes' }),
      client.post('/api/v1/namespaces/default/events', {}),
    ]);
    expect([get.status, post.status]).toEqual([200, 200]);
    const gets = seen.filter((s) => s.path === '/api/v1/nodes');
    expect(gets).toHaveLength(3);
    expect(gets[1].at - gets[0].at).toBeGreaterThanOrEqual(950);
    expect(seen.filter((s) => s.method === 'POST')).toHaveLength(2);
  });

  it('an answer without Retry-After stands, and ten retries at most', async () => {
    script.set('/no-retry-after', [{ status: 429 }]);
    script.set(
      '/always',
      Array.from({ length: 20 }, () => ({ status: 429, retryAfter: '0' })),
    );
    const client = await createKubeClient(kubeconfig, { timeoutMs: 5000 });
    seen.length = 0;
    expect((await client.request({ path: '/no-retry-after' })).status).toBe(429);
    expect((await client.request({ path: '/always' })).status).toBe(429);
    expect(seen.map((s) => s.path)).toEqual(['/no-retry-after', ...Array.from({ length: 11 }, () => '/always')]);
  });

  it('retryAfterMs and the reflector’s jitter', () => {
    expect([
      retryAfterMs(429, '2'),
      retryAfterMs(500, '3'),
      retryAfterMs(429, undefined),
      retryAfterMs(404, '1'),
      retryAfterMs(503, 'soon'),
    ]).toEqual([2000, 3000, undefined, undefined, undefined]);
    expect([jittered(800, 0), jittered(800, 0.5)]).toEqual([800, 1200]);
  });
});
