/**
 * Mirror pods (upstream pod/mirror_client.go and the static-pod part of SyncPod): the apiserver
 * copy of a static pod, so `kubectl get pods` shows it. A mirror pod carries the static pod's
 * spec, labels and annotations plus `kubernetes.io/config.mirror: <config hash>` and an owner
 * reference to the Node. It is recreated when missing, replaced when its hash is stale or it is
 * being deleted, and deleted when its static pod is gone. Deletes use grace 0 and a UID
 * precondition. Creation waits for the Node's UID (the owner reference needs it).
 */
import { podFullName, type Pod } from '../../api/types.js';
import type { Logger } from '../../lib/logger.js';
import { apiError, type KubeClient } from '../../lib/kube-client.js';
import { messageOf } from '../../lib/errors.js';
import { ConfigHashAnnotation, ConfigMirrorAnnotation } from '../podconfig/types.js';
import type { PodManager } from './pod-manager.js';
import { deletePodNow } from './delete-pod.js';

/** What the mirror pod manager needs. */
export interface MirrorPodsDeps {
  client: KubeClient;
  podManager: PodManager;
  nodeName: string;
  nodeUid: () => string | undefined;
  logger: Logger;
}

/**
 * The mirror pod object for a static pod (pure): every annotation of the static pod (upstream's
 * specs find it by kubernetes.io/config.source and config.seen) plus config.mirror.
 */
export function mirrorPodFor(pod: Pod, node: { name: string; uid: string }): Pod {
  const annotations = pod.metadata.annotations ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: pod.metadata.name,
      namespace: pod.metadata.namespace,
      labels: pod.metadata.labels,
      annotations: {
        ...annotations,
        [ConfigMirrorAnnotation]: pod.metadata.annotations?.[ConfigHashAnnotation] ?? pod.metadata.uid!,
      },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid, controller: true }],
    },
    spec: pod.spec,
  };
}

/** Creates, replaces and deletes mirror pods. Failures are logged; the next sync retries. */
export class MirrorPods {
  constructor(private readonly deps: MirrorPodsDeps) {}

  private async remove(mirror: Pod): Promise<void> {
    await deletePodNow(this.deps.client, mirror);
    this.deps.podManager.removeMirror(mirror);
  }

  /** Makes sure the static pod's mirror pod exists and is current. */
  async ensure(pod: Pod): Promise<void> {
    const name = `${pod.metadata.namespace}/${pod.metadata.name}`;
    try {
      let mirror = this.deps.podManager.getMirrorOf(pod);
      const hash = pod.metadata.annotations?.[ConfigHashAnnotation];
      if (
        mirror &&
        (mirror.metadata.deletionTimestamp || mirror.metadata.annotations?.[ConfigMirrorAnnotation] !== hash)
      ) {
        this.deps.logger.info({ pod: name }, 'deleting stale mirror pod');
        await this.remove(mirror);
        mirror = undefined;
      }
      if (mirror || pod.metadata.deletionTimestamp) return;
      const nodeUid = this.deps.nodeUid();
      if (!nodeUid) return;
      const r = await this.deps.client.request({
        method: 'POST',
        path: `/api/v1/namespaces/${pod.metadata.namespace}/pods`,
        body: mirrorPodFor(pod, { name: this.deps.nodeName, uid: nodeUid }),
      });
      if (r.status === 201) this.deps.logger.info({ pod: name }, 'created mirror pod');
      else if (r.status !== 409) throw apiError('creating mirror pod', r);
    } catch (err) {
      this.deps.logger.warn({ pod: name, err: messageOf(err) }, 'failed to sync mirror pod');
    }
  }

  /** Deletes mirror pods whose static pod is gone (housekeeping). */
  async deleteOrphans(keep: (fullName: string) => boolean = () => false): Promise<void> {
    for (const m of this.deps.podManager.orphanedMirrors()) {
      if (keep(podFullName(m))) continue;
      try {
        await this.remove(m);
        this.deps.logger.info({ pod: `${m.metadata.namespace}/${m.metadata.name}` }, 'deleted orphaned mirror pod');
      } catch (err) {
        this.deps.logger.warn(
          { pod: `${m.metadata.namespace}/${m.metadata.name}`, err: messageOf(err) },
          'failed to delete orphaned mirror pod',
        );
      }
    }
  }
}
