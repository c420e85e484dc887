/**
 * The apiserver pod source: list+watch of the pods bound to this node
 * (`fieldSelector=spec.nodeName=<node>`) through the reflector; every change hands PodConfig the
 * full set, as upstream's NewSourceApiserver does. Mirror pods come through too: the sync loop
 * routes them to the pod manager's mirror index, never to a worker.
 */
import type { Pod } from '../../api/types.js';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { KubeClient } from '../../lib/kube-client.js';
import { ListWatch } from '../../lib/list-watch.js';
import type { PodSource } from './types.js';

/** What the source needs. */
export interface ApiserverSourceDeps {
  client: KubeClient;
  nodeName: string;
  clock: Clock;
  logger: Logger;
  watchdogMs?: number;
  /** Sees every set of pods the watch delivers, before PodConfig (the pod startup SLI tracker). */
  onWatch?(pods: Pod[]): void;
}

/** PodSource over the apiserver. */
export class ApiserverSource implements PodSource {
  readonly name = 'api';
  /** The reflector (for tests). */
  readonly reflector: ListWatch<Pod & { metadata: { name: string } }>;

  constructor(private readonly deps: ApiserverSourceDeps) {
    this.reflector = new ListWatch({
      client: deps.client,
      path: '/api/v1/pods',
      fieldSelector: `spec.nodeName=${deps.nodeName}`,
      clock: deps.clock,
      logger: deps.logger,
      watchdogMs: deps.watchdogMs,
    });
  }

  /** Starts the reflector; every change emits the full set of pods bound here. */
  start({ signal, emit }: { signal: AbortSignal; emit: (pods: Pod[]) => void }): void {
    this.reflector.start({
      signal,
      onSnapshot: (pods) => {
        const all = pods.map((p) => ({
          ...p,
          metadata: { ...p.metadata, namespace: p.metadata.namespace ?? 'default' },
        }));
        this.deps.onWatch?.(all);
        emit(all);
      },
    });
  }
}
