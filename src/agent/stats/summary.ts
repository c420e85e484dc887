/**
 * The /stats/summary document (kubelet stats/v1alpha1 Summary), built from a StatsSnapshot, pure.
 * Field names are upstream's; a figure that is not known is left out (never a zero). With
 * `onlyCpuAndMemory` only cpu, memory and swap appear at every level, as upstream.
 */
import { rfc3339 } from '../../lib/time.js';
import type { VolumeStats } from '../volume/volume-stats.js';
import type { ContainerSample, StatsSnapshot, SystemContainerSample } from './samples.js';
import type { RuntimeFilesystem } from './runtime-filesystems.js';
import type { FsUsage } from '../volume/types.js';
import { podUsage, sumDefined as sum } from './pod-usage.js';
import type { Pressure, PressureByResource } from '../../lib/pressure.js';

type Obj = Record<string, unknown>;

/** What the summary needs besides the snapshot. */
export interface SummaryContext {
  nodeName: string;
  /** When the kubelet (node stats) started, RFC 3339. */
  startTime: string;
  pods: {
    uid: string;
    name: string;
    namespace: string;
    startTime?: string;
    containerStartTimes: ReadonlyMap<string, string>;
    /** The pod's memory limit (its cgroup's, from its spec) and its containers' by name, when set. */
    memoryLimit?: number;
    containerMemoryLimits?: ReadonlyMap<string, number>;
  }[];
  volumes(uid: string): VolumeStats[];
  onlyCpuAndMemory?: boolean;
  /**
   * A container's pressure stall information, read from its cgroup v2 files with its other details
   * (the runtime's stats have none: containerd 1.x, CRI before v1.34).
   */
  containerPressure?: (containerId: string) => PressureByResource | undefined;
}

/**
 * The memory left under a limit (cAdvisor: limit − working set), only when there is a limit: the
 * runtime's figure when it gives one (the cgroup's own limit), else the limit's.
 */
export function availableUnder(
  limit: number | undefined,
  fromRuntime: number | undefined,
  workingSet: number | undefined,
): number | undefined {
  if (limit === undefined) return undefined;
  if (fromRuntime !== undefined) return fromRuntime;
  return workingSet === undefined ? undefined : Math.max(0, limit - workingSet);
}

/** SwapStats: in use, and what is left under a swap limit; none when the runtime reports no swap. */
function swap(time: string, usage: number | undefined, available?: number): Obj | undefined {
  return usage === undefined ? undefined : defined({ time, swapAvailableBytes: available, swapUsageBytes: usage });
}

/** CPU or memory stats with their pressure stall information (KubeletPSI), where the kernel gives it. */
function withPsi(stats: Obj | undefined, psi: Pressure | undefined): Obj | undefined {
  return stats && psi ? { ...stats, psi } : stats;
}

/** IOStats: only its pressure stall information, where the kernel gives it. */
function io(time: string, psi: Pressure | undefined): Obj | undefined {
  return psi ? { time, psi } : undefined;
}

const defined = (o: Obj): Obj => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

function cpu(time: string, cpuNs?: number, nanoCores?: number): Obj | undefined {
  if (cpuNs === undefined && nanoCores === undefined) return undefined;
  return defined({
    time,
    usageNanoCores: nanoCores,
    usageCoreNanoSeconds: cpuNs === undefined ? undefined : Math.round(cpuNs),
  });
}

function memory(
  time: string,
  m: {
    available?: number;
    usage?: number;
    workingSet?: number;
    rss?: number;
    pageFaults?: number;
    majorPageFaults?: number;
  },
): Obj | undefined {
  const o = defined({
    time,
    availableBytes: m.available,
    usageBytes: m.usage,
    workingSetBytes: m.workingSet,
    rssBytes: m.rss,
    pageFaults: m.pageFaults,
    majorPageFaults: m.majorPageFaults,
  });
  return Object.keys(o).length > 1 ? o : undefined;
}

/** A runtime's filesystem with what the runtime says its images or writable layers use of it. */
function runtimeFs(time: string, f: RuntimeFilesystem): Obj | undefined {
  return fs(time, f, f.imageUsedBytes, f.imageInodesUsed);
}

/**
 * FsStats: the filesystem's figures, with `used` (and `inodesUsed`) what one user of it takes when
 * given — never the whole filesystem's inodes for a user's.
 */
