import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKubeClient, type KubeClient } from '../../../src/lib/kube-client.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { requiresRefresh, TokenManager } from '../../../src/agent/volume/token-manager.js';
import { startFakeWithKubeconfig, type FakeKubeApiserver } from '../../fixtures/apiserver/server.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-token-'));
let api: FakeKubeApiserver;
let client: KubeClient;
beforeAll(async () => {
  const f = await startFakeWithKubeconfig(dir, { user: 'system:node:n1' });
  api = f.api;
  client = await createKubeClient(f.kubeconfig, { timeoutMs: 5000 });
});
/** A pod bound to the node: NodeRestriction gives a node tokens bound to its own pods only. */
function podOnNode(name: string): { name: string; uid: string } {
  const pod = api.store.create('pods', {
    metadata: { name, namespace: 'default' },
    spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }] },
  });
  return { name, uid: pod.metadata.uid };
}
afterAll(async () => {
  await api.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('requiresRefresh (upstream token manager)', () => {
  const exp = 10_000_000;
  it.each([
    ['fresh token', exp - 3600_000, 3600, 0, false],
    ['just before 80 % of the lifetime', exp - 721_000, 3600, 0, false],
    ['past 80 % of the lifetime', exp - 719_000, 3600, 0, true],
    ['jitter brings the refresh earlier', exp - 725_000, 3600, 10_000, true],
    ['older than 24 h even with a long lifetime', exp - 90 * 86400_000 + 24 * 3600_000 + 1, 90 * 86400, 0, true],
    ['a one-year token at one hour', exp - 365 * 86400_000 + 3600_000, 365 * 86400, 0, false],
  ])('%s', (_n, now, seconds, jitter, want) =>
    expect(requiresRefresh({ expiresAt: exp, expirationSeconds: seconds }, now, jitter)).toBe(want),
  );
});

describe('TokenManager against the fake apiserver', () => {
  it('requests a bound token once, serves it from cache, and refreshes it after 80 % of its lifetime (fake clock)', async () => {
    const clock = new FakeClock(Date.now());
    const m = new TokenManager({ client, clock, random: () => 0 });
    const key = {
      namespace: 'default',
      serviceAccount: 'default',
      audiences: ['vault'],
      expirationSeconds: 3600,
      pod: podOnNode('p1'),
    };
    const first = await m.getToken(key);
    const t1 = first.token;
    // As TokenRequestStatus: RFC 3339 to the second, the token's lifetime from now.
    expect(first.expirationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(Math.abs(Date.parse(first.expirationTimestamp) - Date.now() - 3600_000)).toBeLessThan(60_000);
    expect(api.issuedTokens.at(-1)).toMatchObject({
      token: t1,
      audiences: ['vault'],
      expirationSeconds: 3600,
      boundObjectRef: { apiVersion: 'v1', kind: 'Pod', ...key.pod },
    });
    const before = api.issuedTokens.length;
    clock.advance(2800_000);
    expect((await m.getToken(key)).token).toBe(t1);
    expect(api.issuedTokens.length).toBe(before);
    clock.advance(100_000);
    const t2 = (await m.getToken(key)).token;
    expect(t2).not.toBe(t1);
    expect(api.issuedTokens.length).toBe(before + 1);
  });

  it('keeps serving an unexpired token when a refresh fails; errors without one', async () => {
    const clock = new FakeClock(Date.now());
    const m = new TokenManager({ client, clock, random: () => 0 });
    const key = {
      namespace: 'default',
      serviceAccount: 'default',
      audiences: [],
      expirationSeconds: 3600,
      pod: podOnNode('p2'),
    };
    const t1 = (await m.getToken(key)).token;
    clock.advance(3000_000);
    api.inject(({ path }) => (path.endsWith('/token') ? { code: 500, reason: 'InternalError' } : undefined));
    try {
      expect((await m.getToken(key)).token).toBe(t1);
      await expect(m.getToken({ ...key, serviceAccount: 'default', pod: podOnNode('q') })).rejects.toThrow(
        /failed to fetch token: .*HTTP 500/,
      );
    } finally {
      api.inject(undefined);
    }
    m.forgetPod(key.pod.uid);
    expect((await m.getToken(key)).token).not.toBe(t1);
  });

  it("a missing service account is an error with the apiserver's message", async () => {
    const m = new TokenManager({ client, clock: new FakeClock(Date.now()) });
    await expect(
      m.getToken({
        namespace: 'default',
        serviceAccount: 'nope',
        audiences: [],
        expirationSeconds: 3600,
        pod: podOnNode('p3'),
      }),
    ).rejects.toThrow('serviceaccounts "nope" not found');
  });
});
