/**
 * persistentVolumeClaim volumes bound to a PersistentVolume of type `hostPath` or `local` (the
 * node's path itself; hostPath `type` checked as the hostPath plugin does). Any other PV type
 * needs attach/CSI, which tskubelet does not have: a clear error naming what is supported.
 * `ephemeral` volumes (generic ephemeral volumes, made by a controller as PVCs for CSI) likewise.
 */
import { checkHostPathType } from './host-path.js';
import type { MountedVolume, SetUpContext, VolumePlugin } from '../types.js';

interface Pvc {
  spec?: { volumeName?: string };
  status?: { phase?: string };
}
interface Pv {
  spec?: { hostPath?: { path: string; type?: string }; local?: { path: string }; [k: string]: unknown };
}

const SUPPORTED = 'tskubelet supports PersistentVolumes of type hostPath and local only (no CSI or attachable volumes yet)';

/** persistentVolumeClaim volumes. */
export const persistentVolumeClaimPlugin: VolumePlugin = {
  dirName: 'kubernetes.io~persistent-volume',
  field: 'persistentVolumeClaim',
  remountEachSync: false,
  async setUp({ pod, volume, host }: SetUpContext): Promise<MountedVolume> {
    const src = volume.persistentVolumeClaim as { claimName: string; readOnly?: boolean };
    const ns = pod.metadata.namespace ?? 'default';
    if (!host.hasApiserver) throw new Error(`cannot get persistentvolumeclaim ${ns}/${src.claimName}: no apiserver configured (standalone mode)`);
    const pvc = await host.getObject<Pvc>('persistentvolumeclaims', ns, src.claimName);
    if (!pvc) throw new Error(`persistentvolumeclaim "${src.claimName}" not found`);
    const pvName = pvc.spec?.volumeName ?? '';
    if (pvc.status?.phase !== 'Bound' || !pvName)
      throw new Error(`PVC ${ns}/${src.claimName} has non-bound phase ("${pvc.status?.phase ?? ''}") or empty pvc.Spec.VolumeName ("${pvName}")`);
    const pv = await host.getPersistentVolume<Pv>(pvName);
    if (!pv) throw new Error(`persistentvolume "${pvName}" not found`);
    let path: string;
    if (pv.spec?.hostPath) {
      path = pv.spec.hostPath.path;
      await checkHostPathType(path, pv.spec.hostPath.type);
    } else if (pv.spec?.local) {
      path = pv.spec.local.path;
      await checkHostPathType(path, 'Directory');
    } else {
      const kind =
        Object.keys(pv.spec ?? {}).find(
          (k) =>
            ![
              'capacity',
              'accessModes',
              'claimRef',
              'persistentVolumeReclaimPolicy',
              'storageClassName',
              'mountOptions',
              'volumeMode',
              'nodeAffinity',
              'volumeAttributesClassName',
            ].includes(k),
        ) ?? 'unknown';
      throw new Error(`PersistentVolume "${pvName}" is of type ${kind}: ${SUPPORTED}`);
    }
    // Upstream's local plugin relabels a writable volume and measures its filesystem; the hostPath plugin does neither.
    const local = !!pv.spec?.local;
    return {
      path,
      readOnly: src.readOnly === true,
      plugin: this.dirName,
      seLinuxRelabel: local && src.readOnly !== true,
      ...(local ? { metrics: 'statfs' as const } : {}),
      pvcRef: { name: src.claimName, namespace: ns },
    };
  },
};

/** ephemeral volumes: not supported yet, with a clear message. */
export const ephemeralPlugin: VolumePlugin = {
  dirName: 'kubernetes.io~ephemeral',
  field: 'ephemeral',
  remountEachSync: false,
  setUp(): Promise<MountedVolume> {
    return Promise.reject(new Error(`generic ephemeral volumes are not supported: ${SUPPORTED}`));
  },
};
