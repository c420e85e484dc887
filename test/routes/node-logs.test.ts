/** /logs/: listing and files under the log directory, and no way out of it. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import http from 'node:http';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
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
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            type: String(res.headers['content-type']),
            location: res.headers.location,
            body: b,
          }),
        );
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

describe('/logs/ with the node log query (NodeLogQuery, enableSystemLogQuery)', () => {
  const qroot = join(base, 'qlog');
  const calls = join(base, 'journalctl-calls');
  const pidFile = join(base, 'journalctl-pid');
  // A journalctl on this machine's terms: it knows the units kubelet and slow; slow never ends.
  const journalctl = join(base, 'journalctl');
  let qapp: FastifyInstance;
  let qport: number;
  const qget = (path: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      http
        .request({ host: '127.0.0.1', port: qport, path, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
        })
        .on('error', reject)
        .end();
    });
  const text = async (path: string) => {
    const r = await qget(path);
    return { status: r.status, type: r.headers['content-type'], body: r.body.toString() };
  };
  const lastCall = () => readFileSync(calls, 'utf8').trim().split('\n').at(-1);

  beforeAll(async () => {
    mkdirSync(join(qroot, 'kube-proxy'), { recursive: true });
    writeFileSync(join(qroot, 'kube-proxy', 'kube-proxy.log'), 'proxy started\n');
    writeFileSync(join(qroot, 'syslog'), 'line one\nline two\n');
    symlinkSync(join(base, 'secret'), join(qroot, 'escape'));
    writeFileSync(
      journalctl,
      [
        '#!/bin/sh',
        `echo "$*" >> ${calls}`,
        'if [ "$1" = "--field" ]; then printf "kubelet.service\\nslow.service\\n"; exit 0; fi',
        `case "$*" in *--unit=slow*) echo $$ > ${pidFile}; echo first; exec sleep 100;; esac`,
        'echo "journal: $*"',
      ].join('\n'),
      { mode: 0o755 },
    );
    qapp = Fastify();
    await qapp.register(nodeLogsRoutes, { root: qroot, query: { journalctl } });
    await qapp.listen({ port: 0, host: '127.0.0.1' });
    qport = (qapp.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await qapp.close();
  });

  it('reads a journald service with journalctl, with the options as its arguments', async () => {
    const r = await text('/logs/?query=kubelet&tailLines=5&sinceTime=2026-09-24T01:02:03Z&pattern=err');
    expect(r.status).toBe(200);
    expect(r.type).toBe('text/plain;charset=UTF-8');
    expect(r.body).toBe(
      'journal: --utc --no-pager --output=short-precise --since=2026-9-24 1:2:3 --pager-end --lines=5 --unit=kubelet --grep=err\n',
    );
    // An argument the OS refuses is journalctl failing to run, as upstream's exec; the kubelet carries on.
    expect((await text('/logs/?query=kubelet&pattern=%00')).body).toBe('\nerror: journal output not available\n');
    const gz = await qget('/logs/?query=kubelet', { 'accept-encoding': 'gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.body).toString()).toBe('journal: --utc --no-pager --output=short-precise --unit=kubelet\n');
  });

  it('finds a service journald does not know among the files, by name', async () => {
    expect((await text('/logs/?query=kube-proxy')).body).toBe('proxy started\n');
    expect((await text('/logs/?query=syslog')).body).toBe('line one\nline two\n');
    expect((await text('/logs/?query=nothing')).body).toBe('\nlog not found for nothing\n');
    expect((await text('/logs/?query=kube-proxy&tailLines=2')).body).toBe(
      '\noptions present and query resolved to log files for [kube-proxy]\ntry without specifying options\n',
    );
    expect(lastCall()).toBe('--field _SYSTEMD_UNIT');
  });

  it('serves one queried file; a request without query parameters is the file server', async () => {
    expect(await text('/logs/?query=/syslog')).toMatchObject({ status: 200, body: 'line one\nline two\n' });
    expect((await text('/logs/syslog')).body).toBe('line one\nline two\n');
    expect((await text('/logs/?other=1')).body).toContain('<a href="syslog">syslog</a>');
  });

  it("answers upstream's 400 and 406 in plain text", async () => {
    expect(await text('/logs/?query=kubelet&tailLines=x')).toMatchObject({
      status: 400,
      type: 'text/plain; charset=utf-8',
      body: 'tailLines: Invalid value: "x": strconv.Atoi: parsing "x": invalid syntax\n',
    });
    expect(await text('/logs/syslog?query=kubelet')).toMatchObject({
      status: 406,
      body: 'path not allowed in query mode\n',
    });
    expect(await text('/logs/?query=kubelet&query=/syslog')).toMatchObject({
      status: 406,
      body: 'query: Invalid value: "[/syslog], [kubelet]": cannot specify a file and service\n',
    });
    expect(await text('/logs/?query=/nope.log')).toMatchObject({
      status: 406,
      body: `query: Invalid value: []string{"/nope.log"}: stat ${join(qroot, 'nope.log')}: no such file or directory\n`,
    });
    expect((await text('/logs/?query=a%3Bb&boot=1')).body).toBe(
      '[query: Invalid value: "a;b": input contains unsupported characters, boot: Invalid value: 1: must be less than 1]\n',
    );
    expect(await text('/logs/?query=/a%00b')).toMatchObject({
      status: 406,
      body: `query: Invalid value: []string{"/a\\u0000b"}: stat ${join(qroot, 'a')}\\u0000b: invalid argument\n`,
    });
    // A file query never leaves the log directory.
    expect((await text(`/logs/?query=${encodeURIComponent('/../secret')}`)).body).not.toContain('outside the log dir');
    expect(await text('/logs/?query=/escape')).toMatchObject({ status: 404, body: '404 page not found\n' });
  });

  it('stops journalctl when the client goes away', async () => {
    rmSync(pidFile, { force: true });
    const req = http.request({ host: '127.0.0.1', port: qport, path: '/logs/?query=slow' });
    const first = await new Promise<string>((resolve) => {
      req.on('response', (res) => res.once('data', (d: Buffer) => resolve(d.toString())));
      req.end();
    });
    expect(first).toBe('first\n');
    const pid = Number(readFileSync(pidFile, 'utf8'));
    expect(() => process.kill(pid, 0)).not.toThrow();
    req.destroy();
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 50 && alive(); i++) await new Promise((r) => setTimeout(r, 100));
    expect(alive()).toBe(false);
  });

  it('without the query turned on, query parameters are ignored (the file server)', async () => {
    expect((await get('/logs/?query=kubelet')).body).toContain('<a href="syslog">syslog</a>');
  });
});
