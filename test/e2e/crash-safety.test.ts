/**
 * Process creation survives a kubelet crash at any moment (issue 13 items 4 and 13, embedded
 * runtime): SIGKILL while pods are being created, many times over, then a normal start — each pod
 * has exactly one set of processes and no temporary state files are left; a container's
 * daemonized child (setsid … &) goes away with its pod, as root even one that drops its environment
 * (the container's cgroup).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countProcesses, freeKubeletPorts, httpGet, kubeletArgs, startKubelet, until } from './helpers.js';

const base = mkdtempSync(join(tmpdir(), 'tsk-crash-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const tag = `crash${process.pid}`;
const podYaml = (name: string, script: string) =>
  `apiVersion: v1\nkind: Pod\nmetadata: {name: ${name}}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: c, image: busybox, command: [sh, -c, ${JSON.stringify(script)}]}\n`;
const running = async (ro: number, n: number) => {
  const items = JSON.parse((await httpGet(`http://127.0.0.1:${ro}/pods`)).body).items as {
    status?: { containerStatuses?: { state: { running?: unknown } }[] };
  }[];
  return items.length === n && items.every((p) => p.status?.containerStatuses?.[0]?.state?.running);
};

describe('crash safety of the embedded runtime', () => {
  it('SIGKILL at any moment while pods are created leaves exactly one set of processes per pod after the restart', async () => {
    const dir = join(base, 'k');
    const manifests = join(dir, 'manifests');
    mkdirSync(manifests, { recursive: true });
    const ports = await freeKubeletPorts();
    const args = kubeletArgs({ dir, ports, node: 'crash', manifests, extra: ['--file-check-frequency', '1s'] });
    // Each trial adds manifests and kills the kubelet while their containers are being started.
    let N = 0;
    for (let t = 0; t < 10; t++) {
      const k = startKubelet(args);
      await until(() => k.output().includes('Started kubelet"'), 20_000, 'started');
      await new Promise((r) => setTimeout(r, 300));
      for (let j = 0; j < 4; j++, N++)
        writeFileSync(join(manifests, `p${N}.yaml`), podYaml(`p${N}`, `sleep 3600; echo ${tag}-p${N}x`));
      await new Promise((r) => setTimeout(r, 40 + t * 15));
      k.proc.kill('SIGKILL');
      await new Promise((r) => k.proc.once('exit', r));
    }
    const k = startKubelet(args);
    try {
      await until(() => running(ports.ro, N), 30_000, 'all pods running after the restarts');
      await new Promise((r) => setTimeout(r, 1500));
      for (let i = 0; i < N; i++) expect([i, countProcesses(`${tag}-p${i}x`)]).toEqual([i, 1]);
      const state = join(dir, 'root', 'process-runtime');
      const leftovers = ['containers', 'sandboxes'].flatMap((d) =>
        readdirSync(join(state, d)).filter((f) => f.includes('.tmp-')),
      );
      expect(leftovers).toEqual([]);
    } finally {
      await k.stop();
    }
    for (let i = 0; i < N; i++) expect(countProcesses(`${tag}-p${i}x`)).toBe(0);
  }, 120_000);

  it('a daemonized child of a container goes away with its pod', async () => {
    const dir = join(base, 'd');
    const manifests = join(dir, 'manifests');
    mkdirSync(manifests, { recursive: true });
    // The quotes split the marker in the parent's command line: only the daemonized child carries it whole.
    writeFileSync(
      join(manifests, 'daemon.yaml'),
      podYaml(
        'daemon',
        // The second child also drops the environment (and the runtime's marker): only a cgroup (as root) still holds
        // it.
        `setsid sh -c 'sleep 1000; echo ${tag}-esc''apee' > /dev/null 2>&1 < /dev/null & ` +
          `env -i setsid sh -c 'sleep 1000; echo ${tag}-scrub''bed' > /dev/null 2>&1 < /dev/null & sleep 3600`,
      ),
    );
    const ports = await freeKubeletPorts();
    const k = startKubelet(
      kubeletArgs({ dir, ports, node: 'crash', manifests, extra: ['--file-check-frequency', '1s'] }),
    );
    try {
      await until(() => running(ports.ro, 1), 20_000, 'daemon pod running');
      await until(
        () => countProcesses(`${tag}-escapee`) === 1 && countProcesses(`${tag}-scrubbed`) === 1,
        10_000,
        'daemonized children started',
      );
      unlinkSync(join(manifests, 'daemon.yaml'));
      await until(
        async () => running(ports.ro, 0).then(() => countProcesses(`${tag}-escapee`) === 0),
        20_000,
        'daemonized child gone with the pod',
      );
      if (process.getuid?.() === 0)
        await until(
          () => countProcesses(`${tag}-scrubbed`) === 0,
          5_000,
          'the child without the marker gone too (its cgroup)',
        );
    } finally {
      await k.stop();
    }
  }, 60_000);
});
