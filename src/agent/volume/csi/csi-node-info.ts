/**
 * What the cluster learns of the node's CSI drivers (upstream nodeinfomanager):
 * - the CSINode object named after the node (owned by the Node), created at start with no
 *   drivers, then one entry per registered driver: its node ID, topology keys and volume limit;
 *   annotated with the in-tree plugins migrated to CSI, as upstream's;
 * - the Node's `csi.volume.kubernetes.io/nodeid` annotation (driver → node ID, JSON) and the
 *   driver's topology segments as Node labels.
 * Updates are read-modify-write with the object's resourceVersion, retried on 409 Conflict.
 * The entry computations are pure (exported for the tests).
 */
import type { KubeClient } from '../../../lib/kube-client.js';
import { apiError } from '../../../lib/kube-client.js';
import { deepEqual } from '../../../lib/deep-equal.js';

/** The Node annotation listing each driver's node ID. */
export const NODE_ID_ANNOTATION = 'csi.volume.kubernetes.io/nodeid';

/** The CSINode annotation naming the in-tree volume plugins whose volumes CSI drivers serve (upstream's key). */
export const MIGRATED_PLUGINS_ANNOTATION = 'storage.alpha.kubernetes.io/migrated-plugins';

/**
 * Its value, as a v1.36 kubelet writes it (setMigrationAnnotation): every in-tree plugin it knows is migrated to CSI
 * in v1.36, sorted and comma-joined. The scheduler counts such volumes against their CSI driver's limit.
 */
export const MIGRATED_PLUGINS = [
  'kubernetes.io/aws-ebs',
  'kubernetes.io/azure-disk',
  'kubernetes.io/azure-file',
  'kubernetes.io/cinder',
  'kubernetes.io/gce-pd',
  'kubernetes.io/portworx-volume',
  'kubernetes.io/vsphere-volume',
].join(',');

/** One CSINode driver entry (storage.k8s.io/v1 CSINodeDriver). */
export interface CsiNodeDriver {
  name: string;
  nodeID: string;
  topologyKeys: string[] | null;
  allocatable?: { count: number };
}

/** The drivers after installing `d` (replacing an entry of the same name), or removing `name`. */
export function driversWith(
  drivers: readonly CsiNodeDriver[],
  d: CsiNodeDriver | { name: string; remove: true },
): CsiNodeDriver[] {
  const rest = drivers.filter((x) => x.name !== d.name);
  return 'remove' in d ? rest : [...rest, d];
}

/** The node-ID annotation's value after setting (or, with no `nodeId`, removing) `driver`; undefined when empty. */
export function annotationWith(current: string | undefined, driver: string, nodeId?: string): string | undefined {
  let ids: Record<string, string> = {};
  try {
    const parsed = current ? (JSON.parse(current) as unknown) : {};
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) ids = parsed as Record<string, string>;
  } catch {
    // upstream overwrites an annotation it cannot parse
  }
  if (nodeId) ids[driver] = nodeId;
  else delete ids[driver];
  return Object.keys(ids).length ? JSON.stringify(ids) : undefined;
}

/** A driver's entry from its NodeGetInfo answer. */
export function driverEntry(
  name: string,
  info: {
    node_id: string;
    max_volumes_per_node: number;
    accessible_topology: { segments: Record<string, string> } | null;
  },
): CsiNodeDriver {
  const keys = Object.keys(info.accessible_topology?.segments ?? {}).sort();
  return {
    name,
    nodeID: info.node_id,
    topologyKeys: keys.length ? keys : null,
    ...(info.max_volumes_per_node > 0 ? { allocatable: { count: info.max_volumes_per_node } } : {}),
  };
}

interface NodeObj {
  metadata: {
    name: string;
    uid: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
  };
}
interface CsiNodeObj {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    resourceVersion?: string;
    ownerReferences?: unknown[];
    annotations?: Record<string, string>;
  };
  spec: { drivers: CsiNodeDriver[] | null };
}

const CONFLICT_RETRIES = 5;

/** Keeps CSINode and the Node's CSI annotation and labels in step with the registered drivers. */
export class CsiNodeInfoManager {
  constructor(private readonly deps: { client: KubeClient; nodeName: string }) {}

  private get csiNodePath(): string {
    return `/apis/storage.k8s.io/v1/csinodes/${encodeURIComponent(this.deps.nodeName)}`;
  }

  private async node(): Promise<NodeObj> {
    const r = await this.deps.client.request<NodeObj>({
      path: `/api/v1/nodes/${encodeURIComponent(this.deps.nodeName)}`,
    });
    if (r.status !== 200 || !r.body) throw apiError(`get node ${this.deps.nodeName}`, r);
    return r.body;
  }

