/**
 * The node log query on a running kubelet (NodeLogQuery gate and enableSystemLogQuery), read with
 * `kubectl get --raw` as upstream's docs do it (here straight to 10250 with the admin certificate;
 * in a cluster through the apiserver's node proxy): a service journald does not know is found
 * in /var/log by name, a file by its path; a query breaking a rule gets upstream's answer; an
 * unauthenticated client gets nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  freeKubeletPorts,
  httpsGet,
  kubeletArgs,
  startKubelet,
  untilServing,
  type Kubelet,
  type KubeletPorts,
} from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-nlq-'));
// A service of this test's own, logging to a file under /var/log (the kubelet reads /var/log).
const service = `tsk-nlq-${process.pid}-${Date.now()}`;
const serviceLog = join('/var/log', `${service}.log`);
let kubelet: Kubelet;
let ports: KubeletPorts;

/** `kubectl get --raw path` against the kubelet with the admin certificate. */
function raw(path: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const pki = join(dir, 'root', 'pki');
  const args = [
    '--kubeconfig=/dev/null',
    `--server=https://127.0.0.1:${ports.port}`,
    `--certificate-authority=${join(pki, 'ca.crt')}`,
    `--client-certificate=${join(pki, 'admin.crt')}`,
    `--client-key=${join(pki, 'admin.key')}`,
    'get',
    '--raw',
    path,
  ];
  return new Promise((resolve) => {
    execFile('kubectl', args, { timeout: 20_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as NodeJS.ErrnoException & { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

beforeAll(async () => {
  writeFileSync(serviceLog, 'service started\nservice ready\n');
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    'enableSystemLogQuery: true\nfeatureGates:\n  NodeLogQuery: true\nauthentication: {webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n',
  );
  ports = await freeKubeletPorts();
  kubelet = startKubelet(kubeletArgs({ dir, ports, node: 'nlq', extra: ['--config', config] }));
  await untilServing(ports, kubelet);
}, 30_000);
afterAll(async () => {
  await kubelet?.stop();
  rmSync(serviceLog, { force: true });
  rmSync(dir, { recursive: true, force: true });
});

describe('node log query through kubectl get --raw', () => {
  it("reads a service's log found by name, and a file by its path", async () => {
    expect(await raw(`/logs/?query=${service}`)).toMatchObject({ code: 0, stdout: 'service started\nservice ready\n' });
    expect(await raw(`/logs/?query=/${service}.log`)).toMatchObject({
      code: 0,
      stdout: 'service started\nservice ready\n',
    });
    expect((await raw(`/logs/?query=${service}&tailLines=1`)).stdout).toBe(
      `\noptions present and query resolved to log files for [${service}]\ntry without specifying options\n`,
    );
    expect((await raw('/logs/?query=tsk-nlq-no-such-service')).stdout).toBe(
      '\nlog not found for tsk-nlq-no-such-service\n',
    );
  }, 60_000);

  it("refuses a query breaking upstream's rules; an unauthenticated client gets nothing", async () => {
    const bad = await raw(`/logs/${service}.log?query=kubelet`);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('path not allowed in query mode');
    const anon = await httpsGet(`https://127.0.0.1:${ports.port}/logs/?query=${service}`, {
      ca: join(dir, 'root', 'pki', 'ca.crt'),
    });
    expect(anon.status).toBe(401);
    expect(anon.body).not.toContain('service started');
  }, 60_000);
});
