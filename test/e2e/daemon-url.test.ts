/**
 * End to end: the process runtime as its own CRI daemon reached over gRPC, pods from a manifest
 * URL (with a header), /runningpods, following logs, the daemon's cgroup driver adopted, and
 * containers outliving a kubelet restart.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { Pod, PodList } from '../../src/api/types.js';
import { removeCgroupTree } from '../fixtures/cgroup-tree.js';
import {
  countProcesses,
  freeKubeletPorts,
  killProcesses,
  freePort,
  httpGet,
  httpsGet,
  kubeletArgs,
  startKubelet,
  startProcessRuntime,
  until,
  type Kubelet,
} from './helpers.js';

const tag = `durl${process.pid}`;
const cgroupRoot = `/tsk-${tag}`;
const dir = mkdtempSync(join(tmpdir(), 'tsk-durl-'));
const root = join(dir, 'root');
const socket = join(dir, 'cri.sock');
const node = 'durl-node';
let ports: { port: number; ro: number; hz: number; url: number };
let daemon: Kubelet;
let kubelet: Kubelet;
let served = '';
const seenHeaders: string[] = [];
let manifestServer: Server;

const podYaml = (name: string, marker: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: web}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "i=0; while true; do echo ${marker} $i; i=$((i+1)); sleep 0.2; done"]
`;
const podList = (...docs: string[]) =>
  JSON.stringify({ kind: 'PodList', apiVersion: 'v1', items: docs.map((d) => parse(d) as Pod) });

const pki = () => ({
  ca: join(root, 'pki', 'ca.crt'),
  cert: join(root, 'pki', 'admin.crt'),
  key: join(root, 'pki', 'admin.key'),
});
async function pods(): Promise<Pod[]> {
  return (JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body) as PodList).items;
}
const podNamed = async (n: string) => (await pods()).find((p) => p.metadata.name === `${n}-${node}`);
const args = () =>
  kubeletArgs({
    dir,
    ports,
    node,
    extra: [
      '--container-runtime-endpoint',
      `unix://${socket}`,
      '--manifest-url',
      `http://127.0.0.1:${ports.url}/pods`,
      '--manifest-url-header',
      'X-Test:secret-ish,X-Other:1',
      '--http-check-frequency',
      '1s',
      '--node-ip',
      '127.0.0.1',
      // Its own cgroup root, removed at the end: the kubelet leaves the cgroup of a pod it stopped at shutdown, as
      // upstream.
      '--cgroup-root',
      cgroupRoot,
      // The daemon says cgroupfs (RuntimeConfig): the kubelet adopts it over this (KubeletCgroupDriverFromCRI).
      '--cgroup-driver',
      'systemd',
      '--config-dir',
      join(dir, 'kubelet.conf.d'),
    ],
  });

beforeAll(async () => {
  mkdirSync(join(dir, 'kubelet.conf.d'));
  writeFileSync(
    join(dir, 'kubelet.conf.d', '10-images.conf'),
    'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nnodeStatusMaxImages: 7\n',
  );
  ports = { ...(await freeKubeletPorts()), url: await freePort() };
  served = podYaml('a', `${tag}-a`);
  manifestServer = createServer((req, res) => {
    seenHeaders.push(String(req.headers['x-test']));
    res.end(served);
  });
  await new Promise<void>((r) => manifestServer.listen(ports.url, '127.0.0.1', r));
  daemon = startProcessRuntime(socket, join(dir, 'runtime'));
  kubelet = startKubelet(args());
  await until(async () => (await podNamed('a'))?.status?.phase === 'Running', 20_000, 'pod a Running');
}, 30_000);

afterAll(async () => {
  await kubelet?.stop();
  await daemon?.stop();
  killProcesses(dir, tag);
  manifestServer?.close();
  removeCgroupTree(cgroupRoot);
  rmSync(dir, { recursive: true, force: true });
});

describe('process runtime daemon + manifest URL', () => {
  it('runs a pod from the URL (single Pod document) with the configured header, source http', async () => {
    const p = (await podNamed('a'))!;
    expect(p.metadata.namespace).toBe('web');
    expect(p.metadata.annotations?.['kubernetes.io/config.source']).toBe('http');
    expect(seenHeaders).toContain('secret-ish');
    expect(countProcesses(`${tag}-a`)).toBe(1);
    // The secret-ish header value is not logged.
    expect(kubelet.output()).not.toContain('secret-ish');
  });

  it("uses the daemon's cgroup driver (CRI RuntimeConfig) over the flag's, as upstream's KubeletCgroupDriverFromCRI; reads --config-dir drop-ins", async () => {
    const r = await httpsGet(`https://127.0.0.1:${ports.port}/configz`, pki());
    const kc = (JSON.parse(r.body) as { kubeletconfig: { cgroupDriver: string; nodeStatusMaxImages: number } })
      .kubeletconfig;
    expect([kc.cgroupDriver, kc.nodeStatusMaxImages]).toEqual(['cgroupfs', 7]);
    expect(kubelet.output()).toMatch(
      /\] "Using cgroup driver setting received from the CRI runtime" cgroupDriver="cgroupfs"/,
    );
  });

  it("lists the runtime's view on /runningpods/ over 10250", async () => {
    const r = await httpsGet(`https://127.0.0.1:${ports.port}/runningpods/`, pki());
    expect(r.status).toBe(200);
    const list = JSON.parse(r.body) as PodList;
    expect(list.kind).toBe('PodList');
    const a = list.items.find((p) => p.metadata.name === `a-${node}`)!;
    expect(a.metadata.namespace).toBe('web');
    expect(a.spec.containers.map((c) => c.name)).toEqual(['main']);
  });

  it('follows logs: new lines arrive on an open response', async () => {
    const { ca, cert, key } = pki();
    const chunks: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const req = https.get(
        `https://127.0.0.1:${ports.port}/containerLogs/web/a-${node}/main?follow=true&tailLines=1`,
        { ca: readFileSync(ca), cert: readFileSync(cert), key: readFileSync(key) },
        (res) => {
          expect(res.statusCode).toBe(200);
          res.setEncoding('utf8');
          res.on('data', (d: string) => {
            chunks.push(d);
            const n = chunks.join('').split('\n').filter(Boolean).length;
            if (n >= 4) {
              req.destroy();
              resolve();
            }
          });
          res.on('error', () => undefined);
        },
      );
      req.on('error', (e) => {
        if (chunks.join('').split('\n').filter(Boolean).length < 4) reject(e);
      });
      setTimeout(() => {
        req.destroy();
        reject(new Error(`only got ${JSON.stringify(chunks)}`));
      }, 10_000);
    });
    const nums = chunks
      .join('')
      .trim()
      .split('\n')
      .map((l) => Number(l.split(' ')[1]));
    // tailLines=1 gives one old line, then the following ones arrive in order.
    for (let i = 1; i < nums.length; i++) expect(nums[i]).toBe(nums[i - 1] + 1);
  });

  it('keeps containers running across a kubelet restart: same container, no restart, one process', async () => {
    const before = (await podNamed('a'))!.status!.containerStatuses![0];
    expect(await kubelet.stop()).toBe(0);
    await new Promise((r) => setTimeout(r, 500));
    expect(countProcesses(`${tag}-a`)).toBe(1);
    kubelet = startKubelet(args());
    const after = await until(
      async () => (await podNamed('a').catch(() => undefined))?.status?.containerStatuses?.[0],
      20_000,
      'status after restart',
    );
    expect(after.containerID).toBe(before.containerID);
    expect(after.restartCount).toBe(0);
    expect(after.state.running?.startedAt).toBe(before.state.running?.startedAt);
    await new Promise((r) => setTimeout(r, 2000));
    expect(countProcesses(`${tag}-a`)).toBe(1);
  }, 30_000);

  it('follows changes at the URL: a PodList adds a pod, dropping one stops it', async () => {
    served = podList(podYaml('a', `${tag}-a`), podYaml('b', `${tag}-b`));
    await until(async () => (await podNamed('b'))?.status?.phase === 'Running', 15_000, 'pod b Running');
    served = podList(podYaml('b', `${tag}-b`));
    await until(() => countProcesses(`${tag}-a`) === 0, 15_000, 'pod a stopped');
    expect(await podNamed('a')).toBeUndefined();
    expect(countProcesses(`${tag}-b`)).toBe(1);
  }, 35_000);

  it('keeps the last good pods when the URL serves garbage, and says why', async () => {
    // A list where one pod is invalid is rejected whole, as upstream: b keeps running, c never starts.
    served = podList(podYaml('c', `${tag}-c`), podYaml('b', `${tag}-b`)).replace('"image":"busybox"', '"image":""');
    await until(() => kubelet.output().includes('invalid manifest from URL'), 10_000, 'error logged');
    expect(kubelet.output()).toMatch(
      new RegExp(
        `127\\.0\\.0\\.1:${ports.url}.*invalid manifest from URL|invalid manifest from URL.*127\\.0\\.0\\.1:${ports.url}`,
      ),
    );
    await new Promise((r) => setTimeout(r, 2500));
    expect((await podNamed('b'))?.status?.phase).toBe('Running');
    expect(countProcesses(`${tag}-b`)).toBe(1);
    expect(countProcesses(`${tag}-c`)).toBe(0);
  }, 20_000);
});
