/**
 * The node Lease heartbeat (upstream component-helpers lease controller): a
 * `coordination.k8s.io/v1` Lease named after the node in `kube-node-lease`, holder = node,
 * leaseDurationSeconds from config, owner reference to the Node once its UID is known. Renewed
 * every duration/4 (10 s by default) with an update carrying the last resourceVersion (a 409
 * means someone else wrote it: read it again). Failures retry with backoff from 200 ms to 7 s.
 */
import { goDuration } from '../../lib/go-format.js';
import type { Clock } from '../../lib/clock.js';
import { sleep } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { apiError, type KubeClient } from '../../lib/kube-client.js';
import { messageOf } from '../../lib/errors.js';

/** A Lease as this controller reads and writes it (other fields kept as they come). */
interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata: { name?: string; namespace?: string; ownerReferences?: unknown[]; [k: string]: unknown };
  spec: { [k: string]: unknown };
}

/** What the controller needs. */
export interface LeaseControllerDeps {
  client: KubeClient;
  nodeName: string;
  durationSeconds: number;
  nodeUid: () => string | undefined;
  clock: Clock;
  logger: Logger;
}

/** MicroTime: RFC3339 with microseconds. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

const NAMESPACE = 'kube-node-lease';

/** Keeps the node's Lease renewed. */
export class LeaseController {
  private lease: Lease | undefined;
  /** How many renewals succeeded (tests). */
  renewals = 0;

  constructor(private readonly deps: LeaseControllerDeps) {}

  private desired(base: Lease | undefined): Lease {
    const uid = this.deps.nodeUid();
    const metadata: Lease['metadata'] = { ...base?.metadata, name: this.deps.nodeName, namespace: NAMESPACE };
    if (uid) metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: this.deps.nodeName, uid }];
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata,
      spec: {
        ...base?.spec,
        holderIdentity: this.deps.nodeName,
        leaseDurationSeconds: this.deps.durationSeconds,
        renewTime: microTime(this.deps.clock.now()),
      },
    };
  }

  /** Whether the last renewal failed while it made sure the Lease exists (read or create), not while it updated it. */
  private ensuring = false;

  /** One renewal (create when absent). */
  async renew(signal?: AbortSignal): Promise<void> {
    const { client } = this.deps;
    const path = `/apis/coordination.k8s.io/v1/namespaces/${NAMESPACE}/leases`;
    this.ensuring = !this.lease;
    if (!this.lease) {
      const r = await client.request<Lease>({ path: `${path}/${this.deps.nodeName}`, signal });
      if (r.status === 200) this.lease = r.body;
      else if (r.status === 404) {
        const c = await client.request<Lease>({ method: 'POST', path, body: this.desired(undefined), signal });
        if (c.status !== 201) throw apiError('creating lease', c);
        this.lease = c.body;
        this.renewals++;
        return;
      } else throw apiError('reading lease', r);
    }
    this.ensuring = false;
    const u = await client.request<Lease>({
      method: 'PUT',
      path: `${path}/${this.deps.nodeName}`,
      body: this.desired(this.lease),
      signal,
    });
    if (u.status === 200) {
      this.lease = u.body;
      this.renewals++;
      return;
    }
    this.lease = undefined;
    throw apiError('renewing lease', u);
  }

  /** Starts the renew loop. */
  start({ signal }: { signal: AbortSignal }): void {
    const interval = (this.deps.durationSeconds * 1000) / 4;
    void (async () => {
      let delay = 200;
      while (!signal.aborted) {
        try {
          await this.renew(signal);
          delay = 200;
          await sleep(interval, signal, this.deps.clock);
        } catch (err) {
          if (signal.aborted) return;
          // Upstream's lease controller's lines: one for the Lease it could not read or create, one for an update.
          if (this.ensuring)
            this.deps.logger.error(
              { err: messageOf(err), interval: goDuration(delay) },
              'Failed to ensure lease exists, will retry',
            );
          else this.deps.logger.error({ err: messageOf(err) }, 'Failed to update lease');
          await sleep(delay, signal, this.deps.clock);
          delay = Math.min(delay * 2, 7000);
        }
      }
    })();
  }
}
