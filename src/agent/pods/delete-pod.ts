/**
 * Deleting a pod object for good, as the kubelet does for mirror pods and for the final step of a
 * graceful deletion: DELETE with gracePeriodSeconds 0 and the pod's UID as precondition, so a
 * newer pod under the same name is never removed.
 */
import type { Pod } from '../../api/types.js';
import { apiError, type KubeClient } from '../../lib/kube-client.js';

/** DELETEs `pod` now; 404 (already gone) and 409 (replaced) count as done; other answers throw. */
export async function deletePodNow(client: KubeClient, pod: Pod): Promise<void> {
  const r = await client.request({
    method: 'DELETE',
    path: `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`,
    body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid: pod.metadata.uid } },
  });
  if (r.status !== 200 && r.status !== 404 && r.status !== 409)
    throw apiError(`deleting pod ${pod.metadata.namespace}/${pod.metadata.name}`, r);
}
