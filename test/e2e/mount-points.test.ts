/**
 * Regression (reliability issue, defect 4): mount points on the embedded runtime. Pods whose
 * volumes are mounted at paths that do not exist on the host (right under `/`, nested, and the
 * kubelet's /dev/termination-log) start concurrently, see their volumes there, and leave nothing
 * on the host: the mount points live in each container's own mount namespace.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod, PodList } from '../../src/api/types.js';
import {
  freeKubeletPorts,
  httpGet,
  httpsGet,
  kubeletArgs,
  startKubelet,
  until,
  unmountTestMounts,
  type Kubelet,
} from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-mountpoints-'));
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
const node = 'mountpoints-node';
const top = `/tsk-scratch-${process.pid}`;
const nested = `/tsk-nested-${process.pid}/deep/info`;
const inDev = `/dev/tsk-dev-${process.pid}`;
const POD_COUNT = 20;
let ports: { port: number; ro: number; hz: number };
let kubelet: Kubelet;
const hostRoot = `/tsk-host-${process.pid}`;
const hostPaths = [top, `/tsk-nested-${process.pid}`, inDev, hostRoot];

const list = async () =>
  (JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body) as PodList).items as Pod[];

beforeAll(async () => {
  for (const p of hostPaths) expect(existsSync(p)).toBe(false);
  ports = await freeKubeletPorts();
  for (let i = 0; i < POD_COUNT; i++) {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `mp-${i}`, namespace: 'default' },
      spec: {
        terminationGracePeriodSeconds: 1,
        volumes: [
          { name: 'scratch', emptyDir: {} },
          { name: 'info', emptyDir: {} },
          { name: 'dev', emptyDir: {} },
        ],
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: [
              'sh',
              '-c',
              `echo ${i} > ${top}/mine && echo deep > ${nested}/x && touch ${inDev}/y && exec sleep 3600`,
            ],
            volumeMounts: [
              { name: 'scratch', mountPath: top },
              { name: 'info', mountPath: nested },
              { name: 'dev', mountPath: inDev },
            ],
          },
        ],
      },
    };
    writeFileSync(join(manifests, `mp-${i}.json`), JSON.stringify(pod));
  }
  kubelet = startKubelet(kubeletArgs({ dir, ports, node, manifests }));
}, 30_000);

afterAll(async () => {
  await kubelet?.stop();
  unmountTestMounts(dir);
  rmSync(dir, { recursive: true, force: true });
  for (const p of hostPaths) rmSync(p, { recursive: true, force: true });
});

describe('mount points that do not exist on the host', () => {
  it('concurrent pods run with their volumes there, and nothing is created on the host', async () => {
    await until(
      async () => {
        const items = await list();
        return items.length === POD_COUNT && items.every((p) => p.status?.phase === 'Running');
      },
      60_000,
      'every pod Running',
    ).catch(async (err: Error) => {
      const bad = (await list()).filter((p) => p.status?.phase !== 'Running');
      throw new Error(`${err.message}: ${JSON.stringify(bad.slice(0, 2).map((p) => p.status))}`);
    });
    for (const p of hostPaths) expect(existsSync(p), p).toBe(false);
    // Each container sees its own volume at the path (the file it wrote there).
    const pki = {
      ca: join(dir, 'root', 'pki', 'ca.crt'),
      cert: join(dir, 'root', 'pki', 'admin.crt'),
      key: join(dir, 'root', 'pki', 'admin.key'),
    };
    for (const i of [0, POD_COUNT - 1]) {
      const r = await httpsGet(
        `https://127.0.0.1:${ports.port}/run/default/mp-${i}-${node}/main?cmd=${encodeURIComponent(`cat ${top}/mine ${nested}/x`)}`,
        {
          ...pki,
          method: 'POST',
        },
      );
      expect(r.body).toBe(`${i}\ndeep\n`);
    }
    // Deleted, they leave nothing either.
    // File by file: the directory stays, and with it the kubelet's watch of it.
    for (let i = 0; i < POD_COUNT; i++) rmSync(join(manifests, `mp-${i}.json`));
    await until(async () => (await list()).length === 0, 60_000, 'pods gone');
    for (const p of hostPaths) expect(existsSync(p), p).toBe(false);
  }, 120_000);

  // The pod `kubectl debug node/<node>` makes: the host's namespaces and its whole filesystem at a path of its own.
  it("a node debugger pod sees the host's root at its mount path, and the host gets no such path", async () => {
    writeFileSync(
      join(manifests, 'debugger.json'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'node-debugger', namespace: 'default' },
        spec: {
          hostNetwork: true,
          hostPID: true,
          hostIPC: true,
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 1,
          volumes: [{ name: 'host-root', hostPath: { path: '/' } }],
          containers: [
            {
              name: 'debugger',
              image: 'busybox',
              command: ['sleep', '3600'],
              stdin: true,
              securityContext: { privileged: true },
              volumeMounts: [{ name: 'host-root', mountPath: hostRoot }],
            },
          ],
        },
      }),
    );
    await until(
      async () =>
        (await list()).some((p) => p.metadata?.name === `node-debugger-${node}` && p.status?.phase === 'Running'),
      30_000,
      'the debugger running',
    );
    const pki = {
      ca: join(dir, 'root', 'pki', 'ca.crt'),
      cert: join(dir, 'root', 'pki', 'admin.crt'),
      key: join(dir, 'root', 'pki', 'admin.key'),
    };
    const run = async (cmd: string) =>
      (
        await httpsGet(
          `https://127.0.0.1:${ports.port}/run/default/node-debugger-${node}/debugger?cmd=${encodeURIComponent(cmd)}`,
          { ...pki, method: 'POST' },
        )
      ).body;
    // The host's files, its PID 1 and its hostname (the host's UTS namespace with hostNetwork).
    expect(await run(`cat ${hostRoot}/etc/hostname`)).toBe(readFileSync('/etc/hostname', 'utf8'));
    // This test's own process, seen through the host's /proc and in the debugger's (hostPID).
    // (/run takes argv split at spaces, as upstream's: no shell.)
    expect(await run(`ls -d ${hostRoot}/proc/${process.pid} /proc/${process.pid}`)).toBe(
      // ls sorts its arguments.
      `/proc/${process.pid}\n${hostRoot}/proc/${process.pid}\n`,
    );
    expect(await run('hostname')).toBe(`${hostname()}\n`);
    expect(existsSync(hostRoot)).toBe(false);
    rmSync(join(manifests, 'debugger.json'));
    await until(
      async () => !(await list()).some((p) => p.metadata?.name === `node-debugger-${node}`),
      30_000,
      'the debugger gone',
    );
    expect(existsSync(hostRoot)).toBe(false);
  }, 60_000);
});
