/**
 * Container log rotation (issue 13 item 7) on the embedded runtime: a chatty container's log is
 * rotated at containerLogMaxSize into `<n>.log.<YYYYMMDD-hhmmss>` files, older rotated files are
 * gzip-compressed, at most containerLogMaxFiles files remain, and a follower keeps receiving lines
 * across rotations.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  freeKubeletPorts,
  httpGet,
  kubeletArgs,
  startKubelet,
  until,
  type Kubelet,
  type KubeletPorts,
} from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-logrot-'));
let k: Kubelet;
let ports: KubeletPorts;

beforeAll(async () => {
  const manifests = join(dir, 'manifests');
  mkdirSync(manifests);
  writeFileSync(
    join(manifests, 'chatty.yaml'),
    'apiVersion: v1\nkind: Pod\nmetadata: {name: chatty}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: c, image: busybox, command: [sh, -c, "i=0; while true; do echo line-$i-padding-padding-padding; i=$((i+1)); sleep 0.005; done"]}\n',
  );
  const cfg = join(dir, 'config.yaml');
  writeFileSync(
    cfg,
    'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerLogMaxSize: 4Ki\ncontainerLogMaxFiles: 3\ncontainerLogMonitorInterval: 3s\nauthentication: {webhook: {enabled: false}, x509: {}}\nauthorization: {mode: AlwaysAllow}\n',
  );
  ports = await freeKubeletPorts();
  k = startKubelet(
    kubeletArgs({ dir, ports, node: 'rot', manifests, extra: ['--config', cfg, '--read-only-port', String(ports.ro)] }),
  );
  await until(
    async () =>
      JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body).items[0]?.status?.containerStatuses?.[0]
        ?.state?.running,
    20_000,
    'running',
  );
}, 30_000);
afterAll(async () => {
  await k?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('container log rotation', () => {
  it('rotates at the size limit, compresses older files, keeps at most maxFiles, and a follower keeps going', async () => {
    const pki = (f: string) => readFileSync(join(dir, 'root', 'pki', f));
    let got = '';
    const req = https.get(
      `https://127.0.0.1:${ports.port}/containerLogs/default/chatty-rot/c?follow=true`,
      { ca: pki('ca.crt'), cert: pki('admin.crt'), key: pki('admin.key') },
      (res) => {
        res.on('data', (d) => {
          got += d;
        });
        res.on('error', () => {});
      },
    );
    req.on('error', () => {});
    const logDir = () => {
      const d = join(
        dir,
        'logs',
        readdirSync(join(dir, 'logs')).find((n) => n.includes('chatty'))!,
        'c',
      );
      // A rotated file being compressed is written as `<file>.tmp.gz` and renamed when complete: not a kept file yet.
      return {
        d,
        files: readdirSync(d)
          .filter((f) => !f.endsWith('.tmp.gz'))
          .sort(),
      };
    };
    await until(() => logDir().files.some((f) => f.endsWith('.gz')), 30_000, 'a compressed rotated file');
    for (let i = 0; i < 5; i++) {
      const { files } = logDir();
      expect(files.length).toBeLessThanOrEqual(3);
      for (const f of files) expect(f).toMatch(/^0\.log(\.\d{8}-\d{6}(\.gz)?)?$/);
      await new Promise((r) => setTimeout(r, 1000));
    }
    const nums = got
      .split('\n')
      .filter(Boolean)
      .map((l) => Number(/line-(\d+)/.exec(l)?.[1]));
    expect(nums.length).toBeGreaterThan(200);
    const maxSeenBeforeFirstRotation = 4096 / 40;
    expect(Math.max(...nums)).toBeGreaterThan(maxSeenBeforeFirstRotation * 3);
    req.destroy();
  }, 60_000);
});
