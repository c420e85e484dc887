/**
 * Shutdown is bounded and honours each pod's grace period (issue 13 items 3 and 5): SIGTERM with
 * a followed log stream open on 10250, or with slow-header clients on the read-only port, still
 * stops the pods and exits; on the in-process runtime each pod is stopped with its own
 * terminationGracePeriodSeconds (a 30 s pod gets the time its TERM handler needs, a 0 s pod is
 * killed without TERM), capped by shutdownGracePeriod when set.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  countProcesses,
  freeKubeletPorts,
  httpGet,
  kubeletArgs,
  startKubelet,
  until,
  type Kubelet,
  type KubeletPorts,
} from './helpers.js';

const base = mkdtempSync(join(tmpdir(), 'tsk-shutdown-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
let seq = 0;

const podYaml = (name: string, grace: number, script: string) =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  terminationGracePeriodSeconds: ${grace}\n  containers:\n  - {name: c, image: busybox, command: [sh, -c, ${JSON.stringify(script)}]}\n`;

async function kubeletWith(
  pods: Record<string, string>,
  extra: string[] = [],
): Promise<{ k: Kubelet; ports: KubeletPorts; dir: string }> {
  const dir = join(base, `k${seq++}`);
  const manifests = join(dir, 'manifests');
  mkdirSync(manifests, { recursive: true });
  for (const [n, y] of Object.entries(pods)) writeFileSync(join(manifests, `${n}.yaml`), y);
  const ports = await freeKubeletPorts();
  const k = startKubelet(kubeletArgs({ dir, ports, node: 'sd', manifests, extra }));
  await until(
    async () => {
      const items = JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body).items as {
        status?: { containerStatuses?: { state: { running?: unknown } }[] };
      }[];
      return (
        items.length === Object.keys(pods).length &&
        items.every((p) => p.status?.containerStatuses?.[0]?.state?.running)
      );
    },
    20_000,
    'pods running',
  ).catch((err: Error) => {
    // What the kubelet said (it may have exited: a port taken meanwhile, say) is what tells why.
    throw new Error(`${err.message}; the kubelet (exit ${k.proc.exitCode}) said: ${k.output().slice(-3000)}`);
  });
  return { k, ports, dir };
}

function terminate(k: Kubelet, boundMs: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`kubelet did not exit within ${boundMs} ms after SIGTERM`)), boundMs);
    k.proc.once('exit', (c) => {
      clearTimeout(t);
      resolve(c);
    });
    k.proc.kill('SIGTERM');
  });
}

describe('bounded shutdown', () => {
  it('exits and stops its pods while a follow=true log stream is open', async () => {
    const marker = `sd-follow-${process.pid}`;
    const { k, ports, dir } = await kubeletWith({
      talk: podYaml('talk', 2, `while true; do echo ${marker}; sleep 0.2; done`),
    });
    const pki = (f: string) => readFileSync(join(dir, 'root', 'pki', f));
    let got = '';
    const req = https.get(
      `https://127.0.0.1:${ports.port}/containerLogs/default/talk-sd/c?follow=true`,
      { ca: pki('ca.crt'), cert: pki('admin.crt'), key: pki('admin.key') },
      (res) => {
        res.on('data', (d) => {
          got += d;
        });
        res.on('error', () => {});
      },
    );
    req.on('error', () => {});
    await until(() => got.includes(marker), 10_000, 'log lines flowing');
    expect(await terminate(k, 20_000)).toBe(0);
    expect(countProcesses(marker)).toBe(0);
  }, 40_000);

  it('exits while slow clients hold connections to the read-only port without finishing their headers', async () => {
    const marker = `sd-slow-${process.pid}`;
    const { k, ports } = await kubeletWith({ idle: podYaml('idle', 2, `sleep 3600; echo ${marker}`) });
    const socks = Array.from({ length: 5 }, () => {
      const s = connect(ports.ro, '127.0.0.1');
      s.on('error', () => {});
      s.write('GET /pods HTTP/1.1\r\nHost: x\r\n');
      return s;
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(await terminate(k, 20_000)).toBe(0);
    expect(countProcesses(marker)).toBe(0);
    for (const s of socks) s.destroy();
  }, 40_000);
});

describe('grace periods at kubelet shutdown (process runtime)', () => {
  it('each pod gets its own terminationGracePeriodSeconds, in parallel; 0 means no TERM', async () => {
    const out = join(base, `grace-${process.pid}`);
    mkdirSync(out);
    const slow = `trap 'echo term > ${out}/slow; sleep 7; echo done >> ${out}/slow; exit 0' TERM; touch ${out}/slow.ready; while true; do sleep 0.1; done`;
    const slow2 = `trap 'echo term > ${out}/slow2; sleep 7; echo done >> ${out}/slow2; exit 0' TERM; touch ${out}/slow2.ready; while true; do sleep 0.1; done`;
    const slow3 = `trap 'echo term > ${out}/slow3; sleep 7; echo done >> ${out}/slow3; exit 0' TERM; touch ${out}/slow3.ready; while true; do sleep 0.1; done`;
    const zero = `trap 'echo term > ${out}/zero; exit 0' TERM; touch ${out}/zero.ready; while true; do sleep 0.1; done`;
    const { k } = await kubeletWith({
      slow: podYaml('slow', 30, slow),
      slow2: podYaml('slow2', 30, slow2),
      slow3: podYaml('slow3', 30, slow3),
      zero: podYaml('zero', 0, zero),
    });
    // Running in /pods can come before the shell has installed its trap.
    await until(
      () => ['slow', 'slow2', 'slow3', 'zero'].every((f) => existsSync(join(out, `${f}.ready`))),
      10_000,
      'traps installed',
    );
    const t0 = Date.now();
    expect(await terminate(k, 30_000)).toBe(0);
    for (const f of ['slow', 'slow2', 'slow3']) expect(readFileSync(join(out, f), 'utf8')).toBe('term\ndone\n');
    expect(existsSync(join(out, 'zero'))).toBe(false);
    // In parallel: three 7 s TERM handlers take about 7 s together, not 21 s.
    expect(Date.now() - t0).toBeLessThan(16_000);
  }, 60_000);

  it('shutdownGracePeriod caps the grace period', async () => {
    const out = join(base, `cap-${process.pid}`);
    mkdirSync(out);
    const slow = `trap 'echo term > ${out}/slow; sleep 7; echo done >> ${out}/slow; exit 0' TERM; touch ${out}/slow.ready; while true; do sleep 0.1; done`;
    const cfg = join(base, `cap-${process.pid}.yaml`);
    writeFileSync(
      cfg,
      'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nshutdownGracePeriod: 2s\nauthentication: {webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n',
    );
    const { k } = await kubeletWith({ slow: podYaml('slow', 30, slow) }, ['--config', cfg]);
    // Running in /pods can come before the shell has installed its trap.
    await until(() => existsSync(join(out, 'slow.ready')), 10_000, 'trap installed');
    expect(await terminate(k, 20_000)).toBe(0);
    expect(readFileSync(join(out, 'slow'), 'utf8')).toBe('term\n');
  }, 40_000);

  it('shutdownGracePeriodCriticalPods: regular pods stop first within their share, critical pods after with theirs', async () => {
    const out = join(base, `critical-${process.pid}`);
    mkdirSync(out);
    // The regular pod's handler outlasts its 3 s share; the critical pod's finishes within its own 3 s.
    const regular = `trap 'touch ${out}/regular.term; sleep 30; touch ${out}/regular.done' TERM; touch ${out}/regular.ready; while true; do sleep 0.1; done`;
    const critical = `trap 'touch ${out}/critical.term; sleep 1; touch ${out}/critical.done; exit 0' TERM; touch ${out}/critical.ready; while true; do sleep 0.1; done`;
    const cfg = join(base, `critical-${process.pid}.yaml`);
    writeFileSync(
      cfg,
      'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nshutdownGracePeriod: 6s\nshutdownGracePeriodCriticalPods: 3s\nauthentication: {webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n',
    );
    const criticalYaml = podYaml('critical', 30, critical).replace('spec:\n', 'spec:\n  priority: 2000000000\n');
    const { k } = await kubeletWith({ regular: podYaml('regular', 30, regular), critical: criticalYaml }, [
      '--config',
      cfg,
    ]);
    await until(
      () => ['regular', 'critical'].every((f) => existsSync(join(out, `${f}.ready`))),
      10_000,
      'traps installed',
    );
    expect(await terminate(k, 30_000)).toBe(0);
    expect(
      ['regular.term', 'regular.done', 'critical.term', 'critical.done'].map((f) => existsSync(join(out, f))),
    ).toEqual([true, false, true, true]);
    // The critical pod got its TERM only once the regular group was done (killed at the end of its 3 s).
    const termAt = (f: string) => statSync(join(out, `${f}.term`)).mtimeMs;
    expect(termAt('critical') - termAt('regular')).toBeGreaterThanOrEqual(2500);
  }, 60_000);
});
