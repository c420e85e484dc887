/**
 * The kubelet's own Node as the apiserver has it (upstream's node informer, a list+watch of
 * `metadata.name=<node>`): admission reads its labels, taints and extended resources (upstream
 * getNodeAnyWay), so a label an operator adds (`kubectl label node`), a NoExecute taint or an
 * advertised `example.com/dongle` counts for the pods that follow, as it does for the scheduler;
 * the node status sync keeps what others put in its capacity. Until the Node is known, admission uses the Node the
 * kubelet registers (its configured labels and taints).
 */
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { KubeClient } from '../../lib/kube-client.js';
import { ListWatch } from '../../lib/list-watch.js';
import type { AdmissionNode } from '../admission/predicate.js';
import { isExtendedResource } from '../admission/extended-resources.js';
import { parseQuantity } from '../../api/quantity.js';
import { goAtoi } from '../../lib/go-strconv.js';

interface NodeObject {
  metadata: {
    name: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
  };
  spec?: { taints?: AdmissionNode['taints']; unschedulable?: boolean; podCIDRs?: string[] };
  status?: { capacity?: Record<string, string>; allocatable?: Record<string, string> };
}

/** Watches this kubelet's Node. */
export class NodeInformer {
  private node: NodeObject | undefined;
  private syncedNow!: () => void;
  /** Resolves once the Node was read (or found absent) the first time, or the apiserver could not be reached. */
  readonly synced = new Promise<void>((r) => (this.syncedNow = r));
  private readonly reflector: ListWatch<NodeObject>;
  private readonly onPodCIDRs: ((cidrs: readonly string[]) => void) | undefined;
  private readonly client: KubeClient;
  private readonly nodeName: string;

  constructor(d: {
    client: KubeClient;
    nodeName: string;
    clock: Clock;
    logger: Logger;
    /** Told the Node's pod CIDRs whenever it is read with some (upstream's fast pod CIDR update at start). */
    onPodCIDRs?: (cidrs: readonly string[]) => void;
  }) {
    this.onPodCIDRs = d.onPodCIDRs;
    this.client = d.client;
    this.nodeName = d.nodeName;
    this.reflector = new ListWatch<NodeObject>({
      client: d.client,
      path: '/api/v1/nodes',
      fieldSelector: `metadata.name=${d.nodeName}`,
      clock: d.clock,
      logger: d.logger,
      // An apiserver not up yet (a control plane the kubelet itself starts) holds nothing back.
      onFailure: () => this.syncedNow(),
    });
  }

  /** Runs until `signal` aborts. */
  start(signal: AbortSignal): void {
    this.reflector.start({
      signal,
      onSnapshot: (nodes) => {
        // A Node read since (refresh) stays until the watch has caught up with it.
        if (!nodes[0] || !this.node || !isOlder(nodes[0], this.node)) this.node = nodes[0];
        this.syncedNow();
        const cidrs = this.podCIDRs();
        if (cidrs?.length) this.onPodCIDRs?.(cidrs);
      },
    });
  }

  /**
   * Reads the Node from the apiserver now, past the watch (upstream's node cache since v1.35,
   * kubernetes/kubernetes#134445: a pod refused for node affinity may have been scheduled on labels the watch has not
   * brought yet). Resolves false when the apiserver did not answer with it.
   */
  async refresh(): Promise<boolean> {
    const r = await this.client
      .request<NodeObject>({ method: 'GET', path: `/api/v1/nodes/${encodeURIComponent(this.nodeName)}` })
      .catch(() => undefined);
    if (r?.status !== 200 || !r.body?.metadata) return false;
    if (!this.node || !isOlder(r.body, this.node)) this.node = r.body;
    return true;
  }

  /** `registered` with the labels, taints and extended resources the apiserver has for this Node, once known. */
  admissionNode(registered: AdmissionNode): AdmissionNode {
    if (!this.node) return registered;
    const extended: Record<string, number> = {};
    for (const [k, v] of Object.entries(this.node.status?.allocatable ?? {}))
      if (isExtendedResource(k)) extended[k] = parseQuantity(v) ?? 0;
    return { ...registered, labels: this.node.metadata.labels ?? {}, taints: this.node.spec?.taints ?? [], extended };
  }

  /**
   * The TTL the TTL controller gives objects the kubelet caches (`node.alpha.kubernetes.io/ttl`, seconds, in ms), when
   * the Node has one (upstream GetObjectTTLFromNodeFunc: an annotation Atoi cannot read counts as none).
   */
  objectTtlMs(): number | undefined {
    const value = this.node?.metadata.annotations?.['node.alpha.kubernetes.io/ttl'];
    if (value === undefined) return undefined;
    try {
      return goAtoi(value) * 1000;
    } catch {
      return undefined;
    }
  }

  /** Whether the Node is cordoned (`spec.unschedulable`), once known. */
  unschedulable(): boolean | undefined {
    return this.node ? this.node.spec?.unschedulable === true : undefined;
  }

  /** The Node's `spec.podCIDRs` (the node IPAM controller's), once known. */
  podCIDRs(): readonly string[] | undefined {
    return this.node?.spec?.podCIDRs;
  }

  /** The Node's status as the apiserver has it (capacity and allocatable), once known. */
  status(): NodeObject['status'] | undefined {
    return this.node?.status;
  }
}

/**
 * Whether `a` is an older version of the Node than `b`, by resourceVersion where both are the decimal counters an etcd
 * apiserver gives (anything else is not compared: not older).
 */
function isOlder(a: NodeObject, b: NodeObject): boolean {
  const [x, y] = [a.metadata.resourceVersion, b.metadata.resourceVersion];
  if (!x || !y || !/^\d+$/.test(x) || !/^\d+$/.test(y)) return false;
  return BigInt(x) < BigInt(y);
}
