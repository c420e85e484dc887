/**
 * The composition root of the agent: builds every manager from the agent config and wires them.
 *
 *  sources ─► PodConfig ─► SyncLoop ─► PodWorkers ─► PodSync ─► executor ─► CRI runtime
 *  (file, URL,    ▲            ▲  admission            │   mirror pods
 *   apiserver)    │          PLEG ◄──── relist ─────────┘
 *                 StatusManager ─► StatusSync ─► apiserver ◄─ node status, Lease, events
 *
 * Subsystems are wired in their own files: the runtime (compose-runtime.ts), the pod sources
 * (compose-sources.ts), volumes (compose-volumes.ts), garbage collection and log rotation
 * (compose-gc.ts), cluster membership: node status, Lease, status sync (compose-cluster.ts), the
 * stats collector and the kubelet's own metrics (compose-observability.ts). Without an apiserver
 * client the kubelet is standalone.
 */
import { join } from 'node:path';
import { messageOf } from '../lib/errors.js';
import { DeviceManager } from './devices/device-manager.js';
import { DraManager } from './dra/dra-manager.js';
import { AllocationManager } from './allocation/allocation-manager.js';
import { setMaxListeners } from 'node:events';
import { sleep, type Clock } from '../lib/clock.js';
import { periodically } from '../lib/periodically.js';
import type { Logger } from '../lib/logger.js';
import type { CriRuntime } from '../cri/services.js';
import {
  composeImages,
  composeNodeResources,
  composeRuntime,
  composeRuntimeClasses,
  composeUserNamespaces,
  connectRuntime,
  nodeFacts,
  startNodeCgroups,
  type EmbeddedRuntime,
} from './compose-runtime.js';
import { composeGc } from './compose-gc.js';
import { composeResourceManagers } from './compose-resource-managers.js';
import { composeStatusSync, startClusterMembership } from './compose-cluster.js';
import { composeHost, createStatsCollector, timedSyncer, trackPodStartDuration } from './compose-observability.js';
import { PodConfig } from './podconfig/pod-config.js';
import { composeSources } from './compose-sources.js';
import { composeVolumes } from './compose-volumes.js';
import { later } from './later.js';
import { PodManager } from './pods/pod-manager.js';
import { RuntimeManager } from './runtime/runtime-manager.js';
import { PodActionExecutor } from './runtime/executor.js';
import { StatusManager } from './status/status-manager.js';
import { ReasonCache } from './status/reason-cache.js';
import { BackoffTable, containerBackoffPolicyWith } from './sync/backoff.js';
import { WorkQueue } from './sync/work-queue.js';
import { PodWorkers } from './sync/pod-workers.js';
import { PodSync } from './sync/pod-sync.js';
import { SyncLoop } from './sync/sync-loop.js';
import { housekeeping } from './sync/housekeeping.js';
import { GenericPleg } from './pleg/generic-pleg.js';
import { RuntimeState } from './runtime/runtime-state.js';
import { PodCidr } from './runtime/pod-cidr.js';
import type { KubeClient } from '../lib/kube-client.js';
import { MirrorPods } from './pods/mirror-pods.js';
import { EventRecorder, nodeRef, podRef } from './events/recorder.js';
import type { AdmissionNode } from './admission/predicate.js';
import { composeAdmission, composeEviction } from './compose-eviction.js';
import { composeNodeShutdown } from './compose-node-shutdown.js';
import { firstPodUpdate, runOnce } from './run-once.js';
import { readMachineInfo } from './nodestatus/machine-info.js';
import { startOomWatcher } from './oom/oom-watcher.js';
import { swapIsOn } from './node-setup/swap.js';
import { memoryBackedVolumesWarning, tmpfsNoswapSupported } from './volume/tmpfs-noswap.js';
import { admissionNode as admissionNodeOf } from './nodestatus/node-object.js';
import type { NodeStatusManager } from './nodestatus/node-status-manager.js';
import { NodeInformer } from './nodestatus/node-informer.js';
import { stopPodsForShutdown } from './runtime/shutdown.js';
import { ProberManager } from './prober/prober-manager.js';
import { KubeletMetrics } from './metrics/kubelet-metrics.js';
import { registerPodCountMetrics } from './metrics/pod-count-metrics.js';
import { registerCpuManagerMetrics } from './metrics/cpu-manager-metrics.js';
import { registerMemoryManagerMetrics } from './metrics/memory-manager-metrics.js';
import { podUserNamespaceOptions } from './userns/user-namespace-manager.js';
import { registerLogMetrics } from './metrics/log-metrics.js';
import { instrumentKubeClient } from './metrics/instrument.js';
import type { MachineInfo } from './nodestatus/machine-info.js';

