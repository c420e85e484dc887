/**
 * What a pod's containers need is begun while its sandbox is made (start-prep.ts): the
 * images are inspected and the termination-log files and the hosts file made before the sandbox is there,
 * and a sandbox that fails, or objects that cannot be read, leave no termination-log file behind.
 * The runtime here is a stand-in that answers RunPodSandbox as told (a failure cannot be asked of
 * a real one); the files are real.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../../../src/api/types.js';
import type { ImageService, RuntimeService } from '../../../src/cri/services.js';
import { ImageManager } from '../../../src/agent/images/image-manager.js';
import { PodActionExecutor } from '../../../src/agent/runtime/executor.js';
import type { PodActions } from '../../../src/agent/runtime/compute-pod-actions.js';
import { BackoffTable } from '../../../src/agent/sync/backoff.js';
import { FakeClock } from '../../../src/lib/clock.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const pod: Pod = {
  metadata: { name: 'web', namespace: 'default', uid: 'uid-1' },
  spec: {
    hostNetwork: true,
    containers: [
      { name: 'a', image: 'busybox:1.36', terminationMessagePath: '/dev/termination-log' },
      { name: 'b', image: 'busybox:1.36', terminationMessagePath: '/dev/termination-log' },
    ],
  },
};
const plan: PodActions = {
  killPod: false,
  createSandbox: true,
  sandboxId: '',
  attempt: 0,
  start: [
    { name: 'a', init: false, restartCount: 0 },
    { name: 'b', init: false, restartCount: 0 },
  ],
  kill: [],
  backoff: [],
  failed: false,
};
const status = { uid: 'uid-1', name: 'web', namespace: 'default', sandboxes: [], containers: [] };

function executor(o: { runPodSandbox: () => Promise<string>; forPod?: () => Promise<never> }) {
  const rootDir = mkdtempSync(join(tmpdir(), 'tsk-prep-'));
  dirs.push(rootDir);
  const seen: { call: string; termLogs: string[]; hosts: boolean }[] = [];
  const files = () => {
    const d = join(rootDir, 'pods', 'uid-1', 'containers');
    return existsSync(d) ? readdirSync(d).flatMap((c) => readdirSync(join(d, c)).map((f) => `${c}/${f}`)) : [];
  };
  const runtime = {
    runPodSandbox: async () => {
      const id = await o.runPodSandbox();
      sandboxes++;
      seen.push({ call: 'RunPodSandbox', termLogs: files(), hosts: existsSync(join(rootDir, 'pods', 'uid-1', 'etc-hosts')) });
      return id;
    },
    createContainer: async () => {
      seen.push({ call: 'CreateContainer', termLogs: files(), hosts: existsSync(join(rootDir, 'pods', 'uid-1', 'etc-hosts')) });
      return `c${seen.length}`;
    },
    startContainer: async () => undefined,
  } as unknown as RuntimeService;
  let sandboxes = 0;
  const imageStatus: number[] = [];
  // The image manager is the real one; ImageStatus answers "present" and notes how many sandboxes had been made when it was asked.
  const images = new ImageManager({
    images: {
      imageStatus: async () => {
        imageStatus.push(sandboxes);
        return { id: 'sha256:1' };
      },
    } as unknown as ImageService,
    clock: new FakeClock(0),
    serializeImagePulls: true,
  });
  const ex = new PodActionExecutor({
    runtime,
    images,
    backoff: new BackoffTable(),
    clock: new FakeClock(0),
    networkError: () => undefined,
    objects: o.forPod ? { forPod: o.forPod } : undefined,
    node: {
      nodeName: 'n1',
      nodeIP: '10.0.0.1',
      rootDir,
      podLogsDir: join(rootDir, 'logs'),
      clusterDNS: [],
      clusterDomain: 'cluster.local',
      resolvConfPath: '',
      cgroups: { cgroupsPerQOS: false, cgroupRoot: '/', cgroupDriver: 'cgroupfs' },
      resources: { memoryCapacityBytes: 1 << 30, cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 },
    },
  });
  return { ex, seen, files, imageStatus };
}

describe('pod start preparation', () => {
  it("asks for every container's image and makes its termination-log file, and a hostNetwork pod's hosts file, while the sandbox is made", async () => {
    let release!: () => void;
    const { ex, seen, files, imageStatus } = executor({ runPodSandbox: () => new Promise<string>((r) => (release = () => r('s1'))) });
    const applied = ex.apply(pod, status, plan);
    // The sandbox is still being made: the files come anyway.
    for (let i = 0; i < 100 && files().length < 2; i++) await new Promise((r) => setTimeout(r, 5));
    release();
    const results = await applied;
    expect(results.map((r) => [r.action, r.ok])).toEqual([
      ['CreatePodSandbox', true],
      ['StartContainer', true],
      ['StartContainer', true],
    ]);
    expect(seen[0]).toMatchObject({ call: 'RunPodSandbox', hosts: true });
    expect(seen[0].termLogs.map((f) => f.split('/')[0])).toEqual(['a', 'b']);
    expect(files()).toHaveLength(2);
    // ImageStatus once per container, both before the sandbox was there.
    expect(imageStatus).toEqual([0, 0]);
  });

  it('a sandbox that fails leaves no termination-log file', async () => {
    const { ex, files } = executor({ runPodSandbox: () => Promise.reject(new Error('no runtime for "kata" is configured')) });
    const results = await ex.apply(pod, status, plan);
    expect(results.map((r) => [r.action, r.ok, r.reason])).toEqual([['CreatePodSandbox', false, 'CreatePodSandboxError']]);
    expect(files()).toEqual([]);
  });

  it('objects that cannot be read fail each container with CreateContainerConfigError and leave no termination-log file', async () => {
    const { ex, seen, files } = executor({ runPodSandbox: async () => 's1', forPod: () => Promise.reject(new Error('configmap "cfg" not found')) });
    const results = await ex.apply(pod, status, plan);
    expect(results.map((r) => [r.action, r.ok, r.reason ?? ''])).toEqual([
      ['CreatePodSandbox', true, ''],
      ['StartContainer', false, 'CreateContainerConfigError'],
      ['StartContainer', false, 'CreateContainerConfigError'],
    ]);
    expect(seen.map((s) => s.call)).toEqual(['RunPodSandbox']);
    expect(files()).toEqual([]);
  });
});
