/**
 * TLS on the secure port with real clients: tlsMinVersion, tlsCipherSuites (Go names), tlsCurvePreferences, the
 * serving certificate reloaded from disk without a restart, and the read-only port's surface.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { createCa, issueCert, type PemPair } from '../../src/server/pki.js';
import { buildReadOnlyServer, buildSecureServer } from '../../src/server/servers.js';
import { buildAuth } from '../../src/server/build-auth.js';
import { kubeletConfigSchema } from '../../src/config/schema.js';
import { realClock } from '../../src/lib/clock.js';
import { silentLogger } from '../../src/lib/logger.js';
import { inertHost } from '../../src/routes/inert-host.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-tls-'));
const host = inertHost('tls-node');
let ca: PemPair;
let client: PemPair;
const apps: FastifyInstance[] = [];
const write = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

async function secure(o: {
  minVersion?: string;
  cipherSuites?: string[];
  curvePreferences?: (number | string)[];
  name: string;
}): Promise<{ port: number; certFile: string; keyFile: string }> {
  const serving = await issueCert(ca, {
    cn: `serving-1-${o.name}`,
    server: true,
    sans: { dns: ['localhost'], ips: ['127.0.0.1'] },
  });
  const certFile = write(`${o.name}.crt`, serving.cert);
  const keyFile = write(`${o.name}.key`, serving.key);
  const kc = kubeletConfigSchema.parse({
    authentication: { webhook: { enabled: false } },
    authorization: { mode: 'AlwaysAllow' },
  });
  const app = await buildSecureServer({
    host,
    logger: silentLogger,
    tls: {
      certFile,
      keyFile,
      clientCAFile: write('ca.crt', ca.cert),
      minVersion: o.minVersion,
      cipherSuites: o.cipherSuites,
      curvePreferences: o.curvePreferences,
    },
    ...buildAuth({
      authentication: kc.authentication,
      authorization: kc.authorization,
      hasClientCA: true,
      clock: realClock,
    }),
    enableDebuggingHandlers: true,
    tlsReloadIntervalMs: 100,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  apps.push(app);
  return { port: (app.server.address() as AddressInfo).port, certFile, keyFile };
}

/** Handshakes with `opts`; resolves the negotiated protocol, cipher and peer CN, or the error code. */
function handshake(
  port: number,
  opts: tls.ConnectionOptions = {},
): Promise<{ protocol?: string | null; cipher?: string; cn?: string; error?: string }> {
  return new Promise((resolve) => {
    const s = tls.connect(
      { host: '127.0.0.1', port, ca: ca.cert, servername: 'localhost', cert: client.cert, key: client.key, ...opts },
      () => {
        const r = {
          protocol: s.getProtocol(),
          cipher: s.getCipher().name,
          cn: String(s.getPeerCertificate().subject.CN),
        };
        s.end();
        resolve(r);
      },
    );
    s.on('error', (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
  });
}

beforeAll(async () => {
  ca = await createCa('tls-test-ca');
  client = await issueCert(ca, { cn: 'admin', org: 'system:masters' });
});
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('secure port TLS', () => {
  it('defaults to TLS 1.2 or later and refuses TLS 1.1', async () => {
    const { port } = await secure({ name: 'default' });
    expect((await handshake(port)).protocol).toBe('TLSv1.3');
    expect((await handshake(port, { maxVersion: 'TLSv1.2' })).protocol).toBe('TLSv1.2');
    expect((await handshake(port, { maxVersion: 'TLSv1.1', minVersion: 'TLSv1' })).error).toBeDefined();
  });

  it('honours tlsMinVersion: VersionTLS13 refuses a TLS 1.2 client', async () => {
    const { port } = await secure({ name: 'tls13', minVersion: 'VersionTLS13' });
    expect((await handshake(port)).protocol).toBe('TLSv1.3');
    expect((await handshake(port, { maxVersion: 'TLSv1.2' })).error).toBeDefined();
  });

  it('honours tlsCipherSuites (Go names) for TLS 1.2', async () => {
    const { port } = await secure({ name: 'ciphers', cipherSuites: ['TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384'] });
    const ok = await handshake(port, { maxVersion: 'TLSv1.2' });
    expect(ok.cipher).toBe('ECDHE-ECDSA-AES256-GCM-SHA384');
    expect(
      (await handshake(port, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' })).error,
    ).toBeDefined();
  });

  it('honours tlsCurvePreferences (Go tls.CurveID values): only those key exchange groups are agreed', async () => {
    const { port } = await secure({ name: 'curves', curvePreferences: [24] });
    expect((await handshake(port, { ecdhCurve: 'P-384' })).protocol).toBe('TLSv1.3');
    // A client offering only groups the list leaves out cannot agree on a key exchange.
    expect((await handshake(port, { ecdhCurve: 'X25519:P-256' })).error).toBeDefined();
    const defaults = await secure({ name: 'curves-default' });
    expect((await handshake(defaults.port, { ecdhCurve: 'X25519:P-256' })).protocol).toBe('TLSv1.3');
  });

  it('serves a new certificate after the files change on disk, without a restart', async () => {
    const { port, certFile, keyFile } = await secure({ name: 'reload' });
    expect((await handshake(port)).cn).toBe('serving-1-reload');
    const next = await issueCert(ca, {
      cn: 'serving-2-reload',
      server: true,
      sans: { dns: ['localhost'], ips: ['127.0.0.1'] },
    });
    writeFileSync(keyFile, next.key);
    writeFileSync(certFile, next.cert);
    const end = Date.now() + 5000;
    let cn: string | undefined;
    while (Date.now() < end && cn !== 'serving-2-reload') {
      await new Promise((r) => setTimeout(r, 100));
      cn = (await handshake(port)).cn;
    }
    expect(cn).toBe('serving-2-reload');
    // A broken pair is ignored (logged, never an unhandled rejection); the last good certificate stays.
    const rejections: unknown[] = [];
    const onRejection = (e: unknown) => rejections.push(e);
    process.on('unhandledRejection', onRejection);
    try {
      writeFileSync(certFile, 'not a certificate');
      await new Promise((r) => setTimeout(r, 600));
      expect((await handshake(port)).cn).toBe('serving-2-reload');
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });
});

describe('client CA reload', () => {
  it('trusts client certificates of a CA added to the client CA file, without a restart', async () => {
    const { port } = await secure({ name: 'ca-reload' });
    const other = await createCa('other-client-ca');
    const stranger = await issueCert(other, { cn: 'stranger', org: 'system:masters' });
    const get = () =>
      new Promise<number>((resolve, reject) => {
        https
          .get(
            {
              host: '127.0.0.1',
              port,
              path: '/pods',
              ca: ca.cert,
              servername: 'localhost',
              cert: stranger.cert,
              key: stranger.key,
              agent: false,
            },
            (res) => {
              res.resume();
              resolve(res.statusCode!);
            },
          )
          .on('error', reject);
      });
    expect(await get()).toBe(401);
    writeFileSync(join(dir, 'ca.crt'), ca.cert + other.cert);
    const end = Date.now() + 5000;
    let status = 401;
    while (Date.now() < end && status !== 200) {
      await new Promise((r) => setTimeout(r, 100));
      status = await get();
    }
    expect(status).toBe(200);
  });
});

describe('read-only port', () => {
  it('serves /pods and /healthz only; debugging paths answer 405 as upstream; others 404', async () => {
    const app = await buildReadOnlyServer({ host, logger: silentLogger });
    await app.listen({ port: 0, host: '127.0.0.1' });
    apps.push(app);
    const port = (app.server.address() as AddressInfo).port;
    const get = (path: string, method = 'GET') =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        http
          .request({ host: '127.0.0.1', port, path, method }, (res) => {
            let b = '';
            res.on('data', (d) => (b += d));
            res.on('end', () => resolve({ status: res.statusCode!, body: b }));
          })
          .on('error', reject)
          .end();
      });
    expect((await get('/pods')).status).toBe(200);
    expect((await get('/healthz')).body).toBe('ok');
    for (const p of [
      '/exec/default/p/c',
      '/containerLogs/default/p/c',
      '/configz',
      '/runningpods/',
      '/logs/',
      '/portForward/default/p',
      '/run/default/p/c',
      '/attach/default/p/c',
    ]) {
      const r = await get(p);
      expect([p, r.status, r.body]).toEqual([p, 405, 'Debug endpoints are disabled.\n']);
    }
    const nf = await get('/nope');
    expect(nf.status).toBe(404);
    expect(JSON.parse(nf.body)).toMatchObject({ kind: 'Status', code: 404, reason: 'NotFound' });
    expect((await get('/pods', 'DELETE')).status).toBe(405);
  });
});
