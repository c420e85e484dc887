/**
 * The container GC against a real CRI runtime (the process runtime, in-process, real processes):
 * a collected dead container takes its log, its rotated logs and its legacy log link along, and
 * links left dangling are removed unless their container still runs; orphaned pod directories are removed, one whose
 * volumes cannot be released kept without stopping the sweep, and each sweep counted as upstream's.
 */
import { describe, expect, it } from 'vitest';
import { existsSync, lstatSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GarbageCollector, type GarbageCollectorDeps } from '../../../src/agent/gc/garbage-collector.js';
import type { ImageGc } from '../../../src/agent/gc/image-gc.js';
import { RuntimeManager } from '../../../src/agent/runtime/runtime-manager.js';
import { legacyLogSymlink } from '../../../src/agent/runtime/logs/legacy-log-links.js';
import { defaultContainerGcPolicy } from '../../../src/agent/gc/container-gc-plan.js';
import { realClock } from '../../../src/lib/clock.js';
import { processRuntimeFixture } from '../../process-runtime/runtime-fixture.js';
import { silentLogger as logger } from '../../../src/lib/logger.js';
import type * as cri from '../../../src/cri/types.js';

const { dir, runtime } = processRuntimeFixture('tsk-gc-');
const logsDir = join(dir, 'logs');
const linksDir = join(dir, 'containers');
const lexists = (p: string) => !!lstatSync(p, { throwIfNoEntry: false });

/** A pod with the kubelet's labels and one container running `script`; returns its IDs and log. */
async function podWith(
  name: string,
  script: string,
): Promise<{ uid: string; sandboxId: string; id: string; log: string }> {
  const uid = `uid-${name}`;
  const labels = { 'io.kubernetes.pod.name': name, 'io.kubernetes.pod.namespace': 'ns', 'io.kubernetes.pod.uid': uid };
  const sandboxConfig: cri.PodSandboxConfig = {
    metadata: { name, namespace: 'ns', uid, attempt: 0 },
    labels,
    log_directory: join(logsDir, `ns_${name}_${uid}`),
  };
  const sandboxId = await runtime.runPodSandbox(sandboxConfig);
  const id = await runtime.createContainer(
    sandboxId,
    {
      metadata: { name: 'main', attempt: 0 },
      image: { image: 'busybox' },
      command: ['sh', '-c', script],
      labels: { ...labels, 'io.kubernetes.container.name': 'main' },
      log_path: 'main/0.log',
    },
    sandboxConfig,
  );
  await runtime.startContainer(id);
  return { uid, sandboxId, id, log: join(sandboxConfig.log_directory!, 'main', '0.log') };
}

const until = async (fn: () => Promise<boolean>) => {
  for (let i = 0; i < 100 && !(await fn()); i++) await new Promise((r) => setTimeout(r, 50));
};

/** A collector over the process runtime; `o` says where its directories are and which pods are wanted. */
const collector = (
  o: Omit<
    GarbageCollectorDeps,
    'runtime' | 'runtimeManager' | 'imageGc' | 'clock' | 'logger' | 'policy' | 'cgroupFsRoot' | 'cgroupNaming'
  >,
) =>
  new GarbageCollector({
    runtime,
    runtimeManager: new RuntimeManager(runtime),
    // Image GC is a separate loop; collectContainers does not use it.
    imageGc: {} as ImageGc,
    clock: realClock,
    logger,
    policy: defaultContainerGcPolicy,
    cgroupFsRoot: '',
    cgroupNaming: { cgroupRoot: '/' },
    ...o,
  });

describe('container garbage collection', () => {
  it('removes a dead container of a pod no one wants with its log, rotated logs and link; dangling links go unless their container runs', async () => {
    const dead = await podWith('dead', 'echo bye');
    const live = await podWith('live', 'sleep 300');
    await until(async () => (await runtime.containerStatus(dead.id)).status.state === 'CONTAINER_EXITED');
    writeFileSync(`${dead.log}.20261124-101500.gz`, 'x');
    mkdirSync(linksDir, { recursive: true });
    const deadLink = legacyLogSymlink(linksDir, dead.id, 'main', 'dead', 'ns');
    symlinkSync(dead.log, deadLink);
    // A live container's link whose log is away (as between a rotation's rename and reopen) stays;
    // a dangling link of a container the runtime does not know goes.
    const liveLink = legacyLogSymlink(linksDir, live.id, 'main', 'live', 'ns');
    symlinkSync(join(dir, 'moved.log'), liveLink);
    const strayLink = legacyLogSymlink(linksDir, 'f'.repeat(64), 'main', 'stray', 'ns');
    symlinkSync(join(dir, 'nothing.log'), strayLink);

    const gc = collector({
      podLogsDir: logsDir,
      containerLogsDir: linksDir,
      rootDir: dir,
      isActive: (uid) => uid === live.uid,
    });
    await gc.collectContainers();

    expect((await runtime.listContainers()).map((c) => c.id)).toEqual([live.id]);
    expect(existsSync(dead.log)).toBe(false);
    expect(existsSync(`${dead.log}.20261124-101500.gz`)).toBe(false);
    expect(lexists(deadLink)).toBe(false);
    expect(lexists(strayLink)).toBe(false);
    expect(lexists(liveLink)).toBe(true);
    expect(existsSync(live.log)).toBe(true);
  });

  it("removes orphaned pod directories; one that fails is kept and the rest go on; each sweep's counts reported", async () => {
    const root = join(dir, 'orphans');
    for (const uid of ['wanted', 'stuck', 'broken', 'gone'])
      mkdirSync(join(root, 'pods', uid, 'volumes'), { recursive: true });
    const sweeps: [number, number][] = [];
    const gc = collector({
      podLogsDir: join(root, 'logs'),
      rootDir: root,
      isActive: (uid) => uid === 'wanted',
      // As the volume manager's: false when a volume cannot be released; an error when the disk refuses.
      removePodDir: async (uid) => {
        if (uid === 'stuck') return false;
        if (uid === 'broken') throw new Error('EIO');
        rmSync(join(root, 'pods', uid), { recursive: true });
        return true;
      },
      orphanSweep: (orphans, failed) => sweeps.push([orphans, failed]),
    });
    await gc.collectContainers();
    expect(readdirSync(join(root, 'pods')).sort()).toEqual(['broken', 'stuck', 'wanted']);
    expect(sweeps).toEqual([[3, 2]]);
  });

  it("under disk pressure removes a terminated pod's last dead container too, which the periodic GC keeps", async () => {
    const finished = await podWith('finished', 'exit 0');
    await until(async () => (await runtime.containerStatus(finished.id)).status.state === 'CONTAINER_EXITED');
    const gc = collector({
      podLogsDir: logsDir,
      rootDir: join(dir, 'terminated'),
      // A Succeeded pod still in the API: wanted, its worker done.
      isActive: (uid) => uid === finished.uid,
      isTerminated: (uid) => uid === finished.uid,
    });
    const ids = async () => (await runtime.listContainers()).map((c) => c.id);
    await gc.collectContainers();
    expect(await ids()).toContain(finished.id);
    await gc.collectContainers({ evictTerminatedPods: true });
    expect(await ids()).not.toContain(finished.id);
  });
});
