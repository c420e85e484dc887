/**
 * persistentVolumeClaim volumes, and generic `ephemeral` volumes (a claim named
 * `<pod>-<volume>` that the ephemeral-volume controller creates, owned by the pod). The claim must
 * be Bound; its PersistentVolume is:
 * - `hostPath` or `local`: the node's path itself (hostPath `type` checked as the hostPath plugin does);
 * - `csi`: set up by the CSI plugin (plugins/csi.ts) through the node's registered driver;
 * - anything else (an in-tree attachable type): a clear error naming what is supported.
 */
import { checkHostPathType } from './host-path.js';
import { PersistentVolumeError, VolumeProcessingError } from '../volume-processing.js';
import type { CsiVolumes } from './csi.js';
import type { CsiPv } from '../csi/csi-api-types.js';
import type { MountedVolume, SetUpContext, VolumePlugin } from '../types.js';
import { fsGroupChangePolicyOf, setVolumeOwnership } from '../ownership.js';

interface Pvc {
  metadata?: {
    uid?: string;
    deletionTimestamp?: string;
    ownerReferences?: { uid?: string; controller?: boolean; kind?: string }[];
  };
  spec?: { volumeName?: string };
  status?: { phase?: string };
}
interface Pv {
  metadata: { name: string };
  spec?: {
    hostPath?: { path: string; type?: string };
    local?: { path: string };
    csi?: unknown;
    claimRef?: { uid?: string };
    [k: string]: unknown;
  };
}

const SUPPORTED =
  'tskubelet supports PersistentVolumes of type hostPath, local and csi only (no in-tree attachable volumes)';
/** PV spec fields that are not its source. */
const NOT_SOURCE = new Set([
  'capacity',
  'accessModes',
  'claimRef',
  'persistentVolumeReclaimPolicy',
  'storageClassName',
  'mountOptions',
  'volumeMode',
  'nodeAffinity',
  'volumeAttributesClassName',
]);

/**
 * Sets up the volume of claim `claimName` for `ctx`; `ownerUid`: the claim must be controlled by this pod (an ephemeral
 * volume).
 */
async function setUpClaim(
  ctx: SetUpContext,
  o: { claimName: string; readOnly: boolean; ownerUid?: string; csi?: CsiVolumes },
): Promise<MountedVolume> {
  const { pod, host } = ctx;
  const ns = pod.metadata.namespace ?? 'default';
  if (!host.hasApiserver)
    throw new Error(`cannot get persistentvolumeclaim ${ns}/${o.claimName}: no apiserver configured (standalone mode)`);
  // Upstream's desired-state populator resolves the claim to its volume, with these words (createVolumeSpec).
  const unresolved = (why: string) => new VolumeProcessingError(`error processing PVC ${ns}/${o.claimName}: ${why}`);
  const pvc = await host.getObject<Pvc>('persistentvolumeclaims', ns, o.claimName);
  if (!pvc) throw unresolved(`failed to fetch PVC from API server: persistentvolumeclaims "${o.claimName}" not found`);
  if (pvc.metadata?.deletionTimestamp) throw unresolved('PVC is being deleted');
  if (pvc.status?.phase !== 'Bound') throw unresolved('PVC is not bound');
  const pvName = pvc.spec?.volumeName ?? '';
  if (!pvName) throw unresolved('PVC has empty pvc.Spec.VolumeName');
  if (o.ownerUid && !pvc.metadata?.ownerReferences?.some((r) => r.controller === true && r.uid === o.ownerUid))
    throw new VolumeProcessingError(
      `PVC ${ns}/${o.claimName} was not created for pod ${ns}/${pod.metadata.name} (pod is not owner)`,
    );
  const pv = await host.getPersistentVolume<Pv>(pvName);
  if (!pv) throw unresolved(`failed to fetch PV ${pvName} from API server: persistentvolumes "${pvName}" not found`);
  const binding = claimRefMismatch(pv, pvc.metadata?.uid ?? '');
  if (binding) throw unresolved(binding);
  try {
    return await setUpPersistentVolume(ctx, pv, { ...o, pvName, claim: { name: o.claimName, namespace: ns } });
  } catch (err) {
    throw new PersistentVolumeError(pvName, err);
  }
}

