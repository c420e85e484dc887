/**
 * The reflector against the fake apiserver over real HTTPS: snapshots follow the watch; a silent
 * stall trips the watchdog and the watch resumes from its resourceVersion (no relist); 410 Gone
 * relists; an unreachable apiserver is retried with backoff; field selectors are honoured.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKubeClient } from '../../src/lib/kube-client.js';
import { ListWatch } from '../../src/lib/list-watch.js';
import { createLogger } from '../../src/lib/logger.js';
import { realClock } from '../../src/lib/clock.js';
import { startFakeWithKubeconfig, type FakeKubeApiserver } from '../fixtures/apiserver/server.js';
import { until } from '../e2e/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-lw-'));
let api: FakeKubeApiserver;
let kubeconfig: string;
const logger = createLogger({ level: 'fatal' });
type P = { metadata: { name: string; namespace?: string; resourceVersion?: string }; spec?: { nodeName?: string } };

beforeAll(async () => ({ api, kubeconfig } = await startFakeWithKubeconfig(dir, { user: 'tester' })));
afterAll(async () => {
  await api.close();
  rmSync(dir, { recursive: true, force: true });
});

const mk = (name: string, node: string) =>
  api.store.create('pods', { metadata: { name, namespace: 'default' }, spec: { nodeName: node, containers: [] } });

describe('ListWatch', () => {
  it('follows the watch, survives a silent stall (watchdog) without relisting, relists on 410', async () => {
    const client = await createKubeClient(kubeconfig, { timeoutMs: 5000 });
    const lw = new ListWatch<P>({
      client,
      path: '/api/v1/pods',
      fieldSelector: 'spec.nodeName=n1',
      clock: realClock,
      logger,
      watchdogMs: 600,
      backoff: { initialMs: 50, maxMs: 200 },
    });
    let names: string[] = [];
    const ctl = new AbortController();
    mk('a', 'n1');
    mk('other', 'n2');
    lw.start({
      signal: ctl.signal,
      onSnapshot: (items) => {
        names = items.map((i) => i.metadata.name).sort();
      },
    });
    await until(() => names.join() === 'a', 5000, 'list');
    mk('b', 'n1');
    await until(() => names.join() === 'a,b', 5000, 'watch add');
    api.store.remove('pods', 'default', 'a');
    await until(() => names.join() === 'b', 5000, 'watch delete');
    // Stall: events are swallowed; the watchdog (600 ms) reopens the watch from the last RV, which replays them.
    api.stallWatches(true);
    mk('c', 'n1');
    const watches = lw.watches;
    await new Promise((r) => setTimeout(r, 100));
    api.stallWatches(false);
    await until(() => names.join() === 'b,c', 5000, 'event replayed after the watchdog');
    expect(lw.watches).toBeGreaterThan(watches);
    expect(lw.lists).toBe(1);
    // 410: the RV falls behind a compaction.
    api.stallWatches(true);
    mk('d', 'n1');
    api.store.compact();
    api.dropWatches();
    api.stallWatches(false);
    await until(() => lw.lists === 2 && names.join() === 'b,c,d', 5000, 'relist after 410');
    ctl.abort();
  });

  it('retries an unreachable apiserver with backoff and recovers after a restart', async () => {
    const client = await createKubeClient(kubeconfig, { timeoutMs: 1000 });
    const lw = new ListWatch<P>({
      client,
      path: '/api/v1/pods',
      fieldSelector: 'spec.nodeName=n9',
      clock: realClock,
      logger,
      backoff: { initialMs: 50, maxMs: 400 },
    });
    let names: string[] = [];
    const ctl = new AbortController();
    lw.start({
      signal: ctl.signal,
      onSnapshot: (items) => {
        names = items.map((i) => i.metadata.name);
      },
    });
    await until(() => lw.watches >= 1, 5000, 'watching');
    const restarted = api.restart(1500);
    await new Promise((r) => setTimeout(r, 200));
    mk('late', 'n9');
    await restarted;
    await until(() => names.includes('late'), 5000, 'event after restart');
    expect(lw.lists).toBe(1);
    ctl.abort();
  });
});

describe('ListWatch paging (client-go pager)', () => {
  it('lists a large collection in pages of 500 with continue tokens', async () => {
    for (let i = 0; i < 1200; i++)
      api.store.create('configmaps', {
        metadata: { name: `cm-${String(i).padStart(4, '0')}`, namespace: 'paged' },
        data: {},
      });
    const client = await createKubeClient(kubeconfig, { timeoutMs: 5000 });
    const lw = new ListWatch<P>({
      client,
      path: '/api/v1/namespaces/paged/configmaps',
      clock: realClock,
      logger,
      backoff: { initialMs: 50, maxMs: 200 },
    });
    const ctl = new AbortController();
    let count = 0;
    const before = api.requests.length;
    lw.start({ signal: ctl.signal, onSnapshot: (items) => (count = items.length) });
    await until(() => count === 1200, 10_000, 'all 1200 listed');
    ctl.abort();
    const lists = api.requests
      .slice(before)
      .filter((r) => r.method === 'GET' && !r.query.watch && r.path.endsWith('/paged/configmaps'));
    expect(lists.map((r) => [r.query.limit, !!r.query.continue])).toEqual([
      ['500', false],
      ['500', true],
      ['500', true],
    ]);
  });
});
