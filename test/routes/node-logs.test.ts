/** /logs/: listing and files under the log directory, and no way out of it. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import http from 'node:http';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { nodeLogsRoutes } from '../../src/routes/node-logs.js';

const base = mkdtempSync(join(tmpdir(), 'tsk-nodelogs-'));
const root = join(base, 'log');
let app: FastifyInstance;
let port: number;

/** A raw GET (paths are sent exactly as given, no client-side normalisation). */
function get(path: string): Promise<{ status: number; type: string; location?: string; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .request({ host: '127.0.0.1', port, path, method: 'GET' }, (res) => {
        let b = '';
        res.on('data', (d) => (b += d));
        res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), location: res.headers.location, body: b }));
      })
      .on('error', reject)
      .end();
  });
}

beforeAll(async () => {
  mkdirSync(join(root, 'pods', 'ns_pod'), { recursive: true });
  writeFileSync(join(root, 'syslog'), 'line 1\nline 2\n');
  writeFileSync(join(root, 'Messages'), 'm\n');
  writeFileSync(join(root, 'pods', 'ns_pod', '0.log'), 'pod log\n');
  writeFileSync(join(base, 'secret'), 'outside the log dir');
  symlinkSync(join(base, 'secret'), join(root, 'escape'));
  symlinkSync(join(root, 'syslog'), join(root, 'syslog.link'));
  app = Fastify();
  await app.register(nodeLogsRoutes, { root });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await app.close();
  rmSync(base, { recursive: true, force: true });
});

describe('/logs/', () => {
  it("lists a directory as upstream's file server does, sorted, directories with a slash", async () => {
    const r = await get('/logs/');
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/^text\/html/);
    expect(r.body).toBe(
      '<pre>\n<a href="Messages">Messages</a>\n<a href="escape">escape</a>\n<a href="pods/">pods/</a>\n<a href="syslog">syslog</a>\n<a href="syslog.link">syslog.link</a>\n</pre>\n',
    );
    expect((await get('/logs')).status).toBe(301);
    const sub = await get('/logs/pods');
    expect([sub.status, sub.location]).toEqual([301, 'pods/']);
    expect((await get('/logs/pods/ns_pod/')).body).toContain('<a href="0.log">0.log</a>');
  });
  it('serves files, also through a symlink that stays inside', async () => {
    expect(await get('/logs/syslog')).toMatchObject({ status: 200, body: 'line 1\nline 2\n' });
    expect((await get('/logs/pods/ns_pod/0.log')).body).toBe('pod log\n');
    expect((await get('/logs/syslog.link')).body).toBe('line 1\nline 2\n');
  });
  it('never leaves the directory', async () => {
    for (const p of [
      '/logs/../secret',
      '/logs/..%2fsecret',
      '/logs/%2e%2e/secret',
      '/logs/pods/../../secret',
      '/logs/escape',
      '/logs/%00',
      `/logs/${encodeURIComponent(join(base, 'secret'))}`,
      '/logs//etc/passwd',
      '/logs/nope',
    ]) {
      const r = await get(p);
      expect([p, r.status], p).toEqual([p, 404]);
      expect(r.body).not.toContain('outside the log dir');
    }
  });
  it('sends exactly Content-Length bytes while the file grows, so the next response on the connection is intact', async () => {
    const f = join(root, 'growing.log');
    writeFileSync(f, 'x'.repeat(4 * 1024 * 1024));
    const writer = setInterval(() => appendFileSync(f, 'y'.repeat(256 * 1024)), 2);
    try {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const one = () =>
        new Promise<{ declared: number; got: number }>((resolve, reject) => {
          http
            .get({ host: '127.0.0.1', port, path: '/logs/growing.log', agent }, (res) => {
              let got = 0;
              res.on('data', (d: Buffer) => {
                got += d.length;
              });
              res.on('end', () => resolve({ declared: Number(res.headers['content-length']), got }));
            })
            .on('error', reject);
        });
      for (let i = 0; i < 3; i++) {
        const r = await one();
        expect(r.got).toBe(r.declared);
      }
      const next = await new Promise<number>((resolve) => {
        http.get({ host: '127.0.0.1', port, path: '/logs/syslog', agent }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
      });
      expect(next).toBe(200);
      agent.destroy();
    } finally {
      clearInterval(writer);
    }
  });
});