function fs(time: string, f: FsUsage | undefined, used?: number, inodesUsed?: number): Obj | undefined {
  if (!f && used === undefined) return undefined;
  return defined({
    time,
    availableBytes: f?.availableBytes,
    capacityBytes: f?.capacityBytes,
    usedBytes: used ?? f?.usedBytes,
    inodesFree: f?.inodesFree,
    inodes: f?.inodes,
    inodesUsed: used === undefined ? f?.inodesUsed : inodesUsed,
  });
}

/**
 * A pod's ephemeral storage (upstream calcEphemeralStorage): its containers' writable layers and logs, its local
 * ephemeral volumes (not a claim, secret or memory emptyDir) and its own files (`podFiles`: the files directly under
 * its log directory and its etc-hosts), bytes and inodes, on the node's filesystem; none without containers.
 */
function ephemeralStorage(
  time: string,
  nodeFs: FsUsage | undefined,
  containers: readonly ContainerSample[],
  volumes: readonly VolumeStats[],
  podFiles: { bytes: number; inodes: number } | undefined,
): Obj | undefined {
  if (!containers.length) return undefined;
  const local = volumes.filter((v) => v.localEphemeral);
  const total = (container: (c: ContainerSample) => number, volume: (v: VolumeStats) => number, own: number) =>
    containers.reduce((n, c) => n + container(c), 0) + local.reduce((n, v) => n + volume(v), 0) + own;
  return fs(
    time,
    nodeFs,
    total(
      (c) => (c.rootfsUsed ?? 0) + (c.logsUsed ?? 0),
      (v) => v.usedBytes,
      podFiles?.bytes ?? 0,
    ),
    total(
      (c) => (c.rootfsInodesUsed ?? 0) + (c.logsInodesUsed ?? 0),
      (v) => v.inodesUsed,
      podFiles?.inodes ?? 0,
    ),
  );
}

