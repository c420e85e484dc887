/**
 * The runtime's health as the kubelet tracks it (upstream runtimeState + updateRuntimeUp):
 * CRI Status polled every few seconds; RuntimeReady=false or an unreachable runtime is a runtime
 * error (/healthz, later node readiness), NetworkReady=false a network error (pods that are not
 * hostNetwork wait). The messages are upstream's. The answer's runtime handlers go to the node
 * status (status.runtimeHandlers).
 */
import type { RuntimeService } from '../../cri/services.js';
import type * as cri from '../../cri/types.js';
import type { Clock } from '../../lib/clock.js';
import { periodically } from '../../lib/periodically.js';
import type { Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';

/** Upstream's condition String(): "NetworkReady=false reason:X message:Y". */
export function formatCondition(c: cri.RuntimeCondition): string {
  return `${c.type}=${c.status} reason:${c.reason ?? ''} message:${c.message ?? ''}`;
}

/** The errors a Status response implies (pure). */
export function runtimeErrors(status: cri.StatusResponse['status'] | undefined): {
  runtime?: string;
  network?: string;
} {
  const conds = status?.conditions ?? [];
  const rt = conds.find((c) => c.type === 'RuntimeReady');
  const net = conds.find((c) => c.type === 'NetworkReady');
  return {
    runtime:
      !rt || !rt.status
        ? `container runtime not ready: ${rt ? formatCondition(rt) : 'RuntimeReady missing'}`
        : undefined,
    network:
      !net || !net.status
        ? `container runtime network not ready: ${net ? formatCondition(net) : 'NetworkReady missing'}`
        : undefined,
  };
}

/** A runtime handler as the node status reports it (upstream NodeRuntimeHandler). */
export interface NodeRuntimeHandler {
  name: string;
  features: { recursiveReadOnlyMounts: boolean; userNamespaces: boolean };
}

/**
 * The handlers a Status response lists, by name as v1.36 sorts them (kubernetes/kubernetes#135358: a runtime that
 * lists them from a map would otherwise have every new order written to the Node). Pure.
 */
export function runtimeHandlers(res: Pick<cri.StatusResponse, 'runtime_handlers'>): NodeRuntimeHandler[] {
  const sorted = [...(res.runtime_handlers ?? [])].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return sorted.map((h) => ({
    name: h.name,
    features: {
      recursiveReadOnlyMounts: !!h.features?.recursive_read_only_mounts,
      userNamespaces: !!h.features?.user_namespaces,
    },
  }));
}

/** node.status.features: what the runtime supports that pods may ask for. */
export interface NodeFeatures {
  supplementalGroupsPolicy: boolean;
}

/** The features a Status response names; undefined when it names none (a runtime before CRI features). Pure. */
export function runtimeFeatures(res: Pick<cri.StatusResponse, 'features'>): NodeFeatures | undefined {
  return res.features ? { supplementalGroupsPolicy: !!res.features.supplemental_groups_policy } : undefined;
}

/** What the tracker needs. */
export interface RuntimeStateDeps {
  runtime: RuntimeService;
  clock: Clock;
  logger: Logger;
  periodMs: number;
}

/** Polls CRI Status; the last answer decides. */
export class RuntimeState {
  private runtime?: string = 'container runtime status check may not have completed yet';
  private network?: string = 'container runtime network status check may not have completed yet';
  private handlers: NodeRuntimeHandler[] = [];
  private features?: NodeFeatures;
  /** Polls started so far: an answer that comes after a later poll's does not overwrite it. */
  private polls = 0;
  private answered = 0;
  constructor(private readonly deps: RuntimeStateDeps) {}

  /** One poll (also used once before the loops start, and by the node status at start: see node-status-manager). */
  async update(): Promise<void> {
    const poll = ++this.polls;
    let next: { runtime?: string; network?: string };
    try {
      const res = await this.deps.runtime.status(false);
      if (poll < this.answered) return;
      next = runtimeErrors(res.status);
      this.handlers = runtimeHandlers(res);
      this.features = runtimeFeatures(res);
    } catch (err) {
      if (poll < this.answered) return;
      next = { runtime: `container runtime is down: ${messageOf(err)}`, network: 'container runtime is down' };
    }
    this.answered = poll;
    if (next.runtime !== this.runtime || next.network !== this.network) {
      if (next.runtime || next.network)
        this.deps.logger.warn({ runtime: next.runtime, network: next.network }, 'container runtime not ready');
      else this.deps.logger.info('container runtime ready');
    }
    this.runtime = next.runtime;
    this.network = next.network;
  }

  start({ signal }: { signal: AbortSignal }): void {
    periodically(() => this.update(), {
      periodMs: this.deps.periodMs,
      signal,
      clock: this.deps.clock,
      onError: (err) => this.deps.logger.warn({ err: messageOf(err) }, 'container runtime status check failed'),
    });
  }

  /** Why the runtime is not usable, if it is not. */
  runtimeError(): string | undefined {
    return this.runtime;
  }
  /** The runtime's handlers as its last Status answer listed them (upstream runtimeState.runtimeHandlers). */
  runtimeHandlers(): NodeRuntimeHandler[] {
    return this.handlers;
  }
  /** What the runtime's last Status answer said it supports (node.status.features), when it said. */
  runtimeFeatures(): NodeFeatures | undefined {
    return this.features;
  }
  /** Why pod networking is not ready, if it is not. */
  networkError(): string | undefined {
    return this.network;
  }
}
