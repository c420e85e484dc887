/**
 * The runtime's filesystems (KubeletSeparateDiskGC): a CRI runtime's ImageFsInfo over real gRPC, its image and
 * containers' filesystems measured where they are, the node's disk layout told by device, and /stats/summary's
 * runtime.containerFs and container rootfs on the containers' filesystem. And what a pod takes of them: its
 * containers' logs and its ephemeral storage, bytes and inodes (upstream calcEphemeralStorage).
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { afterAll, describe, expect, it } from 'vitest';
import { createCriClient } from '../../../src/cri/client.js';
import type { ImageService, RuntimeService } from '../../../src/cri/services.js';
import type * as cri from '../../../src/cri/types.js';
import { StatsCollector } from '../../../src/agent/stats/collector.js';
import { buildSummary } from '../../../src/agent/stats/summary.js';
import { runtimeFilesystems } from '../../../src/agent/stats/runtime-filesystems.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import { serveCriWithGrpcJs } from '../../fixtures/grpc-js-cri-server.js';

type Obj = Record<string, any>;

const dir = mkdtempSync(join(tmpdir(), 'tsk-runtime-fs-'));
const servers: grpc.Server[] = [];
afterAll(() => {
  for (const s of servers) s.forceShutdown();
  rmSync(dir, { recursive: true, force: true });
});

// A tmpfs is a device of its own: the containers' (or images') filesystem apart from the root dir's.
const tmpfs = '/dev/shm';
const apart = statSync(tmpfs).dev !== statSync(dir).dev;

const usage = (mountpoint: string, used: number, inodes: number): cri.FilesystemUsage => ({
  timestamp: Date.now() * 1e6,
  fs_id: { mountpoint },
  used_bytes: { value: used },
  inodes_used: { value: inodes },
});

/** A CRI runtime over gRPC whose ImageFsInfo is `info` (and whose one container wrote 4096 bytes). */
async function runtimeAnswering(info: cri.ImageFsInfo) {
  const rt = {
    listContainerStats: async () => [
      {
        attributes: {
          id: 'c1',
          metadata: { name: 'app', attempt: 0 },
          labels: {
            'io.kubernetes.pod.uid': 'uid-1',
            'io.kubernetes.pod.name': 'p',
            'io.kubernetes.pod.namespace': 'default',
            'io.kubernetes.container.name': 'app',
          },
        },
        writable_layer: usage('/', 4096, 7),
      },
    ],
  } as unknown as RuntimeService;
  const img = { imageFsInfo: async () => info } as unknown as ImageService;
  const endpoint = `unix://${join(dir, `cri-${servers.length}.sock`)}`;
  servers.push(await serveCriWithGrpcJs(endpoint, rt, img));
  return createCriClient(endpoint);
}

async function sample(info: cri.ImageFsInfo, separateDiskGc = true, podLogsDir = dir) {
  const runtime = await runtimeAnswering(info);
  const collector = new StatsCollector({
    runtime,
    rootDir: dir,
    podLogsDir,
    clock: new FakeClock(1_000_000),
    logger: createLogger({ level: 'fatal' }),
    separateDiskGc,
  });
  const snapshot = await collector.sample();
  runtime.close?.();
  return snapshot;
}

