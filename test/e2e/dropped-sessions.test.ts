/**
 * Regression (reliability issue, defects 1 and 5): clients that leave at any moment. Attach, exec
 * and port-forward sessions over WebSocket and SPDY are dropped at random points while the
 * containers print as fast as they can; the kubelet must stay up, and every process a session
 * started must end with its session. A `/run` whose client gives up ends its command too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod, PodList } from '../../src/api/types.js';
import {
  countProcesses,
  freeKubeletPorts,
  httpGet,
  kubeletArgs,
  listenedPort,
  listeningPodCommand,
  startKubelet,
  until,
  type Kubelet,
} from './helpers.js';
import { droppedSpdy, droppedWebSocket, wsSession, type ClientPki } from './streaming-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-drop-'));
const manifests = join(dir, 'manifests');
const root = join(dir, 'root');
mkdirSync(manifests);
const node = 'drop-node';
/** In the command line of every process a session starts, so that the test can count them. */
const marker = `drop-marker-${process.pid}`;
let ports: { port: number; ro: number; hz: number };
let kubelet: Kubelet;
let pki: ClientPki;
let webPort: number;

const tlsOptions = () => ({ ca: readFileSync(pki.ca), cert: readFileSync(pki.cert), key: readFileSync(pki.key) });
const base = () => `wss://127.0.0.1:${ports.port}`;
const execQuery = (cmd: string[]) => cmd.map((x) => `command=${encodeURIComponent(x)}`).join('&');

beforeAll(async () => {
  ports = await freeKubeletPorts();
  for (const name of ['chatty-a', 'chatty-b']) {
    writeFileSync(
      join(manifests, `${name}.yaml`),
      `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: busybox, command: [yes, ${name}-says-something-long-enough-to-fill-pipes]}\n`,
    );
  }
  writeFileSync(
    join(manifests, 'web.yaml'),
    `apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: node, command: ${listeningPodCommand("require('http').createServer((q, r) => r.end(Buffer.alloc(1 << 20, 120)))", join(dir, 'web.port'))}}\n`,
  );
  kubelet = startKubelet(kubeletArgs({ dir, ports, node, manifests }));
  pki = { ca: join(root, 'pki', 'ca.crt'), cert: join(root, 'pki', 'admin.crt'), key: join(root, 'pki', 'admin.key') };
  await until(
    async () => {
      const items = (JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body) as PodList).items as Pod[];
      return items.length === 3 && items.every((p) => p.status?.phase === 'Running');
    },
    30_000,
    'pods Running',
  );
  webPort = await listenedPort(join(dir, 'web.port'));
}, 40_000);

afterAll(async () => {
  await kubelet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('sessions dropped at random points while the containers print', () => {
  it('the kubelet stays up and no process a session started outlives it', async () => {
    const attach = (pod: string) => `/attach/default/${pod}-${node}/main?output=1&error=1`;
    const exec = (pod: string) =>
      `/exec/default/${pod}-${node}/main?${execQuery(['sh', '-c', `yes ${marker}`])}&output=1&error=1&input=1`;
    const portForward = `/portForward/default/web-${node}?port=${webPort}`;
    const request = Buffer.concat([Buffer.from([0]), Buffer.from('GET / HTTP/1.0\r\n\r\n')]);
    for (let round = 0; round < 5; round++) {
      const sessions: Promise<void>[] = [];
      for (let i = 0; i < 12; i++) {
        const pod = i % 2 ? 'chatty-a' : 'chatty-b';
        sessions.push(
          droppedWebSocket(base() + attach(pod), pki, i % 3 ? 'v4.channel.k8s.io' : 'v5.channel.k8s.io', 1500),
        );
        sessions.push(droppedWebSocket(base() + exec(pod), pki, 'v4.channel.k8s.io', 1500));
        sessions.push(droppedWebSocket(base() + portForward, pki, 'v4.channel.k8s.io', 300, request));
        sessions.push(droppedSpdy(ports.port, pki, attach(pod), ['error', 'stdout', 'stderr'], 1500));
        sessions.push(droppedSpdy(ports.port, pki, exec(pod), ['error', 'stdin', 'stdout', 'stderr'], 1500));
      }
      await Promise.all(sessions);
      expect(kubelet.proc.exitCode, kubelet.output().slice(-3000)).toBeNull();
    }
    await until(() => countProcesses(marker) === 0, 10_000, 'exec processes gone');
    // Still serving sessions afterwards.
    const r = await wsSession(
      `${base()}/exec/default/chatty-a-${node}/main?${execQuery(['echo', 'still-here'])}&output=1`,
      ['v4.channel.k8s.io'],
      pki,
    );
    expect(r.channels.get(1)?.toString()).toBe('still-here\n');
    expect(kubelet.output()).not.toMatch(/MaxListenersExceededWarning|Unhandled|uncaught/i);
  }, 120_000);
});

describe('/run whose client leaves', () => {
  it('ends the command once the client has gone', async () => {
    const runMarker = `${marker}-run`;
    // `cmd` is split on spaces (as upstream), so the shell's words are separated by a tab.
    const path = `/run/default/chatty-a-${node}/main?cmd=${encodeURIComponent(`sh -c sleep\t3600;#${runMarker}`)}`;
    const request = https.request({ host: '127.0.0.1', port: ports.port, path, method: 'POST', ...tlsOptions() });
    request.on('error', () => undefined);
    request.end();
    await until(() => countProcesses(runMarker) > 0, 10_000, 'the command started');
    request.destroy();
    await until(() => countProcesses(runMarker) === 0, 10_000, 'the command ended with its client');
  }, 30_000);
});
