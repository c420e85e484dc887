/**
 * The secure port admits exactly whom the Go kubelet admits: real TLS, real client certificates,
 * a real HTTPS fake apiserver for TokenReview / SubjectAccessReview, the kubeconfig the kubelet
 * would be given, and the same auth composition main.ts uses.
 *
 * Matrix: credentials × anonymous on/off × paths × SAR allow/deny → exact status code and the
 * exact SubjectAccessReview sent (or none).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { createCa, issueCert, type PemPair } from '../../src/server/pki.js';
import { buildSecureServer } from '../../src/server/servers.js';
import { buildAuth } from '../../src/server/build-auth.js';
import { kubeletConfigSchema } from '../../src/config/schema.js';
import { createKubeClient } from '../../src/lib/kube-client.js';
import { createLogger } from '../../src/lib/logger.js';
import { FakeClock, realClock, type Clock } from '../../src/lib/clock.js';
import { inertHost } from '../../src/routes/inert-host.js';
import { startFakeApiserver, type FakeApiserver } from '../fixtures/fake-apiserver.js';

const node = 'matrix-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-auth-'));
const callerToken = 'kubelet-kubeconfig-token-3f9a';
const validToken = 'valid-token-a1b2c3d4e5';
const invalidToken = 'invalid-token-z9y8x7w6';
let logText = '';
const logSink = new Writable({
  write(chunk, _e, cb) {
    logText += chunk.toString();
    cb();
  },
});

const host = inertHost(node);

let clusterCa: PemPair;
let pem: Record<'alice' | 'mallory' | 'expired' | 'serverOnly' | 'kubelet', PemPair>;
let api: FakeApiserver;
const servers: FastifyInstance[] = [];

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

/** A kubelet secure server wired as main.ts does, against the fake at `mode`. */
async function kubelet(o: { mode: string; anonymous: boolean; clock?: Clock; timeoutMs?: number }): Promise<number> {
  const kc = kubeletConfigSchema.parse({
    authentication: { anonymous: { enabled: o.anonymous }, webhook: { enabled: true } },
    authorization: { mode: 'Webhook' },
  });
  const kubeconfig = file(
    `kubeconfig-${o.mode}-${o.anonymous}-${servers.length}`,
    [
      'apiVersion: v1',
      'kind: Config',
      'current-context: c',
      `clusters: [{name: k, cluster: {server: "${api.url}/${o.mode}", certificate-authority-data: ${Buffer.from(apiCa.cert).toString('base64')}}}]`,
      `users: [{name: u, user: {token: ${callerToken}}}]`,
      'contexts: [{name: c, context: {cluster: k, user: u}}]',
      '',
    ].join('\n'),
  );
  const client = await createKubeClient(kubeconfig, { timeoutMs: 10_000 });
  const auth = buildAuth({
    authentication: kc.authentication,
    authorization: kc.authorization,
    hasClientCA: true,
    api: client,
    clock: o.clock ?? realClock,
    webhookTimeoutMs: o.timeoutMs,
  });
  const app = await buildSecureServer({
    host,
    logger: createLogger({ level: 'trace', destination: logSink }),
    tls: {
      certFile: file('kubelet.crt', pem.kubelet.cert),
      keyFile: file('kubelet.key', pem.kubelet.key),
      clientCAFile: file('client-ca.crt', clusterCa.cert),
    },
    ...auth,
    enableDebuggingHandlers: true,
    configz: kc,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  servers.push(app);
  return (app.server.address() as AddressInfo).port;
}

let apiCa: PemPair;

type Cred = 'none' | 'badCert' | 'otherCaCert' | 'validCert' | 'validToken' | 'invalidToken';
function request(port: number, path: string, cred: Cred, method = 'GET'): Promise<{ status: number; body: string }> {
  const certFor: Partial<Record<Cred, PemPair>> = {
    badCert: pem.expired,
    otherCaCert: pem.mallory,
    validCert: pem.alice,
  };
  const tokenFor: Partial<Record<Cred, string>> = { validToken, invalidToken };
  const c = certFor[cred];
  const t = tokenFor[cred];
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method,
        ca: clusterCa.cert,
        servername: 'localhost',
        cert: c?.cert,
        key: c?.key,
        agent: false,
        headers: t ? { Authorization: `Bearer ${t}` } : {},
      },
      (res) => {
        let b = '';
        res.on('data', (d) => (b += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: b }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  clusterCa = await createCa('cluster-ca');
  const otherCa = await createCa('other-ca');
  apiCa = await createCa('apiserver-ca');
  pem = {
    alice: await issueCert(clusterCa, { cn: 'alice', org: 'devs' }),
    mallory: await issueCert(otherCa, { cn: 'mallory', org: 'system:masters' }),
    expired: await issueCert(clusterCa, { cn: 'eve', org: 'system:masters', expired: true }),
    serverOnly: await issueCert(clusterCa, { cn: 'trent', server: true }),
    kubelet: await issueCert(clusterCa, { cn: node, server: true, sans: { dns: ['localhost'], ips: ['127.0.0.1'] } }),
  };
  api = await startFakeApiserver({
    serving: await issueCert(apiCa, {
      cn: 'apiserver',
      server: true,
      sans: { dns: ['localhost'], ips: ['127.0.0.1'] },
    }),
    callerToken,
    slowMs: 2000,
  });
  api.tokens.set(validToken, { username: 'bob', uid: 'uid-bob', groups: ['team-b'] });
}, 30_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await api?.close();
  rmSync(dir, { recursive: true, force: true });
});

// What each path answers once admitted, and the subresources it authorizes as, in turn (upstream
// mapping with KubeletFineGrainedAuthz: the fine-grained one, then nodes/proxy).
const paths: { path: string; subresources: string[]; admitted: number }[] = [
  { path: '/pods', subresources: ['pods', 'proxy'], admitted: 200 },
  { path: '/stats/summary', subresources: ['stats'], admitted: 503 },
  { path: '/metrics', subresources: ['metrics'], admitted: 200 },
  { path: '/logs/', subresources: ['log'], admitted: 200 },
  { path: `/containerLogs/default/web-${node}/main`, subresources: ['proxy'], admitted: 404 },
  { path: `/exec/default/web-${node}/main?command=ls&output=1`, subresources: ['proxy'], admitted: 400 }, // not an upgrade
  { path: '/configz', subresources: ['configz', 'proxy'], admitted: 200 },
  { path: '/healthz', subresources: ['healthz', 'proxy'], admitted: 200 },
];
const users: Record<Cred, { name: string; groups: string[]; uid?: string } | 'reject' | 'anonymous'> = {
  none: 'anonymous',
  badCert: 'reject',
  otherCaCert: 'reject',
  validCert: { name: 'alice', groups: ['devs', 'system:authenticated'] },
  validToken: { name: 'bob', uid: 'uid-bob', groups: ['team-b', 'system:authenticated'] },
  invalidToken: 'reject',
};

describe('authentication × authorization matrix on 10250', () => {
  for (const anonymous of [false, true]) {
    for (const policy of ['allow', 'deny'] as const) {
      it(`anonymous ${anonymous ? 'enabled' : 'disabled'}, SAR ${policy}`, async () => {
        const port = await kubelet({ mode: policy, anonymous });
        const rows: string[] = [];
        const want: string[] = [];
        // Paths that authorize as the same attributes share one cached decision: one SAR each.
        const sent = new Set<string>();
        for (const cred of Object.keys(users) as Cred[]) {
          for (const p of paths) {
            api.reviews.length = 0;
            const r = await request(port, p.path, cred);
            const sars = api.reviews.filter((x) => x.kind === 'SubjectAccessReview');
            const u = users[cred];
            const user =
              u === 'anonymous'
                ? anonymous
                  ? { name: 'system:anonymous', groups: ['system:unauthenticated'] }
                  : undefined
                : u === 'reject'
                  ? undefined
                  : u;
            const code = !user ? 401 : policy === 'deny' ? 403 : p.admitted;
            // Allowed: only the first subresource is asked; denied: each in turn.
            const asked = user ? (policy === 'allow' ? p.subresources.slice(0, 1) : p.subresources) : [];
            const expected = asked
              .map((subresource) =>
                JSON.stringify({
                  resourceAttributes: {
                    namespace: '',
                    verb: 'get',
                    group: '',
                    version: 'v1',
                    resource: 'nodes',
                    subresource,
                    name: node,
                  },
                  user: user!.name,
                  groups: user!.groups,
                  ...(user!.uid ? { uid: user!.uid } : {}),
                }),
              )
              .filter((sar) => !sent.has(sar));
            for (const sar of expected) sent.add(sar);
            const expectedSar = expected.length ? expected.join('|') : 'none';
            rows.push(
              `${cred} ${p.path} → ${r.status} sar=${sars.length ? sars.map((s) => JSON.stringify(s.spec)).join('|') : 'none'}`,
            );
            want.push(`${cred} ${p.path} → ${code} sar=${expectedSar}`);
            if (code === 401) expect(r.body, `${cred} ${p.path}`).toBe('Unauthorized');
            if (code === 403)
              expect(r.body, `${cred} ${p.path}`).toBe(
                `Forbidden (user=${user!.name}, verb=get, resource=nodes, subresource(s)=[${p.subresources.join(' ')}])\n`,
              );
            for (const tr of api.reviews.filter((x) => x.kind === 'TokenReview'))
              expect(tr.spec).toEqual({ token: cred === 'validToken' ? validToken : invalidToken });
          }
        }
        expect(rows).toEqual(want);
      }, 60_000);
    }
  }

  it('maps POST to verb create and rejects a certificate not meant for client auth', async () => {
    const port = await kubelet({ mode: 'allow', anonymous: false });
    api.reviews.length = 0;
    await request(port, `/exec/default/web-${node}/main?command=ls&output=1`, 'validCert', 'POST');
    expect(api.reviews.map((x) => (x.spec.resourceAttributes as { verb: string }).verb)).toEqual(['create']);
    const c = await new Promise<number>((resolve, reject) => {
      https
        .get(
          {
            host: '127.0.0.1',
            port,
            path: '/pods',
            ca: clusterCa.cert,
            servername: 'localhost',
            cert: pem.serverOnly.cert,
            key: pem.serverOnly.key,
            agent: false,
          },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        )
        .on('error', reject);
    });
    expect(c).toBe(401);
  });

  it('answers 500 when the SAR webhook fails or is slow (bounded by its timeout), 401 when the TokenReview does', async () => {
    for (const mode of ['error', 'slow']) {
      const port = await kubelet({ mode, anonymous: false, timeoutMs: 300 });
      const t0 = Date.now();
      const r = await request(port, '/pods', 'validCert');
      expect(r.status, mode).toBe(500);
      expect(r.body).toBe('Authorization error (user=alice, verb=get, resource=nodes, subresource(s)=[pods proxy])');
      expect(Date.now() - t0).toBeLessThan(1900); // the slow webhook answers after 2 s
      expect((await request(port, '/pods', 'validToken')).status, mode).toBe(401);
    }
  });

  it('caches allowed decisions for cacheAuthorizedTTL, denied for cacheUnauthorizedTTL, tokens for cacheTTL', async () => {
    const clock = new FakeClock(Date.now());
    const allowPort = await kubelet({ mode: 'allow', anonymous: false, clock });
    const denyPort = await kubelet({ mode: 'deny', anonymous: false, clock });
    const count = (kind: string) => api.reviews.filter((x) => x.kind === kind).length;
    api.reviews.length = 0;
    expect((await request(allowPort, '/pods', 'validToken')).status).toBe(200);
    expect((await request(allowPort, '/pods', 'validToken')).status).toBe(200);
    expect([count('TokenReview'), count('SubjectAccessReview')]).toEqual([1, 1]);
    clock.advance(2 * 60_000 + 1); // token cache (2m) expired, allowed decision (5m) not
    expect((await request(allowPort, '/pods', 'validToken')).status).toBe(200);
    expect([count('TokenReview'), count('SubjectAccessReview')]).toEqual([2, 1]);
    clock.advance(3 * 60_000);
    expect((await request(allowPort, '/pods', 'validCert')).status).toBe(200);
    expect((await request(allowPort, '/pods', 'validToken')).status).toBe(200);
    expect(count('SubjectAccessReview')).toBe(3);
    api.reviews.length = 0;
    expect((await request(denyPort, '/pods', 'validCert')).status).toBe(403);
    clock.advance(29_000);
    expect((await request(denyPort, '/pods', 'validCert')).status).toBe(403);
    // A denied /pods asks nodes/pods, then nodes/proxy: two decisions, each cached.
    expect(count('SubjectAccessReview')).toBe(2);
    clock.advance(2_000);
    expect((await request(denyPort, '/pods', 'validCert')).status).toBe(403);
    expect(count('SubjectAccessReview')).toBe(4);
  });

  it('never writes a token or a private key to the logs', () => {
    expect(logText.length).toBeGreaterThan(1000);
    for (const secret of [validToken, invalidToken, callerToken]) expect(logText).not.toContain(secret);
    for (const p of Object.values(pem)) expect(logText).not.toContain(p.key.split('\n')[1]);
    expect(logText).toContain('Unable to authenticate the request');
  });
});
