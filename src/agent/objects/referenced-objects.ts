/**
 * The ConfigMaps and Secrets a pod names (upstream podutil.VisitPodConfigmapNames and VisitPodSecretNames): in the
 * environment of every container (init, regular and ephemeral), in its volumes (projected sources included) and, for
 * Secrets, in its image pull secrets and the secret references of volume types that take one. The kubelet's object
 * managers keep exactly these objects for the pod. Pure.
 */
import { allContainers } from '../../api/containers.js';
import type { Container, Pod } from '../../api/types.js';

type Fields = Record<string, unknown>;
type NameRef = { name?: string } | undefined;

/** Volume types whose source names a Secret by `secretRef` (CSI: `nodePublishSecretRef`). */
const SECRET_REF_VOLUMES = ['cephfs', 'cinder', 'flexVolume', 'iscsi', 'rbd', 'scaleIO', 'storageos'];

function volumesOf(pod: Pod): Fields[] {
  return (pod.spec.volumes ?? []) as Fields[];
}

function projectedSources(volume: Fields): Fields[] {
  return (volume.projected as { sources?: Fields[] } | undefined)?.sources ?? [];
}

/** The names the environments of `containers` refer to through `keyRef` (env) and `fromRef` (envFrom). */
function environmentNames(
  containers: readonly Container[],
  keyRef: 'configMapKeyRef' | 'secretKeyRef',
  fromRef: 'configMapRef' | 'secretRef',
): (string | undefined)[] {
  return containers.flatMap((container) => [
    ...((container as { envFrom?: Fields[] }).envFrom ?? []).map((source) => (source[fromRef] as NameRef)?.name),
    ...(container.env ?? []).map((variable) => ((variable.valueFrom as Fields | undefined)?.[keyRef] as NameRef)?.name),
  ]);
}

function distinctNames(names: (string | undefined)[]): string[] {
  return [...new Set(names.filter((name): name is string => !!name))];
}

/** The ConfigMaps and Secrets the environments (env, envFrom) of `containers` name, each once. */
export function environmentReferences(containers: readonly Container[]): { configMaps: string[]; secrets: string[] } {
  return {
    configMaps: distinctNames(environmentNames(containers, 'configMapKeyRef', 'configMapRef')),
    secrets: distinctNames(environmentNames(containers, 'secretKeyRef', 'secretRef')),
  };
}

/** The image pull secrets `pod` names. */
export function pullSecretNames(pod: Pod): string[] {
  return distinctNames(((pod.spec as { imagePullSecrets?: NameRef[] }).imagePullSecrets ?? []).map((s) => s?.name));
}

/** The ConfigMaps `pod` names, each once. */
export function referencedConfigMaps(pod: Pod): string[] {
  return distinctNames([
    ...environmentNames(allContainers(pod), 'configMapKeyRef', 'configMapRef'),
    ...volumesOf(pod).flatMap((volume) => [
      (volume.configMap as NameRef)?.name,
      ...projectedSources(volume).map((source) => (source.configMap as NameRef)?.name),
    ]),
  ]);
}

/** The Secrets `pod` names, each once. */
export function referencedSecrets(pod: Pod): string[] {
  return distinctNames([
    ...pullSecretNames(pod),
    ...environmentNames(allContainers(pod), 'secretKeyRef', 'secretRef'),
    ...volumesOf(pod).flatMap((volume) => [
      (volume.secret as { secretName?: string } | undefined)?.secretName,
      (volume.azureFile as { secretName?: string } | undefined)?.secretName,
      ((volume.csi as Fields | undefined)?.nodePublishSecretRef as NameRef)?.name,
      ...SECRET_REF_VOLUMES.map((type) => ((volume[type] as Fields | undefined)?.secretRef as NameRef)?.name),
      ...projectedSources(volume).map((source) => (source.secret as NameRef)?.name),
    ]),
  ]);
}