/** Builds the Summary. */
export function buildSummary(s: StatsSnapshot, ctx: SummaryContext): Obj {
  const time = rfc3339(s.atMs);
  const only = !!ctx.onlyCpuAndMemory;
  const byPod = new Map<string, ContainerSample[]>();
  for (const c of s.containers) {
    const l = byPod.get(c.podUid) ?? [];
    l.push(c);
    byPod.set(c.podUid, l);
  }
  const allContainers = s.containers;
  const systemContainer = (name: string, c: SystemContainerSample) =>
    defined({
      name,
      startTime: ctx.startTime,
      cpu: cpu(time, c.cpuNs, c.nanoCores),
      memory: memory(time, {
        available: availableUnder(c.limit, undefined, c.workingSet),
        usage: c.usage,
        workingSet: c.workingSet,
        rss: c.rss,
        pageFaults: c.pageFaults,
        majorPageFaults: c.majorPageFaults,
      }),
    });
  // The pods: their cgroup (kubepods) when there is one, else the sum of their containers.
  const podsAggregate = s.podsCgroup
    ? systemContainer('pods', s.podsCgroup)
    : defined({
        name: 'pods',
        startTime: ctx.startTime,
        cpu: cpu(time, sum(allContainers.map((c) => c.cpuNs)), sum(allContainers.map((c) => c.nanoCores))),
        memory: memory(time, {
          usage: sum(allContainers.map((c) => c.usage)),
          workingSet: sum(allContainers.map((c) => c.workingSet)),
          rss: sum(allContainers.map((c) => c.rss)),
          pageFaults: sum(allContainers.map((c) => c.pageFaults)),
          majorPageFaults: sum(allContainers.map((c) => c.majorPageFaults)),
        }),
      });
  const kubelet = systemContainer('kubelet', s.kubelet);
  const iface = (i: { name: string; rxBytes: number; rxErrors: number; txBytes: number; txErrors: number }) => ({
    name: i.name,
    rxBytes: i.rxBytes,
    rxErrors: i.rxErrors,
    txBytes: i.txBytes,
    txErrors: i.txErrors,
  });
  const def = s.node.network.interfaces.find((i) => i.name === s.node.network.defaultName);
  const node = defined({
    nodeName: ctx.nodeName,
    systemContainers: [
      kubelet,
      ...(s.runtimeCgroup ? [systemContainer('runtime', s.runtimeCgroup)] : []),
      ...(s.miscCgroup ? [systemContainer('misc', s.miscCgroup)] : []),
      podsAggregate,
    ],
    startTime: ctx.startTime,
    cpu: withPsi(cpu(time, s.node.cpuNs, s.node.nanoCores), s.node.pressure?.cpu),
    memory: withPsi(
      memory(time, {
        available: s.node.memory.available,
        usage: s.node.memory.usage,
        workingSet: s.node.memory.workingSet,
        rss: s.node.memory.rss,
        pageFaults: s.node.memory.pageFaults,
        majorPageFaults: s.node.memory.majorPageFaults,
      }),
      s.node.pressure?.memory,
    ),
    io: io(time, only ? undefined : s.node.pressure?.io),
    ...(only
      ? {}
      : {
          network: def ? { time, ...iface(def), interfaces: s.node.network.interfaces.map(iface) } : undefined,
          fs: fs(time, s.node.fs),
          runtime: s.node.imageFs
            ? {
                imageFs: runtimeFs(time, s.node.imageFs),
                containerFs: runtimeFs(time, s.node.containerFs ?? s.node.imageFs),
              }
            : undefined,
          rlimit: { time, maxpid: s.node.rlimit.maxpid, curproc: s.node.rlimit.curproc },
        }),
    swap: { time, swapAvailableBytes: s.node.memory.swapAvailable, swapUsageBytes: s.node.memory.swapUsage },
  });
  const pods = ctx.pods.map((p) => {
    const cs = byPod.get(p.uid) ?? [];
    const containers = cs.map((c) => {
      const pressure = c.pressure ?? ctx.containerPressure?.(c.id);
      return defined({
        name: c.name,
        startTime: p.containerStartTimes.get(c.name),
        cpu: withPsi(cpu(time, c.cpuNs, c.nanoCores), pressure?.cpu),
        memory: withPsi(
          memory(time, {
            available: availableUnder(p.containerMemoryLimits?.get(c.name), c.available, c.workingSet),
            usage: c.usage,
            workingSet: c.workingSet,
            rss: c.rss,
            pageFaults: c.pageFaults,
            majorPageFaults: c.majorPageFaults,
          }),
          pressure?.memory,
        ),
        io: io(time, only ? undefined : pressure?.io),
        swap: swap(time, c.swapUsage, c.swapAvailable),
        ...(only
          ? {}
          : {
              rootfs:
                c.rootfsUsed !== undefined
                  ? fs(time, s.node.containerFs ?? s.node.imageFs, c.rootfsUsed, c.rootfsInodesUsed)
                  : undefined,
              logs: c.logsUsed !== undefined ? fs(time, s.node.logsFs, c.logsUsed, c.logsInodesUsed) : undefined,
            }),
      });
    });
    const volumes = only
      ? []
      : ctx.volumes(p.uid).map((v) => ({
          time: v.time,
          availableBytes: v.availableBytes,
          capacityBytes: v.capacityBytes,
          usedBytes: v.usedBytes,
          inodesFree: v.inodesFree,
          inodes: v.inodes,
          inodesUsed: v.inodesUsed,
          name: v.name,
          pvcRef: v.pvcRef,
        }));
    const sandbox = s.pods.get(p.uid);
    const podNet = sandbox?.network;
    const podDef = podNet?.interfaces.find((i) => i.name === podNet.defaultName);
    const usage = podUsage(sandbox, cs);
    return defined({
      podRef: { name: p.name, namespace: p.namespace, uid: p.uid },
      startTime: p.startTime,
      containers,
      cpu: withPsi(cpu(time, usage.cpuNs, usage.nanoCores), sandbox?.pressure?.cpu),
      memory: withPsi(
        memory(time, {
          available: availableUnder(
            p.memoryLimit,
            sandbox?.workingSet !== undefined ? sandbox.available : undefined,
            usage.workingSet,
          ),
          usage: usage.usage,
          workingSet: usage.workingSet,
          rss: usage.rss,
          pageFaults: usage.pageFaults,
          majorPageFaults: usage.majorPageFaults,
        }),
        sandbox?.pressure?.memory,
      ),
      io: io(time, only ? undefined : sandbox?.pressure?.io),
      // The pod's swap: its containers' (the runtime reports none for the pod's cgroup).
      swap: swap(time, sum(cs.map((c) => c.swapUsage))),
      ...(only
        ? {}
        : {
            network: podDef ? { time, ...iface(podDef), interfaces: podNet!.interfaces.map(iface) } : undefined,
            volume: volumes.length ? volumes : undefined,
            'ephemeral-storage': ephemeralStorage(time, s.node.fs, cs, ctx.volumes(p.uid), s.podFiles.get(p.uid)),
            process_stats: sandbox?.processCount !== undefined ? { process_count: sandbox.processCount } : undefined,
          }),
    });
  });
  return { node, pods };
}
