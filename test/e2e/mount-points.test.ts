/**
 * Regression (reliability issue, defect 4): mount points on the embedded runtime. Pods whose
 * volumes are mounted at paths that do not exist on the host (right under `/`, nested, and the
 * kubelet's /dev/termination-log) start concurrently, see their volumes there, and leave nothing
 * on the host: the mount points live in each container's own mount namespace.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
const hostPaths = [top, `/tsk-nested-${process.pid}`, inDev];

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
    rmSync(manifests, { recursive: true, force: true });
    mkdirSync(manifests);
    await until(async () => (await list()).length === 0, 60_000, 'pods gone');
    for (const p of hostPaths) expect(existsSync(p), p).toBe(false);
  }, 120_000);
});
