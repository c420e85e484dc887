/**
 * /debug/pprof on a running kubelet, as upstream's profiling handler answers: the CPU and heap
 * profiles read by the real `go tool pprof`, `cmdline`, the index, Go's errors (an unknown profile,
 * a profile longer than the server's write timeout, a second CPU profile at once), a client that
 * leaves a long profile freeing the profiler, the read-only port's 405; with
 * enableProfilingHandler off, 405.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify from 'fastify';
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { positiveInteger, pprofRoutes } from '../../src/routes/pprof.js';
import { createProfiler } from '../../src/server/profiler.js';
import {
  freeKubeletPorts,
  httpGet,
  kubeletArgs,
  startKubelet,
  untilServing,
  type Kubelet,
  type KubeletPorts,
} from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-pprof-e2e-'));
let kubelet: Kubelet;
let ports: KubeletPorts;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A GET to 10250 with the admin certificate; `leaveAfterMs` destroys the request (the client goes). */
function get(path: string, leaveAfterMs?: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = https.get(
      {
        host: '127.0.0.1',
        port: ports.port,
        path,
        ca: readFileSync(join(dir, 'root', 'pki', 'ca.crt')),
        cert: readFileSync(join(dir, 'root', 'pki', 'admin.crt')),
        key: readFileSync(join(dir, 'root', 'pki', 'admin.key')),
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    request.on('error', reject);
    if (leaveAfterMs !== undefined)
      setTimeout(() => {
        request.destroy();
        resolve({ status: 0, headers: {}, body: Buffer.alloc(0) });
      }, leaveAfterMs);
  });
}

function pprofTop(profile: Buffer): string {
  const file = join(dir, `profile-${Date.now()}.pb.gz`);
  writeFileSync(file, profile);
  return execFileSync('go', ['tool', 'pprof', '-top', file], {
    encoding: 'utf8',
    env: { ...process.env, HOME: dir, PPROF_TMPDIR: dir },
  });
}

beforeAll(async () => {
  ports = await freeKubeletPorts();
  kubelet = startKubelet(kubeletArgs({ dir, ports, node: 'pprof' }));
  await untilServing(ports, kubelet);
}, 30_000);
afterAll(async () => {
  await kubelet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('/debug/pprof on 10250', () => {
  it('profile: a CPU profile of the kubelet busy serving /pods, as go tool pprof reads it', async () => {
    const profiling = get('/debug/pprof/profile?seconds=2');
    const end = Date.now() + 1_800;
    while (Date.now() < end)
      await Promise.all(Array.from({ length: 8 }, () => httpGet(`http://127.0.0.1:${ports.ro}/pods`)));
    const answer = await profiling;
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('application/octet-stream');
    expect(answer.headers['content-disposition']).toBe('attachment; filename="profile"');
    const top = pprofTop(answer.body);
    expect(top).toContain('Type: cpu');
    expect(top).toMatch(/Duration: 2(\.\d+)?s/);
    expect(top).toMatch(/Total samples = \d+/);
  }, 30_000);

  it('heap: the live heap as go tool pprof reads it, sampled since the kubelet started', async () => {
    // The first heap profile already holds what the kubelet kept from its start (its agent, servers and routes):
    // a sampler started by the request would see next to nothing, one started with the servers a few samples.
    const first = pprofTop((await get('/debug/pprof/heap')).body);
    const total = /of ([\d.]+)(B|kB|MB) total/.exec(first);
    expect(total, first).not.toBeNull();
    const totalBytes = Number(total![1]) * { B: 1, kB: 1e3, MB: 1e6 }[total![2] as 'B' | 'kB' | 'MB'];
    // Sampled every 512 KiB on average: what the kubelet keeps from its start is ten megabytes or so (about twenty
    // samples); sampling from the servers' start saw 0 to 3.5 MB.
    expect(totalBytes).toBeGreaterThan(4e6);
    await Promise.all(Array.from({ length: 50 }, () => httpGet(`http://127.0.0.1:${ports.ro}/pods`)));
    const answer = await get('/debug/pprof/heap');
    expect(answer.status).toBe(200);
    expect(answer.headers['content-disposition']).toBe('attachment; filename="heap"');
    expect(pprofTop(answer.body)).toContain('Type: inuse_space');
    const collected = await get('/debug/pprof/heap?gc=1');
    expect(collected.status).toBe(200);
    expect(pprofTop(collected.body)).toContain('Type: inuse_space');
  }, 30_000);

  it('cmdline and the index', async () => {
    const cmdline = await get('/debug/pprof/cmdline');
    expect(cmdline.headers['content-type']).toBe('text/plain; charset=utf-8');
    const args = cmdline.body.toString().split('\u0000');
    expect(args[0]).toMatch(/tskubelet\.js$/);
    expect(args.join(' ')).toContain(join(dir, 'root'));
    for (const path of ['/debug/pprof/', '/debug/pprof']) {
      const index = await get(path);
      expect(index.status).toBe(200);
      expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(index.body.toString()).toContain("<a href='profile'>profile</a>");
    }
  });

  it("Go's answers: an unknown profile, a profile longer than the write timeout", async () => {
    for (const name of ['goroutine', 'threadcreate', 'nonsense']) {
      const answer = await get(`/debug/pprof/${name}`);
      expect(answer.status).toBe(404);
      expect(answer.headers['x-go-pprof']).toBe('1');
      expect(answer.body.toString()).toBe('Unknown profile\n');
    }
    const tooLong = await get('/debug/pprof/profile?seconds=14401');
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.toString()).toBe("profile duration exceeds server's WriteTimeout\n");
  });

  it('a second CPU profile at once is refused; a client that leaves frees the profiler', async () => {
    const long = get('/debug/pprof/profile?seconds=60', 1_500);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const second = await get('/debug/pprof/profile?seconds=1');
    expect(second.status).toBe(500);
    expect(second.body.toString()).toBe('Could not enable CPU profiling: cpu profiling already in use\n');
    await long;
    await new Promise((resolve) => setTimeout(resolve, 200));
    const after = await get('/debug/pprof/profile?seconds=1');
    expect(after.status).toBe(200);
  }, 20_000);

  it('the read-only port does not serve it', async () => {
    const answer = await httpGet(`http://127.0.0.1:${ports.ro}/debug/pprof/heap`);
    expect(answer.status).toBe(405);
    expect(answer.body).toBe('Debug endpoints are disabled.\n');
  });
});

describe('/debug/pprof disabled (enableProfilingHandler: false)', () => {
  it('answers 405 on every path', async () => {
    const app = Fastify();
    await app.register(pprofRoutes, { enabled: false, profiler: createProfiler(), commandLine: [] });
    for (const url of ['/debug/pprof', '/debug/pprof/', '/debug/pprof/heap', '/debug/pprof/profile?seconds=1']) {
      const answer = await app.inject({ method: 'GET', url });
      expect(answer.statusCode).toBe(405);
      expect(answer.body).toBe('profiling endpoint is disabled.\n');
    }
    await app.close();
  });
});

describe('positiveInteger (seconds and gc, as Go reads them)', () => {
  it.each([
    [undefined, 0],
    ['', 0],
    ['0', 0],
    ['-5', 0],
    ['abc', 0],
    ['1.5', 0],
    ['7', 7],
    ['+7', 7],
  ])('%s → %d', (value, parsed) => expect(positiveInteger(value)).toBe(parsed));
});
