/**
 * The static CPU manager policy on the embedded runtime (as root, cgroup v1 cpuset): a Guaranteed
 * static pod's integer CPU runs its container on that CPU alone, and the reconcile loop moves a
 * running BestEffort container off it, onto the shared pool (the reserved CPU) — the containers'
 * own view of it, /proc/self/status, says so.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeKubeletPorts, kubeletArgs, startKubelet, until, untilServing, type Kubelet } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-embedded-cpumgr-'));
let kubelet: Kubelet | undefined;
afterAll(async () => {
  await kubelet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The CPUs the last line of a container's log names (`Cpus_allowed_list: …`). */
function lastAllowed(pod: string): string | undefined {
  const logs = join(dir, 'logs');
  const podDir = readdirSync(logs).find((d) => d.startsWith(`default_${pod}-`));
  if (!podDir) return undefined;
  try {
    const lines = readFileSync(join(logs, podDir, 'main', '0.log'), 'utf8')
      .trim()
      .split('\n');
    return /Cpus_allowed_list:\s*(\S+)$/.exec(lines.at(-1) ?? '')?.[1];
  } catch {
    return undefined;
  }
}

const printCpus = 'while true; do grep Cpus_allowed_list /proc/self/status; sleep 0.5; done';

describe.runIf(process.getuid?.() === 0 && existsSync('/sys/fs/cgroup/cpuset/cgroup.procs') && cpus().length === 2)(
  'CPU manager (static) on the embedded runtime',
  () => {
    it('runs a Guaranteed container on its CPU alone and moves the shared pool off it', async () => {
      const manifests = join(dir, 'manifests');
      mkdirSync(manifests);
      const pod = (name: string, resources: object) =>
        JSON.stringify({
          metadata: { name, namespace: 'default' },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', printCpus], resources }],
          },
        });
      writeFileSync(join(manifests, 'shared.json'), pod('shared', {}));
      const ports = await freeKubeletPorts();
      kubelet = startKubelet(
        kubeletArgs({
          dir,
          ports,
          node: 'cpumgr',
          manifests,
          extra: ['--cpu-manager-policy=static', '--reserved-cpus=0', '--cpu-manager-reconcile-period=1s'],
        }),
      );
      await untilServing(ports, kubelet);
      // Alone, the BestEffort container runs on both CPUs (the shared pool keeps the reserved one).
      await until(() => lastAllowed('shared') === '0-1', 30_000, 'the shared container on 0-1');
      const cpu = { cpu: '1', memory: '64Mi' };
      writeFileSync(join(manifests, 'pinned.json'), pod('pinned', { requests: cpu, limits: cpu }));
      await until(() => lastAllowed('pinned') === '1', 30_000, 'the Guaranteed container on CPU 1 alone');
      await until(() => lastAllowed('shared') === '0', 30_000, 'the shared container moved off CPU 1');
      expect(JSON.parse(readFileSync(join(dir, 'root', 'cpu_manager_state'), 'utf8'))).toMatchObject({
        policyName: 'static',
        defaultCpuSet: '0',
      });
    }, 90_000);
  },
);