describe.skipIf(!apart)('the runtime filesystems', () => {
  it('a runtime reporting images only (containerd): one filesystem for images and writable layers', async () => {
    const snapshot = await sample({ image_filesystems: [usage(dir, 123_000, 45)] });
    expect(snapshot.node.diskLayout).toEqual({ dedicatedImageFs: false, splitContainerFs: false });
    expect(snapshot.node.containerFs).toBe(snapshot.node.imageFs);
    const summary = buildSummary(snapshot, { nodeName: 'n', startTime: '', pods: [], volumes: () => [] }) as Obj;
    expect(summary.node.runtime.containerFs).toEqual(summary.node.runtime.imageFs);
    expect(summary.node.runtime.imageFs).toMatchObject({ usedBytes: 123_000, inodesUsed: 45 });
  });

  it('images on a device of their own: a dedicated image filesystem', async () => {
    const snapshot = await sample({ image_filesystems: [usage(tmpfs, 1, 1)] });
    expect(snapshot.node.diskLayout).toEqual({ dedicatedImageFs: true, splitContainerFs: false });
  });

  it("a runtime with its containers' filesystem apart (CRI-O): containerFs measured there, rootfs against it", async () => {
    const snapshot = await sample({
      image_filesystems: [usage(dir, 123_000, 45)],
      container_filesystems: [usage(tmpfs, 6_000, 8)],
    });
    expect(snapshot.node.diskLayout).toEqual({ dedicatedImageFs: false, splitContainerFs: true });
    const summary = buildSummary(snapshot, {
      nodeName: 'n',
      startTime: '',
      pods: [{ uid: 'uid-1', name: 'p', namespace: 'default', containerStartTimes: new Map() }],
      volumes: () => [],
    }) as Obj;
    const shm = statSync(tmpfs);
    const { containerFs, imageFs } = summary.node.runtime;
    expect(containerFs).toMatchObject({ usedBytes: 6_000, inodesUsed: 8 });
    expect(imageFs).toMatchObject({ usedBytes: 123_000, inodesUsed: 45 });
    expect(containerFs.capacityBytes).not.toBe(imageFs.capacityBytes);
    expect(shm.dev).not.toBe(statSync(dir).dev);
    const rootfs = summary.pods[0].containers[0].rootfs;
    expect(rootfs).toMatchObject({ usedBytes: 4096, inodesUsed: 7, capacityBytes: containerFs.capacityBytes });
  });

  it("with KubeletSeparateDiskGC off the containers' filesystem is the image filesystem; the layout still shows the split", async () => {
    const snapshot = await sample(
      { image_filesystems: [usage(dir, 123_000, 45)], container_filesystems: [usage(tmpfs, 6_000, 8)] },
      false,
    );
    expect(snapshot.node.containerFs).toBe(snapshot.node.imageFs);
    expect(snapshot.node.diskLayout?.splitContainerFs).toBe(true);
  });

  it('no layout while the runtime has not said where its images are', async () => {
    expect(await runtimeFilesystems({ image_filesystems: [] }, { rootDir: dir, separateDiskGc: true })).toEqual({
      imageFs: undefined,
      containerFs: undefined,
    });
  });
});

describe("a pod's share of the disk", () => {
  it("counts its containers' log files and their directory, its own files, and its ephemeral storage's inodes, never the node's", async () => {
    const logs = mkdtempSync(join(tmpdir(), 'tsk-pod-logs-'));
    try {
      const containerLogs = join(logs, 'default_p_uid-1', 'app');
      mkdirSync(containerLogs, { recursive: true });
      writeFileSync(join(containerLogs, '0.log'), 'x'.repeat(10_000));
      writeFileSync(join(containerLogs, '0.log.20261130-010203.gz'), 'y');
      // A pod-level log a runtime such as kata writes beside the containers' directories, and the pod's hosts file.
      writeFileSync(join(logs, 'default_p_uid-1', 'sandbox.log'), 'z'.repeat(5_000));
      mkdirSync(join(dir, 'pods', 'uid-1'), { recursive: true });
      writeFileSync(join(dir, 'pods', 'uid-1', 'etc-hosts'), '127.0.0.1 localhost\n');
      const ownBytes = [join(logs, 'default_p_uid-1', 'sandbox.log'), join(dir, 'pods', 'uid-1', 'etc-hosts')]
        .map((f) => statSync(f).blocks * 512)
        .reduce((a, b) => a + b);
      const snapshot = await sample({ image_filesystems: [usage(dir, 123_000, 45)] }, true, logs);
      const volume = (name: string, localEphemeral: boolean, inodesUsed: number) => ({
        name,
        time: '',
        localEphemeral,
        usedBytes: 8192,
        inodesUsed,
        capacityBytes: 1,
        availableBytes: 1,
        inodes: 1,
        inodesFree: 1,
      });
      const summary = buildSummary(snapshot, {
        nodeName: 'n',
        startTime: '',
        pods: [{ uid: 'uid-1', name: 'p', namespace: 'default', containerStartTimes: new Map() }],
        volumes: () => [volume('scratch', true, 5), volume('claim', false, 100)],
      }) as Obj;
      const pod = summary.pods[0];
      // upstream's du of the container's log directory: the directory and its two files.
      expect(pod.containers[0].logs.inodesUsed).toBe(3);
      expect(pod.containers[0].logs.usedBytes).toBeGreaterThanOrEqual(10_000);
      // The writable layer's 7, the logs' 3, the local volume's 5 and the pod's two files (upstream getPodLogStats and
      // getPodEtcHostsStats); the claim is not ephemeral.
      expect(pod['ephemeral-storage'].inodesUsed).toBe(17);
      expect(ownBytes).toBeGreaterThanOrEqual(5_000);
      expect(pod['ephemeral-storage'].usedBytes).toBe(4096 + pod.containers[0].logs.usedBytes + 8192 + ownBytes);
      expect(summary.node.fs.inodesUsed).toBeGreaterThan(17);
    } finally {
      rmSync(logs, { recursive: true, force: true });
    }
  });
});