export { adoptRuntimeCgroupDriver, loadEmbeddedRuntime, sandboxImageFromInfo } from './compose-runtime.js';
export type { Agent, AgentConfig } from './agent-config.js';
export { registerCertificateMetrics } from './metrics/certificate-metrics.js';
import type { Agent, AgentConfig } from './agent-config.js';
import { registerDevicePluginMetrics } from './metrics/device-plugin-metrics.js';
import { registerResizeMetrics } from './metrics/resize-metrics.js';
import { registerCredentialProviderMetrics } from './metrics/credential-provider-metrics.js';
import { registerDraClaimsInUse, registerDraMetrics } from './metrics/dra-metrics.js';
import { podSandboxResources } from './runtime/sandbox-config.js';

/** Builds the agent; does no I/O until `start`. */
export function composeAgent(
  cfg: AgentConfig,
  deps: { logger: Logger; clock: Clock; runtime?: CriRuntime; embedded?: EmbeddedRuntime; api?: KubeClient },
): Agent {
  const { logger, clock } = deps;
  // The wiring's cycles, each bound where its part is made (later.ts).
  const theVolumes = later<Pick<ReturnType<typeof composeVolumes>, 'volumes' | 'volumeStats'>>('volume manager');
  const theSyncLoop = later<SyncLoop>('sync loop');
  const theStatusSync = later<ReturnType<typeof composeStatusSync> | undefined>('status sync');
  const theEviction = later<ReturnType<typeof composeEviction>>('eviction manager');
  let pleg: GenericPleg | undefined;
  const metrics = new KubeletMetrics({
    nodeName: cfg.nodeName,
    running: { pods: () => pleg?.runningCounts().pods ?? 0, containers: () => pleg?.runningCounts().containers ?? {} },
    claims: () => theVolumes.get().volumeStats.claims(),
    volumes: () => theVolumes.get().volumes.volumeCounts(),
    logger,
    userNamespacesSupport: cfg.userNamespacesSupport,
    criLosingSupport: cfg.criLosingSupport,
  });
  const api = deps.api ? instrumentKubeClient(deps.api, metrics) : undefined;
  const { runtime, processRuntime } = composeRuntime(cfg, {
    metrics,
    given: deps.runtime,
    embedded: deps.embedded,
    logger,
  });

  const sources = composeSources(cfg, {
    api,
    logger,
    clock,
    onWatch: (pods) => metrics.podStartup.observedOnWatch(pods),
  });
  const events = new EventRecorder({
    client: api?.unthrottled(),
    nodeName: cfg.nodeName,
    clock,
    logger,
    qps: cfg.eventRecordQPS,
    burst: cfg.eventBurst,
  });
  let admissionNode: AdmissionNode | undefined;
  let nodeStatus: NodeStatusManager | undefined;
  // The pod CIDRs the runtime is told: the config's at start, the Node's as soon as the node informer sees them.
  const podCidr = new PodCidr({ runtime: runtime.runtime, logger });
  const nodeInformer = api
    ? new NodeInformer({
        client: api,
        nodeName: cfg.nodeName,
        clock,
        logger,
        onPodCIDRs: (cidrs) => void podCidr.update(cidrs.join(',')),
      })
    : undefined;

  const podConfig = new PodConfig({ sources, logger, clock });
  // Runonce mode runs the pods of the sources' first update (run-once.ts): heard from before the sources start.
  const firstUpdate = cfg.runOnce ? firstPodUpdate((fn) => podConfig.onUpdate(fn)) : undefined;
  const podManager = new PodManager();
  const statusManager = new StatusManager();
  const reasons = new ReasonCache();
  const backoff = new BackoffTable(containerBackoffPolicyWith(cfg.maxContainerRestartPeriodMs));
  const workQueue = new WorkQueue(clock);
  const runtimeManager = new RuntimeManager(runtime.runtime);
  const images = composeImages(cfg, {
    images: runtime.images,
    clock,
    events,
    registry: !processRuntime,
    pullTimes: metrics.imagePulls,
    requests: metrics.imageRequests,
  });
  const pullRecords = images.pullRecords;
  if (pullRecords) metrics.registerPullRecords(() => pullRecords.countsOnDisk());
  // Device plugins (upstream's device manager): their resources, and the devices a pod's containers get.
  const devices: DeviceManager = new DeviceManager({
    dir: join(cfg.rootDir, 'device-plugins'),
    logger,
    clock,
    metrics: registerDevicePluginMetrics(metrics),
    // A device's health reaches the statuses of the pods holding devices (allocatedResourcesStatus).
    onChange: () => {
      for (const uid of devices.podsWithDevices()) workQueue.enqueue(uid, clock.now());
    },
  });
  const resourceManagers = composeResourceManagers(cfg, {
    runtime: runtime.runtime,
    devices,
    activePods: () => theSyncLoop.get().activePods(),
    sourcesSeen: () => podConfig.allSourcesSeen(),
    clock,
    logger,
  });
  registerCpuManagerMetrics(metrics, resourceManagers.podCpus, resourceManagers.topologyAdmissionDuration);
  registerMemoryManagerMetrics(metrics, resourceManagers.podMemory);
  const observeCgroup = metrics.observeCgroup;
  // What the node is (its memory, huge page sizes, swap), read once for everything that needs it.
  const node = nodeFacts(cfg, { exclusiveCpus: resourceManagers.exclusiveCpus });
  const { podCgroups, cgroupNaming, nodeCredentials, loadCredentialProviders } = composeNodeResources(cfg, {
    hugePageSizesKb: node.resources.hugePageSizesKb ?? [],
    criEndpoint: !processRuntime && !deps.runtime,
    logger,
    activePods: () => podManager.getPods(),
    exclusiveCpus: resourceManagers.exclusiveCpus,
    observeCgroup,
    api,
    clock,
    credentialProviderMetrics: cfg.imageCredentialProvider ? registerCredentialProviderMetrics(metrics) : undefined,
  });
  const runtimeState = new RuntimeState({ runtime: runtime.runtime, clock, logger, periodMs: 5000 });
  const nodeAllocatable = () => admissionNode?.allocatable;
  // Dynamic Resource Allocation: drivers register through the plugin watcher; claims are prepared before containers
  // start.
  const dra = new DraManager({
    rootDir: cfg.rootDir,
    client: api,
    metrics: registerDraMetrics(metrics),
    // A claimed device's health reaches the statuses of the pods holding it (allocatedResourcesStatus).
    onHealthChange: (uids) => {
      for (const uid of uids) workQueue.enqueue(uid, clock.now());
    },
    // Only the devices' health timeouts read it: waits, on the monotonic clock.
    now: () => clock.monotonic(),
    logger,
  });
  registerDraClaimsInUse(metrics, dra);
  // The pods' user namespace ranges, released as their directories go (with their volumes).
  const userNamespaces = composeUserNamespaces(cfg, logger);
  const {
    volumes,
    volumeStats,
    objects,
    start: startVolumes,
  } = composeVolumes(cfg, {
    api,
    logger,
    clock,
    events,
    nodeAllocatable,
    metrics,
    draHandler: dra.handler,
    onPodRemoved: (uid) => userNamespaces?.release(uid),
    nodeObjectTtlMs: () => nodeInformer?.objectTtlMs(),
    onObjectChange: (uids) => {
      for (const uid of uids) workQueue.enqueue(uid, clock.now());
    },
  });
  theVolumes.set({ volumes, volumeStats });
  const runtimeClasses = composeRuntimeClasses(objects, runtimeState, cfg.userNamespacesSupport);
  const hookCounters = metrics.hookCounters;
  const executor = new PodActionExecutor({
    runtime: runtime.runtime,
    counters: metrics.startCounters,
    initContainerTimes: {
      started: (uid, atMs) => metrics.podStartup.initContainerStarted(uid, atMs),
      finished: (uid, atMs) => metrics.podStartup.initContainerFinished(uid, atMs),
    },
    imageVolumeCounters: metrics.imageVolumeCounters,
    hookCounters,
    images,
    backoff,
    clock,
    networkError: () => runtimeState.networkError(),
    events,
    nodeAllocatable,
    objects,
    ...runtimeClasses,
    logger,
    node,
    podCgroups,
    nodeCredentials,
    userNamespace: userNamespaces && ((pod) => podUserNamespaceOptions(userNamespaces.mappingsFor(pod.metadata.uid!))),
    cpusets: resourceManagers.cpusets,
    cpusetMems: resourceManagers.podMemory.cpusetMems,
    devices,
    dra,
  });
  const cgroupFsRoot = processRuntime ? '' : '/sys/fs/cgroup';
  const mirrors = api
    ? new MirrorPods({ client: api, podManager, nodeName: cfg.nodeName, nodeUid: () => nodeStatus?.nodeUid(), logger })
    : undefined;
  pleg = new GenericPleg({
    listAll: () => runtimeManager.listAll(),
    clock,
    logger,
    periodMs: 1000,
    onRelist: (ms, interval) => metrics.observeRelist(ms, interval, clock.now()),
  });
  const prober = new ProberManager({
    runtime: runtime.runtime,
    clock,
    logger,
    events,
    onChange: (uid) => workQueue.enqueue(uid, clock.now()),
  });
  // In-place resize and the allocation checkpoints (upstream's allocation manager).
  const allocation: AllocationManager = new AllocationManager({
    rootDir: cfg.rootDir,
    runtime: runtime.runtime,
    resources: node.resources,
    allocatable: () =>
      (nodeInformer && admissionNode ? nodeInformer.admissionNode(admissionNode) : admissionNode)?.allocatable,
    activePods: () => theSyncLoop.get().activePods(),
    podCgroups,
    sandboxResources: (pod) => podSandboxResources(pod, node.resources),
    events,
    metrics: registerResizeMetrics(metrics, () => allocation.resizeStates()),
    exclusive: {
      cpuStatic: cfg.cpuManager?.policy === 'static',
      memoryStatic: cfg.memoryManager?.policy === 'Static',
    },
    logger,
  });
  let runtimeName = 'process';
  const syncer = new PodSync({
    allocation,
    devices,
    dra,
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
    containerLogsDir: cfg.containerLogsDir,
    syncFrequencyMs: cfg.syncFrequencyMs,
    rootDir: cfg.rootDir,
    cgroupFsRoot,
    observeCgroup,
    cgroupNaming,
    images,
    pods: podManager,
    events,
    hookCounters,
    mirrors,
    volumes,
    objects,
    onRejected: (reason) => metrics.admissionRejections.inc({ reason }),
    observePodRelist: cfg.plegOnDemandRelist
      ? (seconds) => metrics.plegPodRelistDuration.observe(undefined, seconds)
      : undefined,
    onContainerTerminated: metrics.countTermination,
    prober,
    supportsRecursiveReadOnly: runtimeClasses.supportsRecursiveReadOnly,
    containerStopSignals: cfg.containerStopSignals,
  });
  const workers = new PodWorkers({
    syncer: timedSyncer(metrics, syncer, clock),
    logger,
    // The workers' times are their own waits (a start held for preempted pods): monotonic, never a timestamp.
    now: () => clock.monotonic(),
    setTimer: (fn, ms) => clock.setTimer(fn, ms),
    onStopped: () => theStatusSync.get()?.trigger(),
  });
  trackPodStartDuration({ statusManager, podManager, metrics, clock });
  const podCounts = registerPodCountMetrics(metrics, {
    desired: () => podManager.getPods(),
    workers: () => workers.states(),
    mirrors: !!api,
  });
  const nodeShutdown = composeNodeShutdown(cfg, {
    activePods: () => theSyncLoop.get().activePods(),
    workers,
    syncer,
    syncNodeStatus: () =>
      void nodeStatus
        ?.updateOnce()
        .catch((err: unknown) => logger.warn({ err: messageOf(err) }, 'node status update failed')),
    events,
    metrics,
    clock,
    logger,
  });
  const admitPod = composeAdmission(cfg, {
    eviction: () => theEviction.get(),
    nodeShutdown,
    node: () => nodeInformer?.admissionNode(admissionNode!) ?? admissionNode!,
    refreshNode: nodeInformer && (() => nodeInformer.refresh()),
    allocateResources: resourceManagers.admit,
    workers,
    syncer,
    events,
    metrics,
    logger,
  });
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
        containerLogsDir: cfg.containerLogsDir,
        statusManager,
        mirrors,
        volumes,
        userNamespaces,
        onOrphanedRuntimePod: () => metrics.orphanedRuntimePods.inc(),
        activePods: () => theSyncLoop.get().activePods(),
        onRestartedPod: podCounts.restarted,
        events,
      }),
    // The admitted pods as allocated: a resize not admitted (Deferred, Infeasible) holds what the pod has.
    admit: (pod, admitted) =>
      admitPod(
        pod,
        admitted.map((p) => allocation.effective(p)),
      ),
    onRejected: (pod, reason, message) => {
      metrics.admissionRejections.inc({ reason });
      devices.release(pod.metadata.uid!);
      const generation = pod.metadata.generation;
      statusManager.set(pod.metadata.uid!, {
        ...(generation ? { observedGeneration: generation } : {}),
        phase: 'Failed',
        reason,
        message: `Pod was rejected: ${message}`,
      });
      events.record(podRef(pod), 'Warning', reason, message);
    },
  });
  theSyncLoop.set(syncLoop);
  const statusSync = api
    ? composeStatusSync(api, { statusManager, podManager, workers, syncLoop, metrics, clock, logger })
    : undefined;
  theStatusSync.set(statusSync);
  const isActive = (uid: string) => !!podManager.getPodByUid(uid) || workers.uids().includes(uid);
  const { imageGc, gc, startLogRotation } = composeGc(cfg, {
    runtime,
    runtimeManager,
    volumes,
    cgroupFsRoot,
    cgroupNaming,
    metrics,
    pullRecords: images.pullRecords,
    isActive,
    isTerminated: (uid) => workers.stateOf(uid) === 'terminated',
    pods: () => podManager.getPods(),
    events,
    clock,
    logger,
  });
  const podOf = (uid: string) => podManager.getPodByUid(uid) ?? workers.podOf(uid);
  const collector = createStatsCollector({ cfg, runtime, embeddedRuntime: processRuntime, podOf, clock, logger });
  registerLogMetrics(metrics, () => collector.snapshot());
  const eviction = composeEviction(cfg, {
    collector,
    volumeStats,
    podManager,
    workers,
    syncer,
    gc,
    imageGc,
    events,
    metrics,
    clock,
    logger,
  });
  theEviction.set(eviction);
  let machineInfo: MachineInfo | undefined;
  const host = composeHost(cfg, {
    runtimeState,
    runtimeServesWebSocketV5: !!processRuntime,
    podManager,
    statusManager,
    runtimeManager,
    syncLoop,
    pleg,
    clock,
    collector,
    volumeStats,
    metrics,
    workers,
    probeCounts: () => prober.counts.values(),
    probeDurations: () => prober.durations.family(),
    machine: () => machineInfo,
  });
  const abort = new AbortController();
  // Every loop of the agent (pod workers, probers, syncs, heartbeats) waits on this one signal at once:
  // more than Node's 10 listeners is the design, not a leak (each removes its listener when done).
  setMaxListeners(0, abort.signal);

  return {
    host,
    metrics,
    cpus: resourceManagers.podCpus,
    memory: resourceManagers.podMemory,
    devices,
    dra,
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
    },
    async start() {
      nodeInformer?.start(abort.signal);
      if (processRuntime) await processRuntime.start();
      await loadCredentialProviders();
      const machine = await readMachineInfo(cfg.rootDir);
      machineInfo = machine;
      const swapWarning = memoryBackedVolumesWarning(await swapIsOn(), await tmpfsNoswapSupported(cfg.rootDir));
      if (swapWarning)
        events.record(nodeRef(cfg.nodeName), 'Warning', 'PossibleMemoryBackedVolumesOnDisk', swapWarning);
      startOomWatcher({
        rootDir: cfg.rootDir,
        bootID: machine.bootID,
        systemOom: (message) => events.record(nodeRef(cfg.nodeName), 'Warning', 'SystemOOM', message),
        signal: abort.signal,
        clock,
        logger,
      });
      admissionNode = admissionNodeOf(cfg.node, machine);
      await allocation.load();
      await dra.load();
      startDraReconcile(dra, {
        periodMs: cfg.draReconcilePeriodMs ?? 60_000,
        activeUids: () =>
          new Set(
            theSyncLoop
              .get()
              .activePods()
              .map((p) => p.metadata.uid!),
          ),
        sourcesSeen: () => podConfig.allSourcesSeen(),
        signal: abort.signal,
        clock,
        logger,
      });
      await devices
        .start()
        .catch((err: unknown) => logger.warn({ err: messageOf(err) }, 'device plugin registration not served'));
      const connected = await connectRuntime(runtime, cfg.containerRuntimeEndpoint, logger);
      await startNodeCgroups(podCgroups, cfg, machine, { signal: abort.signal, clock, logger, events });
      resourceManagers.start(abort.signal, machine);
      runtimeName = connected.name;
      await podCidr.update(cfg.podCIDR);
      await runtimeState.update();
      runtimeState.start({ signal: abort.signal });
      pleg.start({ signal: abort.signal });
      gc.start({ signal: abort.signal });
      startVolumes(abort.signal);
      collector.start({ signal: abort.signal });
      eviction.start({ signal: abort.signal });
      startLogRotation(abort.signal);
      // Runonce mode registers no Node and reports no status, as upstream's.
      if (api && !cfg.runOnce)
        nodeStatus = startClusterMembership(
          cfg,
          {
            client: api,
            machine,
            events,
            clock,
            logger,
            runtime,
            runtimeState,
            runtimeVersion: connected.version,
            statusSync: statusSync!,
            nodeInformer,
            podCidr,
            devices,
          },
          {
            pressure: () => eviction.conditions(),
            volumesInUse: () => volumes.volumesInUse(),
            shutdownStatus: () => nodeShutdown?.shutdownStatus(),
            startup: metrics.nodeStartup,
            signal: abort.signal,
          },
        );
      // Upstream starts it before the sync loop; a failure leaves the kubelet running without it.
      await nodeShutdown
        ?.start(abort.signal)
        .catch((err: unknown) => logger.error({ err: messageOf(err) }, 'Failed to start node shutdown manager'));
      // Pods are admitted against the Node the apiserver has (its labels, taints) once it was read.
      if (nodeInformer && !cfg.runOnce) await Promise.race([nodeInformer.synced, sleep(3000, abort.signal, clock)]);
      syncLoop.start({ signal: abort.signal });
      podConfig.start({ signal: abort.signal });
    },
    async runOnce() {
      if (!firstUpdate) throw new Error('the agent was not composed for runonce mode');
      await runOnce({
        firstUpdate,
        status: (uid) => statusManager.get(uid),
        runtimeStatus: (pod) =>
          runtimeManager.getPodStatus(pod.metadata.uid!, pod.metadata.name!, pod.metadata.namespace!),
        onStatusChange: (fn) => statusManager.onChange(fn),
        clock,
        logger,
      });
    },
    async stop(o = {}) {
      abort.abort();
      await events.stop(2000);
      await Promise.race([workers.whenIdle(), new Promise((r) => setTimeout(r, 5000))]);
      // The in-process runtime's containers die with the kubelet: stop each pod with its own grace
      // period (bounded as upstream's graceful node shutdown when shutdownGracePeriod is set). On an external runtime
      // (containerd) pods keep running across a kubelet restart, as upstream.
      if (processRuntime) {
        await stopPodsForShutdown({ runtime: runtime.runtime, runtimeManager, podManager, logger, ...o });
        await processRuntime.shutdown(0);
      }
      await devices.stop();
      dra.close();
      runtime.close?.();
    },
  };
}

/**
 * Upstream's DRA reconcile loop: every draManagerReconcilePeriod, once every pod source has
 * delivered its pods (until then "not active" is not "gone"), the claims of pods no longer active
 * are unprepared.
 */
function startDraReconcile(
  dra: DraManager,
  o: {
    periodMs: number;
    activeUids: () => ReadonlySet<string>;
    sourcesSeen: () => boolean;
    signal: AbortSignal;
    clock: Clock;
    logger: Logger;
  },
): void {
  periodically(() => (o.sourcesSeen() ? dra.reconcile(o.activeUids()) : undefined), {
    periodMs: o.periodMs,
    signal: o.signal,
    clock: o.clock,
    onError: (err) => o.logger.warn({ err: messageOf(err) }, 'DRA reconcile failed'),
  });
}
