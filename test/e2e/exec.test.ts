/**
 * End to end: exec and attach through the real CLI's 10250 (TLS, client certificate) into the
 * embedded process runtime's streaming server, with real WebSocket and SPDY/3.1 clients.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod, PodList } from '../../src/api/types.js';
import {
  freeKubeletPorts,
  freePort,
  httpGet,
  kubeletArgs,
  listenedPort,
  listeningPodCommand,
  startKubelet,
  until,
  type Kubelet,
} from './helpers.js';
import {
  clientWebSocket,
  floodWebSocket,
  rawUpgrade,
  spdyExec,
  wsSession,
  type ClientPki,
} from './streaming-helpers.js';
import { sampleProcess } from '../../bench/lib.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-exec-'));
const manifests = join(dir, 'manifests');
const root = join(dir, 'root');
mkdirSync(manifests);
const node = 'exec-node';
let ports: { port: number; ro: number; hz: number };
let kubelet: Kubelet;
let pki: ClientPki;
let webPort: number;
let sinkPort: number;

const base = () => `wss://127.0.0.1:${ports.port}`;
const execPath = (cmd: string[], q: string, pod = `shell-${node}`, c = 'main') =>
  `/exec/default/${pod}/${c}?${cmd.map((x) => `command=${encodeURIComponent(x)}`).join('&')}&${q}`;
const status = (r: { channels: Map<number, Buffer> }) => JSON.parse(r.channels.get(3)!.toString());

beforeAll(async () => {
  ports = await freeKubeletPorts();
  writeFileSync(
    join(manifests, 'shell.yaml'),
    'apiVersion: v1\nkind: Pod\nmetadata: {name: shell}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: busybox, command: [sleep, "3600"], env: [{name: GREETING, value: from-the-pod}], workingDir: /tmp}\n',
  );
  writeFileSync(
    join(manifests, 'cat.yaml'),
    'apiVersion: v1\nkind: Pod\nmetadata: {name: cat}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: busybox, command: [sh, -c, "while read l; do echo \\"got $l\\"; done"], stdin: true}\n',
  );
  writeFileSync(
    join(manifests, 'web.yaml'),
    `apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: node, command: ${listeningPodCommand("require('http').createServer((q, r) => r.end('web says hi'))", join(dir, 'web.port'))}}\n`,
  );
  // A pod whose port accepts connections and never reads from them.
  writeFileSync(
    join(manifests, 'sink.yaml'),
    `apiVersion: v1\nkind: Pod\nmetadata: {name: sink}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: node, command: ${listeningPodCommand("require('net').createServer((s) => s.pause())", join(dir, 'sink.port'))}}\n`,
  );
  kubelet = startKubelet(kubeletArgs({ dir, ports, node, manifests }));
  pki = { ca: join(root, 'pki', 'ca.crt'), cert: join(root, 'pki', 'admin.crt'), key: join(root, 'pki', 'admin.key') };
  await until(
    async () => {
      const items = (JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body) as PodList).items as Pod[];
      return items.length === 4 && items.every((p) => p.status?.phase === 'Running');
    },
    20_000,
    'pods Running',
  );
  webPort = await listenedPort(join(dir, 'web.port'));
  sinkPort = await listenedPort(join(dir, 'sink.port'));
}, 30_000);

afterAll(async () => {
  await kubelet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('exec over WebSocket', () => {
  it('v5: stdout, stderr, the ready frame and a NonZeroExitCode Status; runs in the container context', async () => {
    const r = await wsSession(
      base() + execPath(['sh', '-c', 'echo $GREETING; pwd; echo oops >&2; exit 3'], 'output=1&error=1'),
      ['v5.channel.k8s.io'],
      pki,
    );
    expect(r.protocol).toBe('v5.channel.k8s.io');
    expect(r.frames[0]).toEqual({ ch: 1, len: 0 });
    expect(r.channels.get(1)!.toString()).toBe('from-the-pod\n/tmp\n');
    expect(r.channels.get(2)!.toString()).toBe('oops\n');
    expect(status(r)).toEqual({
      metadata: {},
      status: 'Failure',
      reason: 'NonZeroExitCode',
      message:
        'command terminated with non-zero exit code: error executing command [sh -c echo $GREETING; pwd; echo oops >&2; exit 3], exit code 3',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
  });

  it('v4 base64: text frames; Success status on exit 0', async () => {
    const r = await wsSession(base() + execPath(['echo', 'hi'], 'output=1'), ['v4.base64.channel.k8s.io'], pki);
    expect(r.protocol).toBe('v4.base64.channel.k8s.io');
    expect(r.channels.get(1)!.toString()).toBe('hi\n');
    expect(status(r)).toEqual({ metadata: {}, status: 'Success' });
  });

  it('channel.k8s.io (v1): plain-text error, nothing on success', async () => {
    const bad = await wsSession(base() + execPath(['sh', '-c', 'exit 4'], 'output=1'), ['channel.k8s.io'], pki);
    expect(bad.channels.get(3)!.toString()).toMatch(/exit code 4$/);
    const good = await wsSession(base() + execPath(['true'], 'output=1'), ['channel.k8s.io'], pki);
    expect(good.channels.has(3)).toBe(false);
    const b64 = await wsSession(
      base() + execPath(['sh', '-c', 'echo b64; exit 6'], 'output=1'),
      ['base64.channel.k8s.io'],
      pki,
    );
    expect(b64.protocol).toBe('base64.channel.k8s.io');
    expect(b64.channels.get(1)!.toString()).toBe('b64\n');
    expect(b64.channels.get(3)!.toString()).toMatch(/exit code 6$/);
  });

  it('v5 stdin with CLOSE: the command sees EOF', async () => {
    const r = await wsSession(base() + execPath(['cat'], 'input=1&output=1'), ['v5.channel.k8s.io'], pki, {
      input: [
        [0, 'hello stdin'],
        [255, Buffer.from([0])],
      ],
    });
    expect(r.channels.get(1)!.toString()).toBe('hello stdin');
    expect(status(r).status).toBe('Success');
  });

  it('TTY: resize reaches the terminal', async () => {
    const r = await wsSession(
      base() + execPath(['sh', '-c', 'sleep 0.5; stty size'], 'output=1&tty=1&input=1'),
      ['v4.channel.k8s.io'],
      pki,
      {
        input: [[4, '{"Width":100,"Height":30}']],
      },
    );
    expect(r.channels.get(1)!.toString().trim()).toBe('30 100');
    expect(r.channels.has(2)).toBe(false);
  });

  it("moves 100 MiB through stdout without loss, with the kubelet's memory flat (backpressure)", async () => {
    const before = sampleProcess(kubelet.proc.pid!).rss;
    let peak = before;
    let bytes = 0;
    let n = 0;
    const r = await wsSession(
      base() + execPath(['head', '-c', String(100 << 20), '/dev/zero'], 'output=1'),
      ['v5.channel.k8s.io'],
      pki,
      {
        onMessage: (ch, data) => {
          if (ch === 1) {
            bytes += data.length;
            if (++n % 200 === 0) peak = Math.max(peak, sampleProcess(kubelet.proc.pid!).rss);
          }
        },
      },
    );
    r.channels.delete(1);
    expect(bytes).toBe(100 << 20);
    expect(status(r).status).toBe('Success');
    expect((peak - before) / 2 ** 20).toBeLessThan(64);
  }, 60_000);

  it('serves 50 concurrent sessions', async () => {
    const rs = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        wsSession(base() + execPath(['sh', '-c', `echo session-${i}`], 'output=1'), ['v5.channel.k8s.io'], pki),
      ),
    );
    expect(rs.map((r) => r.channels.get(1)!.toString())).toEqual(
      Array.from({ length: 50 }, (_, i) => `session-${i}\n`),
    );
  }, 60_000);
});

describe('exec over SPDY/3.1', () => {
  it("negotiates the client's first supported version and streams error/stdout/stderr", async () => {
    const r = await spdyExec(
      '127.0.0.1',
      ports.port,
      execPath(['sh', '-c', 'echo out; echo err >&2; exit 2'], 'output=1&error=1'),
      pki,
      {
        protocols: [
          'v5.channel.k8s.io',
          'v4.channel.k8s.io',
          'v3.channel.k8s.io',
          'v2.channel.k8s.io',
          'channel.k8s.io',
        ],
        streams: ['error', 'stdout', 'stderr'],
      },
    );
    expect(r.protocol).toBe('v5.channel.k8s.io');
    expect(r.out.stdout).toBe('out\n');
    expect(r.out.stderr).toBe('err\n');
    expect(JSON.parse(r.out.error)).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '2' }] },
    });
  });

  it('v2: stdin and a plain-text error', async () => {
    const r = await spdyExec('127.0.0.1', ports.port, execPath(['sh', '-c', 'cat; exit 5'], 'input=1&output=1'), pki, {
      protocols: ['v2.channel.k8s.io'],
      streams: ['error', 'stdin', 'stdout'],
      stdin: 'through spdy',
    });
    expect(r.protocol).toBe('v2.channel.k8s.io');
    expect(r.out.stdout).toBe('through spdy');
    expect(r.out.error).toMatch(/exit code 5$/);
  });

  it('v4: 4 MiB of output (many windows, paced by TCP), all of it and the status', async () => {
    const n = 4 << 20;
    let bytes = 0;
    let status = '';
    await spdyExec('127.0.0.1', ports.port, execPath(['head', '-c', String(n), '/dev/zero'], 'output=1'), pki, {
      protocols: ['v4.channel.k8s.io'],
      streams: ['error', 'stdout'],
      onData: (stream, d) => (stream === 'stdout' ? (bytes += d.length) : (status += d.toString())),
    });
    expect([bytes, JSON.parse(status).status]).toEqual([n, 'Success']);
  });

  it('answers 400 without X-Stream-Protocol-Version and 403 with the accepted list when none matches', async () => {
    const none = await rawUpgrade(
      '127.0.0.1',
      ports.port,
      execPath(['true'], 'output=1'),
      [
        ['Connection', 'Upgrade'],
        ['Upgrade', 'SPDY/3.1'],
      ],
      pki,
    );
    expect([none.status, none.body]).toEqual([400, 'unable to upgrade: X-Stream-Protocol-Version is required\n']);
    const bad = await rawUpgrade(
      '127.0.0.1',
      ports.port,
      execPath(['true'], 'output=1'),
      [
        ['Connection', 'Upgrade'],
        ['Upgrade', 'SPDY/3.1'],
        ['X-Stream-Protocol-Version', 'v9.channel.k8s.io'],
      ],
      pki,
    );
    expect(bad.status).toBe(403);
    expect(bad.headers).toContain('X-Accepted-Stream-Protocol-Versions: v4.channel.k8s.io');
  });
});

describe('port-forward over plain WebSocket', () => {
  for (const protocol of ['v4.channel.k8s.io', 'v4.base64.channel.k8s.io']) {
    it(`${protocol}: port prefix frames, then the bytes of the pod's port`, async () => {
      const r = await wsSession(`${base()}/portForward/default/web-${node}?port=${webPort}`, [protocol], pki, {
        input: [[0, 'GET / HTTP/1.0\r\nHost: x\r\n\r\n']],
      });
      const le = Buffer.alloc(2);
      le.writeUInt16LE(webPort);
      expect(r.frames.slice(0, 2)).toEqual([
        { ch: 0, len: 2 },
        { ch: 1, len: 2 },
      ]);
      expect(r.channels.get(1)).toEqual(le);
      const data = r.channels.get(0)!;
      expect(data.subarray(0, 2)).toEqual(le);
      expect(data.subarray(2).toString()).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*web says hi$/);
    });
  }
  it('reports a closed port on the error channel and rejects a bad port before the upgrade', async () => {
    const closed = await freePort();
    const r = await wsSession(`${base()}/portForward/default/web-${node}?port=${closed}`, ['v4.channel.k8s.io'], pki, {
      onMessage: (ch, d, ws) => {
        if (ch === 1 && d.length > 2) ws.close();
      },
    });
    expect(r.channels.get(1)!.subarray(2).toString()).toMatch(
      new RegExp(
        `^error forwarding port ${closed} to pod default/web-${node}, uid [0-9a-f]+: dial tcp4 127\\.0\\.0\\.1:${closed}: connect ECONNREFUSED`,
      ),
    );
    await expect(
      wsSession(`${base()}/portForward/default/web-${node}?port=99999`, ['v4.channel.k8s.io'], pki),
    ).rejects.toMatchObject({ status: 400 });
  });
});

describe('port-forward over WebSocket to a port that does not read', () => {
  // Regression: the client's frames were written to the pod's socket without regard to what it took, so a client
  // could make the kubelet hold any amount (300 MiB to a pod that never read took its RSS from 73 to 402 MB).
  it('stops reading the client once the pod stops taking bytes', async () => {
    const ws = clientWebSocket(
      `${base()}/portForward/default/sink-${node}?port=${sinkPort}`,
      ['v4.channel.k8s.io'],
      pki,
    );
    ws.on('error', () => undefined);
    await new Promise((resolve) => ws.once('open', resolve));
    const frame = Buffer.alloc(64 * 1024 + 1, 7);
    frame[0] = 0; // the data channel of the first port
    // Until all is sent or the kubelet has stopped taking more for a second.
    let stalledSince = Date.now();
    let last = 0;
    const accepted = await floodWebSocket(ws, frame, 256 << 20, (taken) => {
      if (taken > last) [last, stalledSince] = [taken, Date.now()];
      return Date.now() - stalledSince < 1_000;
    });
    ws.terminate();
    // What the kubelet took is what the pod's socket and the connections' buffers hold, not the 256 MiB sent.
    expect(accepted).toBeLessThan(64 << 20);
  }, 30_000);
});

describe('TTY stdin to a process that does not read its terminal', () => {
  // Regression: node-pty decoded the terminal's output as UTF-8, so bytes that are not UTF-8 came out as U+FFFD.
  it("the terminal's output is its bytes, UTF-8 or not", async () => {
    const r = await wsSession(
      base() + execPath(['sh', '-c', "printf '\\377\\376AB'"], 'output=1&tty=1'),
      ['v4.channel.k8s.io'],
      pki,
    );
    expect(r.channels.get(1)!.toString('hex')).toBe('fffe4142');
  });

  // Regression: each chunk was decoded as UTF-8 on its own, so a character split across two frames became two U+FFFD.
  it('a character split across two stdin frames reaches the terminal whole', async () => {
    const command = ['sh', '-c', 'stty raw -echo; head -c 2 | od -An -tx1'];
    const ws = clientWebSocket(`${base()}${execPath(command, 'input=1&output=1&tty=1')}`, ['v4.channel.k8s.io'], pki);
    let output = '';
    ws.on('message', (data: Buffer) => {
      if (data[0] === 1) output += data.subarray(1).toString();
    });
    await new Promise((resolve) => ws.once('open', resolve));
    await new Promise((resolve) => setTimeout(resolve, 500)); // the shell sets the terminal raw first
    const e = Buffer.from('é'); // c3 a9
    ws.send(Buffer.from([0, e[0]]));
    ws.send(Buffer.from([0, e[1]]));
    await new Promise((resolve) => ws.once('close', resolve));
    expect(output.trim()).toBe('c3 a9');
  }, 20_000);

  // Regression: node-pty queues whatever it is given, and each chunk was handed over at once, so a client could make
  // the kubelet (the embedded runtime runs in it) hold any amount: 300 MiB took its RSS from 108 to 400 MB.
  it('stops reading the client once the terminal takes no more', async () => {
    const command = ['sh', '-c', 'stty raw -echo; sleep 3600'];
    const ws = clientWebSocket(`${base()}${execPath(command, 'input=1&output=1&tty=1')}`, ['v4.channel.k8s.io'], pki);
    ws.on('error', () => undefined);
    ws.on('message', () => undefined);
    await new Promise((resolve) => ws.once('open', resolve));
    const frame = Buffer.alloc(64 * 1024 + 1, 0x61);
    frame[0] = 0; // stdin
    const end = Date.now() + 2_000;
    const accepted = await floodWebSocket(ws, frame, 256 << 20, () => Date.now() < end);
    ws.terminate();
    expect(accepted).toBeLessThan(32 << 20);
  }, 30_000);
});

describe('/run (ExecSync over HTTP)', () => {
  const post = (path: string) =>
    new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port: ports.port,
          path,
          method: 'POST',
          ca: readFileSync(pki.ca),
          cert: readFileSync(pki.cert),
          key: readFileSync(pki.key),
        },
        (res) => {
          let b = '';
          res.on('data', (d) => (b += d));
          res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body: b }));
        },
      );
      req.on('error', reject);
      req.end();
    });
  it('returns stdout then stderr, with cmd split on spaces as upstream', async () => {
    const ok = await post(`/run/default/shell-${node}/main?cmd=${encodeURIComponent('echo hello run')}`);
    expect([ok.status, ok.body]).toEqual([200, 'hello run\n']);
    expect(ok.type).toMatch(/^application\/json/);
    const both = await post(`/run/default/shell-${node}/main?cmd=${encodeURIComponent('ls /tmp /definitely-missing')}`);
    expect(both.body).toMatch(/definitely-missing/);
  });
  it('answers Status errors for a missing container and a missing cmd', async () => {
    expect(JSON.parse((await post(`/run/default/shell-${node}/nope?cmd=true`)).body)).toMatchObject({
      kind: 'Status',
      code: 404,
    });
    expect(JSON.parse((await post(`/run/default/shell-${node}/main`)).body)).toMatchObject({
      code: 400,
      message: 'cmd is required',
    });
  });
});

describe('errors before the upgrade, and attach', () => {
  it('answers Status JSON for a missing pod or container, bad flags, and 401 without a certificate', async () => {
    const up = (path: string, p: ClientPki = pki) =>
      rawUpgrade(
        '127.0.0.1',
        ports.port,
        path,
        [
          ['Connection', 'Upgrade'],
          ['Upgrade', 'SPDY/3.1'],
          ['X-Stream-Protocol-Version', 'v4.channel.k8s.io'],
        ],
        p,
      );
    const nopod = await up(execPath(['true'], 'output=1', 'nope'));
    expect(nopod.status).toBe(404);
    expect(JSON.parse(nopod.body)).toMatchObject({ kind: 'Status', code: 404, reason: 'NotFound' });
    const noc = await up(execPath(['true'], 'output=1', `shell-${node}`, 'nope'));
    expect(JSON.parse(noc.body)).toMatchObject({ code: 404, message: 'container not found ("nope")' });
    const noflags = await up(execPath(['true'], 'tty=0'));
    expect(JSON.parse(noflags.body)).toMatchObject({
      code: 400,
      message: 'you must specify at least 1 of stdin, stdout, stderr',
    });
    const anon = await up(execPath(['true'], 'output=1'), {
      ...pki,
      cert: join(root, 'pki', 'kubelet.crt'),
      key: join(root, 'pki', 'kubelet.key'),
    });
    expect(anon.status).toBe(401);
  });

  it("attach joins the running container's stdin and stdout", async () => {
    let sentLine = false;
    const r = await wsSession(
      `${base()}/attach/default/cat-${node}/main?input=1&output=1`,
      ['v5.channel.k8s.io'],
      pki,
      {
        input: [[0, 'ping\n']],
        onMessage: (ch, data, ws) => {
          if (ch === 1 && data.toString().includes('got ping') && !sentLine) {
            sentLine = true;
            ws.close();
          }
        },
      },
    );
    expect(r.channels.get(1)!.toString()).toContain('got ping');
  });
});

describe("v1.36's counters", () => {
  const metric = async (pattern: RegExp) =>
    Number((await httpGet(`http://127.0.0.1:${ports.ro}/metrics`)).body.match(pattern)?.[1] ?? 0);
  const streaming = (subresource: string) =>
    metric(new RegExp(`^kubelet_websocket_streaming_requests_total\\{subresource="${subresource}"\\} (\\d+)$`, 'm'));

  it('counts exec, attach and port-forward over WebSocket in kubelet_websocket_streaming_requests_total, not SPDY', async () => {
    // The sessions above: attach and port-forward over WebSocket.
    expect(await streaming('attach')).toBeGreaterThanOrEqual(1);
    expect(await streaming('portforward')).toBeGreaterThanOrEqual(3);
    const before = await streaming('exec');
    await wsSession(base() + execPath(['true'], 'output=1'), ['v5.channel.k8s.io'], pki);
    expect(await streaming('exec')).toBe(before + 1);
    await spdyExec('127.0.0.1', ports.port, execPath(['true'], 'output=1'), pki, {
      protocols: ['v4.channel.k8s.io'],
      streams: ['error', 'stdout'],
    });
    expect(await streaming('exec')).toBe(before + 1);
  });

  it("counts a container's termination once, by type, exit code and reason (kubelet_terminated_containers_total)", async () => {
    // Upstream's e2e "should report terminated_containers_total metric": a container that exits 139.
    const terminated = () =>
      metric(
        /^kubelet_terminated_containers_total\{container_type="container",exit_code="139",reason="Error"\} (\d+)$/m,
      );
    expect(await terminated()).toBe(0);
    writeFileSync(
      join(manifests, 'crash.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: crash}\nspec:\n  restartPolicy: Never\n  containers:\n  - {name: crash-container, image: busybox, command: [/bin/sh, -c, "exit 139"]}\n',
    );
    await until(async () => (await terminated()) === 1, 30_000, 'the termination counted');
    // Later syncs of the finished pod show the same termination: it is not counted again.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await terminated()).toBe(1);
  }, 40_000);
});
