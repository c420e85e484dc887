/**
 * Wiring of graceful node shutdown (nodeshutdown/): systemd-logind through its tools, the pods killed through the pod
 * workers with upstream's status, the state file under the root directory and the shutdown gauges. Undefined when the
 * configuration asks for no shutdown grace period (the gauges are registered all the same, as upstream's).
 */
import type { Pod } from '../api/types.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { AgentConfig } from './agent-config.js';
import { nodeRef, type EventSink } from './events/recorder.js';
import type { KubeletMetrics } from './metrics/kubelet-metrics.js';
import { registerShutdownMetrics } from './metrics/shutdown-metrics.js';
import { systemdLogind, type Logind } from './nodeshutdown/logind.js';
import { NodeShutdownManager } from './nodeshutdown/node-shutdown-manager.js';
import { ShutdownStateFile } from './nodeshutdown/shutdown-state.js';
import type { PodSync } from './sync/pod-sync.js';
import type { PodWorkers } from './sync/pod-workers.js';

/** logind's drop-in directory; TSKUBELET_LOGIND_CONF_DIR moves it (tests, whose logind reads another). */
const logindConfigDir = (): string | undefined => process.env.TSKUBELET_LOGIND_CONF_DIR || undefined;

export function composeNodeShutdown(
  cfg: Pick<AgentConfig, 'nodeShutdown' | 'gracefulShutdownMetrics' | 'nodeName' | 'rootDir'>,
  o: {
    activePods: () => Pod[];
    workers: PodWorkers;
    syncer: PodSync;
    /** Reports the node status now. */
    syncNodeStatus: () => void;
    events: EventSink;
    metrics: KubeletMetrics;
    clock: Clock;
    logger: Logger;
    logind?: Logind;
  },
): NodeShutdownManager | undefined {
  // Upstream's gauges exist with the gates on, 0 until a shutdown is recorded.
  const gauges = cfg.gracefulShutdownMetrics ? registerShutdownMetrics(o.metrics) : undefined;
  if (!cfg.nodeShutdown) return undefined;
  const { workers, syncer } = o;
  return new NodeShutdownManager({
    groups: cfg.nodeShutdown.groups,
    logind: o.logind ?? systemdLogind(logindConfigDir()),
    activePods: o.activePods,
    killPod: (pod, graceSeconds, verdict) => {
      syncer.disrupted(pod.metadata.uid!, { ...verdict, disruption: verdict.message });
      workers.update({ pod, kind: 'kill', gracePeriodSeconds: graceSeconds });
    },
    // Upstream waits for the group's kills and then for their volumes to be unmounted (a CSI driver in a later group
    // gets to unmount first): the worker's terminated step, which releases them, has finished.
    stopped: (uid) => workers.stateOf(uid) === undefined || workers.isFinished(uid),
    syncNodeStatus: o.syncNodeStatus,
    events: o.events,
    node: nodeRef(cfg.nodeName),
    record:
      cfg.nodeShutdown.recordTimes && gauges ? { state: new ShutdownStateFile(cfg.rootDir), ...gauges } : undefined,
    clock: o.clock,
    logger: o.logger,
  });
}
