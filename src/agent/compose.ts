/**
 * The composition root of the agent: builds every manager from the agent config and wires them.
 *
 *  sources ─► PodConfig ─► SyncLoop ─► PodWorkers ─► PodSync ─► executor ─► CRI runtime
 *  (file, URL,    ▲            ▲  admission            │   mirror pods
 *   apiserver)    │          PLEG ◄──── relist ─────────┘
 *                 StatusManager ─► StatusSync ─► apiserver ◄─ node status, Lease, events
 *
 * The runtime is wired in compose-runtime.ts, cluster membership (node status, Lease, status
 * sync) in compose-cluster.ts, the stats collector and the kubelet's own metrics in compose-observability.ts. With an
 * apiserver client the apiserver source, status sync, node registration/status, Lease, mirror
 * pods, events and the env/pull-secret object fetcher are added; without one the kubelet is
 * standalone.
 */
import { setMaxListeners } from 'node:events';
import { totalmem } from 'node:os';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { messageOf, unavailable } from '../lib/errors.js';
import { CRI_API_VERSION, type CriRuntime } from '../cri/services.js';
import { composeRuntime, protectedImages } from './compose-runtime.js';
import { startClusterMembership } from './compose-cluster.js';
import { createStatsCollector, timedWorker, trackPodStartDuration } from './compose-observability.js';
import { FileSource } from './podconfig/file.js';
import { HttpSource } from './podconfig/http.js';
import { PodConfig } from './podconfig/pod-config.js';
import type { PodSource } from './podconfig/types.js';
import { PodManager } from './pods/pod-manager.js';
import { RuntimeManager } from './runtime/runtime-manager.js';
import { PodActionExecutor } from './runtime/executor.js';
import { ImageManager } from './images/image-manager.js';
import { StatusManager } from './status/status-manager.js';
import { ReasonCache } from './status/reason-cache.js';
import { BackoffTable } from './sync/backoff.js';
import { WorkQueue } from './sync/work-queue.js';
import { PodWorkers } from './sync/pod-workers.js';
import { PodSync } from './sync/pod-sync.js';
import { SyncLoop } from './sync/sync-loop.js';
import { housekeeping } from './sync/housekeeping.js';
import { GenericPleg } from './pleg/generic-pleg.js';
import { createAgentHost } from './host.js';
import { RuntimeState } from './runtime/runtime-state.js';
import { ImageGc } from './gc/image-gc.js';
import { GarbageCollector } from './gc/garbage-collector.js';
import type { KubeClient } from '../lib/kube-client.js';
import { ApiserverSource } from './podconfig/apiserver.js';
import { isStaticPod } from './podconfig/types.js';
import { StatusSync } from './status/status-sync.js';
import { MirrorPods } from './pods/mirror-pods.js';
import { EventRecorder, podRef } from './events/recorder.js';
import { PodObjectFetcher } from './objects/pod-objects.js';
import { admitPod, type AdmissionNode } from './admission/predicate.js';
import { readMachineInfo } from './nodestatus/machine-info.js';
import { nodeLabels, nodeResources } from './nodestatus/node-object.js';
import type { NodeStatusManager } from './nodestatus/node-status-manager.js';
import { VolumeManager } from './volume/volume-manager.js';
import { TokenManager } from './volume/token-manager.js';
import { VolumeStatsCollector } from './volume/volume-stats.js';
import { stopPodsForShutdown } from './runtime/shutdown.js';
import { ContainerLogManager } from './runtime/logs/log-rotation.js';
import { ProberManager } from './prober/prober-manager.js';
import { KubeletMetrics, instrumentKubeClient } from './metrics/kubelet-metrics.js';
import { createObservabilityHost } from './stats/observability-host.js';
import type { MachineInfo } from './nodestatus/machine-info.js';
import { rfc3339 } from '../lib/time.js';

export { sandboxImageFromInfo } from './compose-runtime.js';
export type { Agent, AgentConfig } from './agent-config.js';
import type { Agent, AgentConfig } from './agent-config.js';

