/**
 * The process runtime's pod cgroups (as root): each sandbox a cgroup with the pod's limits from its
 * config, its containers' cgroups under it, UpdatePodSandboxResources resizing it in place, and
 * nothing left once the sandbox is removed — reached over gRPC by a real grpc-js client, as the
 * kubelet reaches a runtime daemon.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findCgroupDir } from '../fixtures/cgroup-tree.js';
import { cpus } from 'node:os';
import { ProcessImages } from '../../src/process-runtime/images.js';
import { createCriClient } from '../../src/cri/client.js';
import { serveCri } from '../../src/cri/server.js';
import type * as cri from '../../src/cri/types.js';
import { processRuntimeFixture, runSandbox } from './runtime-fixture.js';
import { ProcessRuntime } from '../../src/process-runtime/runtime.js';
import { silentLogger as logger } from '../../src/lib/logger.js';

const asRoot = process.getuid?.() === 0;
const { dir, runtime } = processRuntimeFixture('tsk-sandbox-cgroups-');

describe.runIf(asRoot)('process runtime pod cgroups', () => {
  it("gives a sandbox a cgroup with the pod's limits, its containers' under it; UpdatePodSandboxResources resizes it", async () => {
    const sandboxConfig: cri.PodSandboxConfig = {
      metadata: { name: 'p', namespace: 'ns', uid: 'u-sandbox-cgroups', attempt: 0 },
      log_directory: join(dir, 'logs'),
      linux: {
        resources: { cpu_shares: 204, cpu_quota: 20_000, cpu_period: 100_000, memory_limit_in_bytes: 64 << 20 },
      },
    };
    const sandboxId = await runtime.runPodSandbox(sandboxConfig);
    const id = await runtime.createContainer(
      sandboxId,
      { metadata: { name: 'main', attempt: 0 }, image: { image: 'busybox' }, command: ['sleep', '300'] },
      sandboxConfig,
    );
    await runtime.startContainer(id);
    const cpuDir = findCgroupDir('/sys/fs/cgroup/cpu', id);
    const sandboxDir = join(cpuDir, '..');
    expect(sandboxDir.endsWith(sandboxId)).toBe(true);
    const read = (d: string, file: string) => readFileSync(join(d, file), 'utf8').trim();
    expect(read(sandboxDir, 'cpu.cfs_quota_us')).toBe('20000');
    expect(read(sandboxDir, 'cgroup.procs')).toBe('');
    // The container's process joins its own cgroup (as it starts), not the sandbox's.
    for (let i = 0; i < 500 && !read(cpuDir, 'cgroup.procs'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(read(cpuDir, 'cgroup.procs')).not.toBe('');
    // Over gRPC, as a runtime daemon is reached.
    const socket = join(dir, 'cri.sock');
    const server = await serveCri(`unix://${socket}`, runtime, new ProcessImages(join(dir, 'images')));
    const client = createCriClient(`unix://${socket}`);
    try {
      await client.runtime.updatePodSandboxResources!({
        pod_sandbox_id: sandboxId,
        resources: { cpu_shares: 409, cpu_quota: 40_000, cpu_period: 100_000, memory_limit_in_bytes: 96 << 20 },
      });
    } finally {
      client.close?.();
      await server.close();
    }
    expect(read(sandboxDir, 'cpu.cfs_quota_us')).toBe('40000');
    expect(read(sandboxDir, 'cpu.shares')).toBe('409');
    await runtime.stopPodSandbox(sandboxId);
    await runtime.removePodSandbox(sandboxId);
    expect(existsSync(sandboxDir)).toBe(false);
  });

  it.runIf(existsSync('/sys/fs/cgroup/cpuset/cgroup.procs') && cpus().length > 1)(
    "runs a container on its cpuset (the CPU manager's), and moves it with UpdateContainerResources",
    async () => {
      const { sandboxId, sandboxConfig } = await runSandbox(runtime, dir, 'u-cpuset');
      const allowed = (pid: number) =>
        /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
      /** The container's process, found in its cgroup. */
      const pidOf = async (id: string) => {
        const procs = join(findCgroupDir('/sys/fs/cgroup/cpuset', id), 'cgroup.procs');
        // The process joins its cgroups before it runs the command: under a loaded machine that can take seconds.
        for (let i = 0; i < 500 && !readFileSync(procs, 'utf8').trim(); i++)
          await new Promise((r) => setTimeout(r, 20));
        const pid = Number(readFileSync(procs, 'utf8').trim().split('\n')[0]);
        expect(pid, `a process in ${procs}`).toBeGreaterThan(0);
        return pid;
      };
      const id = await runtime.createContainer(
        sandboxId,
        {
          metadata: { name: 'pinned', attempt: 0 },
          image: { image: 'busybox' },
          command: ['sleep', '300'],
          linux: { resources: { cpu_shares: 1024, cpuset_cpus: '1' } },
        },
        sandboxConfig,
      );
      await runtime.startContainer(id);
      const pid = await pidOf(id);
      expect(allowed(pid)).toBe('1');
      await runtime.updateContainerResources(id, { cpuset_cpus: '0' });
      expect(allowed(pid)).toBe('0');
      // A container without a cpuset runs on the machine's CPUs.
      const free = await runtime.createContainer(
        sandboxId,
        { metadata: { name: 'free', attempt: 0 }, image: { image: 'busybox' }, command: ['sleep', '300'] },
        sandboxConfig,
      );
      await runtime.startContainer(free);
      expect(allowed(await pidOf(free))).toBe(readFileSync('/sys/fs/cgroup/cpuset/cpuset.cpus', 'utf8').trim());
      await runtime.stopPodSandbox(sandboxId);
      await runtime.removePodSandbox(sandboxId);
    },
  );

  // Regression: a restarted daemon removed the cgroup of a ready sandbox whose containers had all
  // ended, so its next container ran without the pod's limits.
  it("keeps a ready sandbox's cgroup, and its limits, across a daemon restart when its containers have ended", async () => {
    const daemonDir = join(dir, 'daemon');
    const daemon = () =>
      new ProcessRuntime({
        stateDir: join(daemonDir, 'state'),
        podIP: '127.0.0.1',
        mode: 'daemon',
        logger,
        version: 'test',
      });
    const first = daemon();
    await first.start();
    const sandboxConfig: cri.PodSandboxConfig = {
      metadata: { name: 'p', namespace: 'ns', uid: 'u-daemon-sandbox', attempt: 0 },
      log_directory: join(daemonDir, 'logs'),
      linux: { resources: { cpu_quota: 30_000, cpu_period: 100_000 } },
    };
    const sandboxId = await first.runPodSandbox(sandboxConfig);
    const id = await first.createContainer(
      sandboxId,
      { metadata: { name: 'once', attempt: 0 }, image: { image: 'busybox' }, command: ['true'] },
      sandboxConfig,
    );
    await first.startContainer(id);
    for (let i = 0; i < 500 && (await first.containerStatus(id)).status.state !== 'CONTAINER_EXITED'; i++)
      await new Promise((r) => setTimeout(r, 20));
    const sandboxDir = findCgroupDir('/sys/fs/cgroup/cpu', sandboxId, 4);
    expect(readFileSync(join(sandboxDir, 'cpu.cfs_quota_us'), 'utf8').trim()).toBe('30000');
    await first.shutdown(0);
    const second = daemon();
    await second.start();
    try {
      expect(readFileSync(join(sandboxDir, 'cpu.cfs_quota_us'), 'utf8').trim()).toBe('30000');
    } finally {
      await second.stopPodSandbox(sandboxId);
      await second.removePodSandbox(sandboxId);
      await second.shutdown(0);
    }
  });
});
