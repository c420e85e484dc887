/**
 * The pod CIDRs the container runtime was told (upstream's runtimeState.podCIDR and updatePodCIDR): the Node's
 * `spec.podCIDRs` (comma-joined), or in standalone mode the configuration's `podCIDR`, reach the runtime through CRI
 * UpdateRuntimeConfig whenever they differ from what it was last told. A runtime's network set-up may depend on them:
 * containerd writes its CNI configuration from its template only once it knows them, and reports the network not
 * ready until then. A runtime that refuses is told again at the next try.
 */
import type { RuntimeService } from '../../cri/services.js';
import type { Logger } from '../../lib/logger.js';
import { messageOf } from '../../lib/errors.js';

export class PodCidr {
  private current = '';
  /** Updates run one at a time (the node status loop and a change the node informer saw may ask at once). */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: { runtime: Pick<RuntimeService, 'updateRuntimeConfig'>; logger: Logger }) {}

  /** The pod CIDRs the runtime has been told ("" until it has). */
  value(): string {
    return this.current;
  }

  /**
   * Tells the runtime `cidrs` unless it already has them. Whether they changed: true also when the runtime refused
   * them (upstream reports the change then too, and tries again next time).
   */
  update(cidrs: string): Promise<boolean> {
    const next = this.queue.then(() => this.apply(cidrs));
    this.queue = next.catch(() => {});
    return next;
  }

  private async apply(cidrs: string): Promise<boolean> {
    if (cidrs === this.current) return false;
    try {
      await this.deps.runtime.updateRuntimeConfig?.({ network_config: { pod_cidr: cidrs } });
    } catch (err) {
      this.deps.logger.warn({ err: messageOf(err), podCIDR: cidrs }, 'failed to update pod CIDR');
      return true;
    }
    this.deps.logger.info({ originalPodCIDR: this.current, newPodCIDR: cidrs }, 'Updating Pod CIDR');
    this.current = cidrs;
    return true;
  }
}