/** Builds the agent; does no I/O until `start`. */
export function composeAgent(cfg: AgentConfig, deps: { logger: Logger; clock: Clock; runtime?: CriRuntime; api?: KubeClient }): Agent {
  const { logger, clock } = deps;
  let pleg: GenericPleg | undefined;
  const metrics = new KubeletMetrics({
    nodeName: cfg.nodeName,
    running: { pods: () => pleg?.runningCounts().pods ?? 0, containers: () => pleg?.runningCounts().containers ?? {} },
  });
  const api = deps.api ? instrumentKubeClient(deps.api, metrics) : undefined;
  const { runtime, processRuntime } = composeRuntime(cfg, { logger, metrics, given: deps.runtime });

  const sources: PodSource[] = [];
  if (cfg.staticPodPath) sources.push(new FileSource({ path: cfg.staticPodPath, nodeName: cfg.nodeName, periodMs: cfg.fileCheckFrequencyMs, logger, clock }));
  if (cfg.staticPodURL)
    sources.push(
      new HttpSource({ url: cfg.staticPodURL, headers: cfg.staticPodURLHeader, nodeName: cfg.nodeName, periodMs: cfg.httpCheckFrequencyMs, logger, clock }),
    );
  if (api) sources.push(new ApiserverSource({ client: api, nodeName: cfg.nodeName, clock, logger, watchdogMs: cfg.watchdogMs }));
  const events = new EventRecorder({ client: api, nodeName: cfg.nodeName, clock, logger, qps: cfg.eventRecordQPS, burst: cfg.eventBurst });
  let admissionNode: AdmissionNode | undefined;
  let nodeStatus: NodeStatusManager | undefined;

  const podConfig = new PodConfig({ sources, logger, clock });
  const podManager = new PodManager();
  const statusManager = new StatusManager();
  const reasons = new ReasonCache();
  const backoff = new BackoffTable();
  const workQueue = new WorkQueue();
  const runtimeManager = new RuntimeManager(runtime.runtime);
  const images = new ImageManager({ images: runtime.images, clock, serializeImagePulls: cfg.serializeImagePulls, events });
  const runtimeState = new RuntimeState({ runtime: runtime.runtime, clock, logger, periodMs: 5000 });
  const objects = api ? new PodObjectFetcher({ client: api, clock }) : undefined;
  const tokens = api ? new TokenManager({ client: api, clock }) : undefined;
  const nodeAllocatable = () => admissionNode?.allocatable;
  const volumes = new VolumeManager({
    rootDir: cfg.rootDir,
    clock,
    logger,
    events,
    onPodRemoved: (uid) => tokens?.forgetPod(uid),
    host: {
      hasApiserver: !!api,
      isRoot: process.getuid?.() === 0,
      getObject: (resource, ns, name) => objects!.namespaced(resource, ns, name),
      getPersistentVolume: (name) => objects!.get(`/api/v1/persistentvolumes/${encodeURIComponent(name)}`),
      getToken: (k) => tokens!.getToken(k),
      get downward() {
        return { nodeName: cfg.nodeName, hostIPs: [cfg.nodeIP], podIPs: [], nodeAllocatable: nodeAllocatable() };
      },
    },
  });
  const volumeStats = new VolumeStatsCollector({ volumes, clock, logger, periodMs: cfg.volumeStatsAggPeriodMs });
  const executor = new PodActionExecutor({
    runtime: runtime.runtime,
    images,
    backoff,
    clock,
    networkError: () => runtimeState.networkError(),
    events,
    nodeAllocatable,
    objects,
    node: {
      nodeName: cfg.nodeName,
      nodeIP: cfg.nodeIP,
      rootDir: cfg.rootDir,
      podLogsDir: cfg.podLogsDir,
      clusterDNS: cfg.clusterDNS,
      clusterDomain: cfg.clusterDomain,
      resolvConfPath: cfg.resolvConf,
      cgroups: cfg.cgroups,
      resources: { memoryCapacityBytes: totalmem(), cpuCFSQuota: cfg.cpuCFSQuota, cpuCFSQuotaPeriodUs: cfg.cpuCFSQuotaPeriodUs },
    },
  });
  const imageGc = new ImageGc({
    runtime: runtime.runtime,
    images: runtime.images,
    clock,
    logger,
    policy: cfg.imageGc,
    protectedImages: protectedImages(runtime, cfg.podInfraContainerImage),
  });
  const cgroupFsRoot = processRuntime ? '' : '/sys/fs/cgroup';
  const mirrors = api ? new MirrorPods({ client: api, podManager, nodeName: cfg.nodeName, nodeUid: () => nodeStatus?.nodeUid(), logger }) : undefined;
  pleg = new GenericPleg({
    runtime: runtime.runtime,
    clock,
    logger,
    periodMs: 1000,
    onRelist: (ms, interval) => {
      metrics.plegRelistDuration.observe(ms / 1000);
      if (interval !== undefined) metrics.plegRelistInterval.observe(interval / 1000);
    },
  });
  const prober = new ProberManager({ runtime: runtime.runtime, clock, logger, events, onChange: (uid) => workQueue.enqueue(uid, clock.now()) });
  let runtimeName = 'process';
  const syncer = new PodSync({
    runtime: runtime.runtime,
    runtimeManager,
    executor,
    statusManager,
    reasons,
    backoff,
    workQueue,
    clock,
    logger,
    nodeIP: cfg.nodeIP,
    get runtimeName() {
      return runtimeName;
    },
    podLogsDir: cfg.podLogsDir,
    syncFrequencyMs: cfg.syncFrequencyMs,
    rootDir: cfg.rootDir,
    cgroupFsRoot,
    cgroupRoot: cfg.cgroups.cgroupRoot,
    images,
    isDesired: (uid) => !!podManager.getPodByUid(uid),
    events,
    mirrors,
    volumes,
    prober,
  });
  const workers = new PodWorkers({
    syncer: {
      syncPod: timedWorker(metrics, 'sync', (p) => syncer.syncPod(p)),
      syncTerminatingPod: timedWorker(metrics, 'terminating', (p, g) => syncer.syncTerminatingPod(p, g)),
      syncTerminatedPod: timedWorker(metrics, 'terminated', (p) => syncer.syncTerminatedPod(p)),
    },
    logger,
    now: () => clock.now(),
  });
  trackPodStartDuration({ statusManager, podManager, metrics, clock });
  const syncLoop = new SyncLoop({
    podConfig,
    podManager,
    workers,
    pleg,
    workQueue,
    clock,
    logger,
    housekeeping: () =>
      housekeeping({
        podManager,
        workers,
        runtime: runtime.runtime,
        runtimeManager,
        backoff,
        clock,
        logger,
        podLogsDir: cfg.podLogsDir,
        statusManager,
        mirrors,
        volumes,
      }),
    admit: (pod, admitted) => admitPod(pod, admitted, { node: admissionNode!, isStatic: isStaticPod(pod), allowedUnsafeSysctls: cfg.allowedUnsafeSysctls }),
    onRejected: (pod, reason, message) => {
      statusManager.set(pod.metadata.uid!, { phase: 'Failed', reason, message: `Pod was rejected: ${message}` });
      events.record(podRef(pod), 'Warning', reason, message);
    },
  });
  const statusSync = api
    ? new StatusSync({
        client: api,
        statusManager,
        podManager,
        clock,
        logger,
        canBeDeleted: (uid) => workers.stateOf(uid) === 'terminated' || (workers.stateOf(uid) === undefined && syncLoop.isInactive(uid)),
      })
    : undefined;
  const isActive = (uid: string) => !!podManager.getPodByUid(uid) || workers.uids().includes(uid);
  const gc = new GarbageCollector({
    runtime: runtime.runtime,
    runtimeManager,
    imageGc,
    clock,
    logger,
    policy: cfg.containerGc,
    podLogsDir: cfg.podLogsDir,
    rootDir: cfg.rootDir,
    cgroupFsRoot,
    cgroupRoot: cfg.cgroups.cgroupRoot,
    isActive,
    removePodDir: (uid) => volumes.removePodDir(uid),
  });
  const collector = createStatsCollector({ cfg, runtime, embeddedRuntime: !!processRuntime, clock, logger });
  let machineInfo: MachineInfo | undefined;
  const host = {
    ...createAgentHost({
      runtimeState,
      nodeName: cfg.nodeName,
      podManager,
      statusManager,
      runtimeManager,
      syncLoop,
      pleg,
      clock,
      syncFrequencyMs: cfg.syncFrequencyMs,
    }),
    ...createObservabilityHost({
      nodeName: cfg.nodeName,
      startTime: rfc3339(clock.now()),
      collector,
      volumeStats,
      podManager,
      statusManager,
      metrics,
      probeCounts: () => prober.counts.values(),
      machine: () => machineInfo,
    }),
  };
  const abort = new AbortController();
  // Every loop of the agent (pod workers, probers, syncs, heartbeats) waits on this one signal at once:
  // more than Node's 10 listeners is the design, not a leak (each removes its listener when done).
  setMaxListeners(0, abort.signal);

  return {
    host,
    internals: {
      podConfig,
      podManager,
      workers,
      statusManager,
      pleg,
      runtime,
      gc,
      imageGc,
      runtimeState,
      events,
      volumes,
      volumeStats,
      prober,
      collector,
      metrics,
    },
    async start() {
      if (processRuntime) await processRuntime.start();
      const machine = await readMachineInfo(cfg.rootDir);
      machineInfo = machine;
      admissionNode = {
        name: cfg.nodeName,
        labels: nodeLabels(cfg.node, machine),
        taints: cfg.node.registerWithTaints,
        allocatable: nodeResources(cfg.node, machine).allocatableNumbers,
      };
      let runtimeVersion = '';
      try {
        const v = await runtime.runtime.version(CRI_API_VERSION);
        runtimeName = v.runtime_name;
        runtimeVersion = `${v.runtime_name}://${v.runtime_version}`;
        logger.info({ runtime: v.runtime_name, version: v.runtime_version, apiVersion: v.runtime_api_version }, 'connected to container runtime');
      } catch (err) {
        throw unavailable(`container runtime is not reachable at ${cfg.containerRuntimeEndpoint || '(embedded)'}: ${messageOf(err)}`, err);
      }
      await runtimeState.update();
      runtimeState.start({ signal: abort.signal });
      pleg.start({ signal: abort.signal });
      gc.start({ signal: abort.signal });
      volumeStats.start({ signal: abort.signal });
      collector.start({ signal: abort.signal });
      const logs = cfg.containerLogs ?? { maxSizeBytes: 10 * 1024 * 1024, maxFiles: 5, monitorIntervalMs: 10_000 };
      new ContainerLogManager({
        runtime: runtime.runtime,
        clock,
        logger,
        maxSizeBytes: logs.maxSizeBytes,
        maxFiles: logs.maxFiles,
        intervalMs: logs.monitorIntervalMs,
      }).start({ signal: abort.signal });
      if (api)
        nodeStatus = startClusterMembership(
          {
            client: api,
            settings: cfg.node,
            registerNode: cfg.registerNode,
            machine,
            events,
            clock,
            logger,
            updateFrequencyMs: cfg.nodeStatusUpdateFrequencyMs,
            reportFrequencyMs: cfg.nodeStatusReportFrequencyMs,
            leaseDurationSeconds: cfg.nodeLeaseDurationSeconds,
            runtime,
            runtimeState,
            runtimeVersion,
            statusSync: statusSync!,
          },
          abort.signal,
        );
      syncLoop.start({ signal: abort.signal });
      podConfig.start({ signal: abort.signal });
    },
    async stop(o = {}) {
      abort.abort();
      await events.flush();
      await Promise.race([workers.whenIdle(), new Promise((r) => setTimeout(r, 5000))]);
      // The in-process runtime's containers die with the kubelet: stop each pod with its own grace
      // period (bounded by shutdownGracePeriod when set), all in parallel. On an external runtime
      // (containerd) pods keep running across a kubelet restart, as upstream.
      if (processRuntime) {
        await stopPodsForShutdown({ runtime: runtime.runtime, runtimeManager, podManager, shutdownGracePeriodMs: o.shutdownGracePeriodMs ?? 0, logger });
        await processRuntime.shutdown(0);
      }
      runtime.close?.();
    },
  };
}
