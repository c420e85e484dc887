/**
 * What a CSI publish gathers besides the volume source (upstream's csiMountMgr helpers): the
 * secrets a driver gets, the pod's service-account tokens (`tokenRequests`), the publish context of
 * an attached volume, and its figures from the driver (NodeGetVolumeStats).
 */
import { messageOf } from '../../../lib/errors.js';
import type { SetUpContext, VolumeHost, VolumeMeasure } from '../types.js';
import type { CsiClient } from './csi-client.js';
import { csiLog } from './csi-release.js';
import { attachmentName } from './csi-spec.js';
import { AttachError, RESOURCE_EXHAUSTED } from '../attach-limit.js';

/** upstream getCredentialsFromSecret: a Secret's data, decoded; `what` names the reference in the error. */
export async function secretData(
  host: VolumeHost,
  ref: { name: string; namespace: string },
  what: string,
): Promise<Record<string, string>> {
  const s = await host
    .getObject<{ data?: Record<string, string> }>('secrets', ref.namespace, ref.name)
    .catch((err: unknown) => {
      throw new Error(`fetching ${what} ${ref.namespace}/${ref.name} failed: ${messageOf(err)}`);
    });
  if (!s) throw new Error(`fetching ${what} ${ref.namespace}/${ref.name} failed: secrets "${ref.name}" not found`);
  return Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
}

/**
 * upstream podServiceAccountTokenAttrs: with the CSIDriver's `tokenRequests`, one token per
 * audience bound to the pod, as `csi.storage.k8s.io/serviceAccount.tokens` (JSON: audience →
 * {token, expirationTimestamp}, keys sorted as Go's encoder writes them).
 */
export async function tokenAttrs(
  ctx: SetUpContext,
  requests: readonly { audience?: string; expirationSeconds?: number }[],
): Promise<Record<string, string>> {
  if (!requests.length) return {};
  const { pod } = ctx;
  const tokens: Record<string, { token: string; expirationTimestamp: string }> = {};
  for (const r of [...requests].sort((a, b) => (a.audience ?? '').localeCompare(b.audience ?? ''))) {
    const audience = r.audience ?? '';
    tokens[audience] = await ctx.host
      .getToken({
        namespace: pod.metadata.namespace ?? 'default',
        serviceAccount: (pod.spec.serviceAccountName as string | undefined) || 'default',
        audiences: audience ? [audience] : [],
        expirationSeconds: r.expirationSeconds ?? 3600,
        pod: { name: pod.metadata.name ?? '', uid: pod.metadata.uid ?? '' },
      })
      .then((t) => ({ token: t.token, expirationTimestamp: t.expirationTimestamp }))
      .catch((err: unknown) => {
        throw new Error(csiLog(`mounter.SetUpAt failed to get service accoount token attributes: ${messageOf(err)}`));
      });
  }
  return { 'csi.storage.k8s.io/serviceAccount.tokens': JSON.stringify(tokens) };
}

/**
 * upstream WaitForAttach + getPublishContext: the VolumeAttachment must say attached. An attachment that cannot be
 * read, is not there, failed or is not attached yet throws an AttachError (upstream's WaitForAttach failure),
 * `exhausted` when it failed with ResourceExhausted and the driver keeps the node's volume limit current
 * (`limitUpdated`: upstream VerifyExhaustedResource).
 */
export async function attachedContext(
  host: VolumeHost,
  driver: string,
  volumeHandle: string,
  nodeName: string,
  limitUpdated = false,
): Promise<Record<string, string>> {
  const id = attachmentName(volumeHandle, driver, nodeName);
  type Va = {
    status?: {
      attached?: boolean;
      attachmentMetadata?: Record<string, string>;
      attachError?: { message?: string; errorCode?: number };
    };
  };
  const va = await host
    .getClusterObject<Va>(`/apis/storage.k8s.io/v1/volumeattachments/${id}`, { fresh: true })
    .catch((err: unknown) => {
      throw new AttachError(
        `volume ${volumeHandle} has GET error for volume attachment ${id}: ${messageOf(err)}`,
        false,
      );
    });
  if (!va)
    throw new AttachError(
      `volume ${volumeHandle} has GET error for volume attachment ${id}: volumeattachments.storage.k8s.io "${id}" not found`,
      false,
    );
  const attachError = va.status?.attachError;
  if (attachError?.message)
    throw new AttachError(
      `attachment for ${volumeHandle} failed: ${attachError.message}`,
      limitUpdated && attachError.errorCode === RESOURCE_EXHAUSTED,
    );
  if (!va.status?.attached)
    throw new AttachError(`volume ${volumeHandle} is not attached for volume attachment ${id}`, false);
  return va.status.attachmentMetadata ?? {};
}

/** upstream MetricsCsi: the driver's NodeGetVolumeStats. */
export function csiMeasure(client: CsiClient, volumeHandle: string, target: string): VolumeMeasure {
  return async () => {
    const usage = await client.nodeGetVolumeStats(volumeHandle, target);
    const bytes = usage.find((u) => u.unit === 'BYTES');
    const inodes = usage.find((u) => u.unit === 'INODES');
    return {
      usedBytes: Number(bytes?.used ?? 0),
      capacityBytes: Number(bytes?.total ?? 0),
      availableBytes: Number(bytes?.available ?? 0),
      inodesUsed: Number(inodes?.used ?? 0),
      inodes: Number(inodes?.total ?? 0),
      inodesFree: Number(inodes?.available ?? 0),
    };
  };
}
