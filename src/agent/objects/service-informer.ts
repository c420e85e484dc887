/**
 * Every Service of the cluster, kept by a list+watch (upstream's service informer, which the
 * kubelet reads for the pods' service-link environment variables): a pod start reads the cache
 * instead of listing its namespace's Services, which in a namespace of thousands cost a full
 * LIST for every start. As upstream, until the first list has arrived the environment cannot be
 * made (the container waits as CreateContainerConfigError and the sync tries again).
 */
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { KubeClient } from '../../lib/kube-client.js';
import { ListWatch } from '../../lib/list-watch.js';
import type { ServiceLike } from '../runtime/service-env.js';

type ServiceObject = ServiceLike & { metadata: { name: string; namespace?: string; resourceVersion?: string } };

/** Watches all Services. */
export class ServiceInformer {
  private byNamespace = new Map<string, ServiceObject[]>();
  private synced = false;
  private readonly reflector: ListWatch<ServiceObject>;

  constructor(d: { client: KubeClient; clock: Clock; logger: Logger }) {
    this.reflector = new ListWatch<ServiceObject>({
      client: d.client,
      path: '/api/v1/services',
      clock: d.clock,
      logger: d.logger,
    });
  }

  /** Runs until `signal` aborts. */
  start(signal: AbortSignal): void {
    this.reflector.start({
      signal,
      onSnapshot: (services) => {
        const byNamespace = new Map<string, ServiceObject[]>();
        for (const s of services) {
          const ns = s.metadata.namespace ?? '';
          (byNamespace.get(ns) ?? byNamespace.set(ns, []).get(ns)!).push(s);
        }
        this.byNamespace = byNamespace;
        this.synced = true;
      },
    });
  }

  /** The Services of `namespace`; throws until the first list arrived (upstream's message). */
  inNamespace(namespace: string): ServiceLike[] {
    if (!this.synced) throw new Error('services have not yet been read at least once, cannot construct envvars');
    return this.byNamespace.get(namespace) ?? [];
  }

  /** A Service by namespace and name (undefined when there is none); throws until the first list arrived. */
  get(namespace: string, name: string): ServiceLike | undefined {
    return this.inNamespace(namespace).find((s) => s.metadata.name === name);
  }
}