/**
 * Why `pv` is not the volume of the claim with UID `claimUid`, in upstream's getPVSpec words; undefined when it is. The
 * claim names its volume and the volume names its claim: a PV the binder has not bound yet (no claimRef), or has bound
 * to another claim (a claim deleted and created again under the same name), is not mounted for this one.
 */
function claimRefMismatch(pv: Pv, claimUid: string): string | undefined {
  const name = pv.metadata.name;
  const reference = pv.spec?.claimRef;
  if (!reference)
    return `found PV object ${name} but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim`;
  if ((reference.uid ?? '') !== claimUid)
    return `found PV object ${name} but its pv.Spec.ClaimRef.UID ${reference.uid ?? ''} does not point to claim.UID ${claimUid}`;
  return undefined;
}

/** Sets up the PersistentVolume `pv` a claim resolved to. */
async function setUpPersistentVolume(
  ctx: SetUpContext,
  pv: Pv,
  o: { pvName: string; claim: { name: string; namespace: string }; readOnly: boolean; csi?: CsiVolumes },
): Promise<MountedVolume> {
  const { pvName, claim } = o;
  if (pv.spec?.csi) {
    if (!o.csi)
      throw new Error(`PersistentVolume "${pvName}" is of type csi: CSI is not available in this configuration`);
    return o.csi.setUpPersistent(ctx, pv as CsiPv, { ...claim, readOnly: o.readOnly });
  }
  let path: string;
  if (pv.spec?.hostPath) {
    path = pv.spec.hostPath.path;
    await checkHostPathType(path, pv.spec.hostPath.type);
  } else if (pv.spec?.local) {
    path = pv.spec.local.path;
    await checkHostPathType(path, 'Directory');
    // Upstream's local plugin gives a writable local volume the pod's fsGroup, as its fsGroupChangePolicy says.
    if (!o.readOnly)
      await setVolumeOwnership(path, ctx.fsGroup, {
        readOnly: false,
        changePolicy: fsGroupChangePolicyOf(ctx.pod),
        progress: { pod: ctx.pod, events: ctx.host.events, logger: ctx.host.logger },
      });
  } else {
    const kind = Object.keys(pv.spec ?? {}).find((k) => !NOT_SOURCE.has(k)) ?? 'unknown';
    throw new Error(`PersistentVolume "${pvName}" is of type ${kind}: ${SUPPORTED}`);
  }
  // Upstream's local plugin relabels a writable volume and measures its filesystem; the hostPath plugin does neither.
  const local = !!pv.spec?.local;
  return {
    path,
    readOnly: o.readOnly,
    plugin: 'kubernetes.io~persistent-volume',
    pluginName: local ? 'kubernetes.io/local-volume' : 'kubernetes.io/host-path',
    seLinuxRelabel: local && !o.readOnly,
    ...(local ? { metrics: 'statfs' as const } : {}),
    pvcRef: claim,
  };
}

/** The persistentVolumeClaim and ephemeral plugins; CSI PersistentVolumes go to `csi` when given. */
export function claimPlugins(csi?: CsiVolumes): VolumePlugin[] {
  return [
    {
      dirName: 'kubernetes.io~persistent-volume',
      field: 'persistentVolumeClaim',
      remountEachSync: false,
      setUp(ctx) {
        const src = ctx.volume.persistentVolumeClaim as { claimName: string; readOnly?: boolean };
        return setUpClaim(ctx, { claimName: src.claimName, readOnly: src.readOnly === true, csi });
      },
    },
    {
      dirName: 'kubernetes.io~ephemeral',
      field: 'ephemeral',
      remountEachSync: false,
      setUp(ctx) {
        // upstream ephemeral.VolumeClaimName: <pod name>-<volume name>
        return setUpClaim(ctx, {
          claimName: `${ctx.pod.metadata.name}-${ctx.volume.name}`,
          readOnly: false,
          ownerUid: ctx.pod.metadata.uid,
          csi,
        });
      },
    },
  ];
}