  /** Applies `change` to the CSINode (created, owned by the Node, when missing). */
  private async updateCsiNode(change: (drivers: CsiNodeDriver[]) => CsiNodeDriver[]): Promise<void> {
    for (let i = 0; ; i++) {
      const got = await this.deps.client.request<CsiNodeObj>({ path: this.csiNodePath });
      if (got.status === 404) {
        const node = await this.node();
        const created = await this.deps.client.request({
          method: 'POST',
          path: '/apis/storage.k8s.io/v1/csinodes',
          body: {
            apiVersion: 'storage.k8s.io/v1',
            kind: 'CSINode',
            metadata: {
              name: this.deps.nodeName,
              annotations: { [MIGRATED_PLUGINS_ANNOTATION]: MIGRATED_PLUGINS },
              ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node.metadata.name, uid: node.metadata.uid }],
            },
            spec: { drivers: change([]) },
          },
        });
        if (created.status === 201 || created.status === 200) return;
        if (created.status !== 409 || i >= CONFLICT_RETRIES)
          throw apiError(`create CSINode ${this.deps.nodeName}`, created);
        continue;
      }
      if (got.status !== 200 || !got.body) throw apiError(`get CSINode ${this.deps.nodeName}`, got);
      const drivers = change(got.body.spec.drivers ?? []);
      const annotations = got.body.metadata.annotations ?? {};
      const migrated = annotations[MIGRATED_PLUGINS_ANNOTATION] === MIGRATED_PLUGINS;
      if (migrated && deepEqual(drivers, got.body.spec.drivers ?? [])) return; // nothing changes
      const put = await this.deps.client.request({
        method: 'PUT',
        path: this.csiNodePath,
        body: {
          ...got.body,
          metadata: {
            ...got.body.metadata,
            annotations: { ...annotations, [MIGRATED_PLUGINS_ANNOTATION]: MIGRATED_PLUGINS },
          },
          spec: { ...got.body.spec, drivers },
        },
      });
      if (put.status === 200) return;
      if (put.status !== 409 || i >= CONFLICT_RETRIES) throw apiError(`update CSINode ${this.deps.nodeName}`, put);
    }
  }

  /** Sets the Node's annotation entry for `driver` (and topology labels). */
  private async updateNode(driver: string, nodeId: string | undefined, labels: Record<string, string>): Promise<void> {
    for (let i = 0; ; i++) {
      const node = await this.node();
      const current = node.metadata.annotations?.[NODE_ID_ANNOTATION];
      const next = annotationWith(current, driver, nodeId);
      const newLabels = Object.fromEntries(Object.entries(labels).filter(([k, v]) => node.metadata.labels?.[k] !== v));
      if (next === current && !Object.keys(newLabels).length) return;
      const r = await this.deps.client.request({
        method: 'PATCH',
        path: `/api/v1/nodes/${encodeURIComponent(this.deps.nodeName)}`,
        contentType: 'application/merge-patch+json',
        body: {
          metadata: {
            resourceVersion: node.metadata.resourceVersion,
            annotations: { [NODE_ID_ANNOTATION]: next ?? null },
            ...(Object.keys(newLabels).length ? { labels: newLabels } : {}),
          },
        },
      });
      if (r.status === 200) return;
      if (r.status !== 409 || i >= CONFLICT_RETRIES) throw apiError(`patch node ${this.deps.nodeName}`, r);
    }
  }

  /**
   * upstream InitializeCSINodeWithAnnotation: the CSINode exists (drivers kept). Throws while the Node is not
   * registered.
   */
  async initialize(): Promise<void> {
    await this.updateCsiNode((drivers) => drivers);
  }

  /** upstream InstallCSIDriver. */
  async install(entry: CsiNodeDriver, topology: Record<string, string>): Promise<void> {
    await this.updateNode(entry.name, entry.nodeID, topology);
    await this.updateCsiNode((drivers) => driversWith(drivers, entry));
  }

  /** The driver's CSINode entry gets `count` as its volume limit (none for 0); nothing is written when it has it. */
  async setAllocatable(name: string, count: number): Promise<void> {
    await this.updateCsiNode((drivers) =>
      drivers.map((d) => {
        if (d.name !== name) return d;
        const { allocatable: _, ...rest } = d;
        return count > 0 ? { ...rest, allocatable: { count } } : rest;
      }),
    );
  }

  /** upstream UninstallCSIDriver: the CSINode entry and the annotation entry go; labels stay. */
  async uninstall(name: string): Promise<void> {
    await this.updateCsiNode((drivers) => driversWith(drivers, { name, remove: true }));
    await this.updateNode(name, undefined, {});
  }
}
