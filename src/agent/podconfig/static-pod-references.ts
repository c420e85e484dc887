/**
 * What a static pod may not use (PreventStaticPodAPIReferences, beta and on in v1.36; upstream
 * podutil.HasAPIObjectReference): a static pod runs without the apiserver, so any reference to an
 * API object (a service account, secrets, config maps, claims, API-backed volumes) refuses it, with
 * the plural resource named as upstream names it. Pure.
 */
import { allContainers } from '../../api/containers.js';
import type { Pod } from '../../api/types.js';

type Fields = Record<string, unknown>;

/** Volume types that need nothing from the apiserver. */
const LOCAL_VOLUMES = new Set([
  'awsElasticBlockStore',
  'azureDisk',
  'cephfs',
  'cinder',
  'downwardAPI',
  'emptyDir',
  'fc',
  'flexVolume',
  'flocker',
  'gcePersistentDisk',
  'gitRepo',
  'hostPath',
  'image',
  'iscsi',
  'nfs',
  'photonPersistentDisk',
  'portworxVolume',
  'quobyte',
  'rbd',
  'scaleIO',
  'storageos',
  'vsphereVolume',
]);

/** Volume types that name an API object, and what upstream calls it. */
const API_VOLUMES: Record<string, string> = {
  configMap: 'configmaps (via configmap volumes)',
  secret: 'secrets (via secret volumes)',
  csi: 'csidrivers (via CSI volumes)',
  glusterfs: 'endpoints (via glusterFS volumes)',
  persistentVolumeClaim: 'persistentvolumeclaims',
  ephemeral: 'persistentvolumeclaims (via ephemeral volumes)',
  azureFile: 'secrets (via azureFile volumes)',
};

const PROJECTED_SOURCES: Record<string, string | undefined> = {
  configMap: 'configmaps (via projected volumes)',
  secret: 'secrets (via projected volumes)',
  serviceAccountToken: 'serviceaccounts (via projected volumes)',
  clusterTrustBundle: 'clustertrustbundles',
  podCertificate: 'podcertificates',
  downwardAPI: undefined,
};

/** Volume types that name a secret by a secretRef (upstream VisitPodSecretNames). */
const SECRET_REF_VOLUMES = ['cephfs', 'cinder', 'flexVolume', 'iscsi', 'rbd', 'scaleIO', 'storageos', 'csi'];

function envNames(
  pod: Pod,
  keyRef: 'secretKeyRef' | 'configMapKeyRef',
  fromRef: 'secretRef' | 'configMapRef',
): boolean {
  return allContainers(pod).some(
    (c) =>
      (c.env ?? []).some((e) => (e.valueFrom as Fields | undefined)?.[keyRef]) ||
      ((c as { envFrom?: Fields[] }).envFrom ?? []).some((e) => e[fromRef]),
  );
}

/**
 * The API resource a static pod refers to, as upstream words it (`secrets`, `configmaps (via
 * configmap volumes)`, …), or undefined when it refers to none. Throws for a volume type or a
 * projected source it does not know (upstream refuses those too).
 */
export function staticPodAPIReference(pod: Pod): string | undefined {
  const spec = pod.spec as Pod['spec'] & { serviceAccountName?: string; imagePullSecrets?: unknown[] };
  const volumes = (spec.volumes ?? []) as (Fields & { name: string })[];
  if (spec.serviceAccountName) return 'serviceaccounts';
  const secretVolume = volumes.some(
    (v) =>
      v.secret ||
      v.azureFile ||
      SECRET_REF_VOLUMES.some((type) => {
        const source = v[type] as Fields | undefined;
        return source && (source.secretRef || source.nodePublishSecretRef);
      }) ||
      ((v.projected as { sources?: Fields[] } | undefined)?.sources ?? []).some((s) => s.secret),
  );
  if ((spec.imagePullSecrets ?? []).length || envNames(pod, 'secretKeyRef', 'secretRef') || secretVolume)
    return 'secrets';
  const configMapVolume = volumes.some(
    (v) => v.configMap || ((v.projected as { sources?: Fields[] } | undefined)?.sources ?? []).some((s) => s.configMap),
  );
  if (envNames(pod, 'configMapKeyRef', 'configMapRef') || configMapVolume) return 'configmaps';
  if (((spec as Fields).resourceClaims as unknown[] | undefined)?.length) return 'resourceclaims';
  for (const volume of volumes) {
    const type = Object.keys(volume).find((key) => key !== 'name');
    if (type === undefined || LOCAL_VOLUMES.has(type)) continue;
    if (API_VOLUMES[type]) return API_VOLUMES[type];
    if (type !== 'projected') throw new Error(`unknown volume type for volume  ${JSON.stringify(volume.name)}`);
    for (const source of (volume.projected as { sources?: Fields[] }).sources ?? []) {
      const kind = Object.keys(source)[0];
      if (kind === undefined || !(kind in PROJECTED_SOURCES))
        throw new Error(`unknown source for projected volume ${JSON.stringify(volume.name)}`);
      if (PROJECTED_SOURCES[kind]) return PROJECTED_SOURCES[kind];
    }
  }
  return undefined;
}
