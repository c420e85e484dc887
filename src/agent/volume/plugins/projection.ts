/**
 * The volumes whose files come from the API, written with the atomic writer: configMap,
 * secret, downwardAPI and projected (upstream pkg/volume/{configmap,secret,downwardapi,projected}).
 * Secret and projected volumes live on a tmpfs when running as root (upstream wraps them in a
 * memory-backed emptyDir) so secrets never reach the node's disk. All are mounted read-only into
 * containers and rewritten on every pod sync when their content changed.
 */
import { dirname } from 'node:path';
import type { Pod } from '../../../api/types.js';
import { writeAtomic, type Payload } from '../atomic-writer.js';
import { mountTmpfs } from '../mount-util.js';
import { tmpfsNoswapSupported } from '../tmpfs-noswap.js';
import { markReady } from './ready-marker.js';
import { setupDir } from './empty-dir.js';
import { setVolumeOwnership } from '../ownership.js';
import {
  configMapPayload,
  DEFAULT_MODE,
  downwardApiPayload,
  mergePayloads,
  secretPayload,
  type ConfigMapObject,
  type DownwardApiFile,
  type KeyToPath,
  type PayloadResult,
  type SecretObject,
} from '../payload.js';
import type { MountedVolume, SetUpContext, VolumeHost, VolumePlugin } from '../types.js';
import { aggregateMessage } from '../../../lib/aggregate-message.js';
import type { LabelSelector } from '../../../lib/label-selector.js';
import { noTrustAnchors } from '../../objects/cluster-trust-bundles.js';
import { noPodCertificates, type PodCertificateProjection } from '../../certificate/pod-certificates.js';

type KeyedSource = {
  name?: string;
  secretName?: string;
  items?: KeyToPath[];
  defaultMode?: number;
  optional?: boolean;
};

/**
 * The one user every container of the pod runs as (its own runAsUser, else the pod's), or undefined when one names
 * none or two differ (upstream FsUserFrom): a projected service account token is then owned by that user. Pure.
 */
export function fsUserFrom(pod: Pod): number | undefined {
  const podUser = pod.spec.securityContext?.runAsUser;
  let fsUser: number | undefined;
  for (const c of [
    ...(pod.spec.initContainers ?? []),
    ...pod.spec.containers,
    ...(pod.spec.ephemeralContainers ?? []),
  ]) {
    const own = c.securityContext?.runAsUser;
    const user = typeof own === 'number' ? own : podUser;
    if (typeof user !== 'number' || (fsUser !== undefined && fsUser !== user)) return undefined;
    fsUser = user;
  }
  return fsUser;
}

function unwrap(r: PayloadResult): Payload {
  if (!r.ok) throw new Error(r.message);
  return r.payload;
}

async function object<T>(
  host: VolumeHost,
  resource: 'configmaps' | 'secrets',
  ns: string,
  name: string,
): Promise<T | null> {
  if (!host.hasApiserver)
    throw new Error(
      `couldn't get ${resource === 'configmaps' ? 'configmap' : 'secret'} ${ns}/${name}: no apiserver configured (standalone mode)`,
    );
  return host.getObject<T>(resource, ns, name);
}

async function configMapFiles(
  pod: Pod,
  src: KeyedSource,
  host: VolumeHost,
  defaultMode: number | undefined,
): Promise<Payload> {
  const name = src.name ?? '';
  const cm = await object<ConfigMapObject>(host, 'configmaps', pod.metadata.namespace ?? 'default', name);
  return unwrap(
    configMapPayload(name, cm, {
      items: src.items,
      defaultMode: src.defaultMode ?? defaultMode,
      optional: src.optional,
    }),
  );
}

async function secretFiles(
  pod: Pod,
  name: string,
  src: KeyedSource,
  host: VolumeHost,
  defaultMode: number | undefined,
): Promise<Payload> {
  const secret = await object<SecretObject>(host, 'secrets', pod.metadata.namespace ?? 'default', name);
  return unwrap(
    secretPayload(name, secret, {
      items: src.items,
      defaultMode: src.defaultMode ?? defaultMode,
      optional: src.optional,
    }),
  );
}

async function write(
  ctx: SetUpContext,
  payload: Payload,
  o: { tmpfs: boolean; plugin: string; localEphemeral?: boolean },
): Promise<MountedVolume> {
  // Upstream's wrapped emptyDir: the directory 0777; a tmpfs mounted on it has its own root's mode (1777).
  await setupDir(ctx.dir);
  if (o.tmpfs && ctx.host.isRoot) await mountTmpfs(ctx.dir, { noswap: await tmpfsNoswapSupported(dirname(ctx.dir)) });
  await markReady(ctx.volumesDir, `wrapped_${ctx.volume.name}`);
  const ownership = { readOnly: true, kubeletMade: true };
  await writeAtomic(ctx.dir, payload, { setPerms: (ts) => setVolumeOwnership(ts, ctx.fsGroup, ownership) });
  await setVolumeOwnership(ctx.dir, ctx.fsGroup, ownership).catch(() => {});
  return {
    path: ctx.dir,
    readOnly: true,
    plugin: o.plugin,
    seLinuxRelabel: true,
    metrics: 'du',
    localEphemeral: o.localEphemeral === true,
  };
}

/** configMap volumes. */
export const configMapPlugin: VolumePlugin = {
  dirName: 'kubernetes.io~configmap',
  field: 'configMap',
  remountEachSync: true,
  async setUp(ctx) {
    return write(ctx, await configMapFiles(ctx.pod, ctx.volume.configMap as KeyedSource, ctx.host, undefined), {
      tmpfs: false,
      plugin: this.dirName,
      localEphemeral: true,
    });
  },
};

/** secret volumes. */
export const secretPlugin: VolumePlugin = {
  dirName: 'kubernetes.io~secret',
  field: 'secret',
  remountEachSync: true,
  async setUp(ctx) {
    const src = ctx.volume.secret as KeyedSource;
    return write(ctx, await secretFiles(ctx.pod, src.secretName ?? '', src, ctx.host, undefined), {
      tmpfs: true,
      plugin: this.dirName,
    });
  },
};

/** downwardAPI volumes. */
export const downwardApiPlugin: VolumePlugin = {
  dirName: 'kubernetes.io~downward-api',
  field: 'downwardAPI',
  remountEachSync: true,
  async setUp(ctx) {
    const src = ctx.volume.downwardAPI as { items?: DownwardApiFile[]; defaultMode?: number };
    return write(
      ctx,
      unwrap(downwardApiPayload(ctx.pod, src.items ?? [], { defaultMode: src.defaultMode, ctx: ctx.host.downward })),
      // Memory-backed, as upstream's (its wrapped emptyDir is of medium Memory).
      { tmpfs: true, plugin: this.dirName },
    );
  },
};

interface ProjectedSource {
  configMap?: KeyedSource;
  secret?: KeyedSource;
  downwardAPI?: { items?: DownwardApiFile[] };
  serviceAccountToken?: { audience?: string; expirationSeconds?: number; path: string };
  podCertificate?: PodCertificateProjection;
  clusterTrustBundle?: {
    name?: string;
    signerName?: string;
    labelSelector?: LabelSelector | null;
    optional?: boolean;
    path: string;
  };
}

/**
 * The file of a `clusterTrustBundle` source: the certificates of a bundle named, or of a signer's bundles a label
 * selector picks; empty when `optional` and there are none (upstream's projected plugin writes the file then too).
 */
async function trustBundleFile(
  source: NonNullable<ProjectedSource['clusterTrustBundle']>,
  ctx: SetUpContext,
  mode: number,
): Promise<Payload> {
  const anchors = ctx.host.trustAnchors ?? noTrustAnchors;
  const allowMissing = source.optional === true;
  let pem: string;
  if (source.name != null) pem = await anchors.byName(source.name, allowMissing);
  else if (source.signerName != null)
    pem = await anchors.bySigner(source.signerName, source.labelSelector, allowMissing);
  else throw new Error('ClusterTrustBundle projection requires either name or signerName to be set');
  return new Map([[source.path, ownedFile(ctx, pem, mode)]]);
}

/**
 * A file owned by the pod's one user when it has one, as upstream gives a projected token, trust bundle or pod
 * certificate its mounter's FsUser (as root only: without root the kubelet cannot give a file away).
 */
function ownedFile(ctx: SetUpContext, text: string, mode: number) {
  const owner = ctx.host.isRoot ? fsUserFrom(ctx.pod) : undefined;
  return { data: Buffer.from(text, 'utf8'), mode, ...(owner !== undefined ? { fsUser: owner } : {}) };
}

/**
 * A credential's file, as upstream writes a projected token or pod certificate: readable by the pod's one user or
 * group only (mode 0600) when it has one user or an fsGroup (without root it stays the kubelet's, mode 0600 alike).
 */
function credentialFile(ctx: SetUpContext, text: string, defaultMode: number) {
  const restricted = fsUserFrom(ctx.pod) !== undefined || ctx.fsGroup !== undefined;
  return ownedFile(ctx, text, restricted ? 0o600 : defaultMode);
}

/**
 * The files of a `podCertificate` source: the credential bundle (the PRIVATE KEY block, then the certificate chain),
 * the key or the chain alone, at the paths the source names; mode 0600 when the pod has one user or an fsGroup, as a
 * token's (upstream's projected plugin).
 */
async function podCertificateFiles(
  ctx: SetUpContext,
  sourceIndex: number,
  source: PodCertificateProjection,
  defaultMode: number,
): Promise<Payload> {
  const { pod, host } = ctx;
  const { privateKeyPem, certificateChain } = await (host.podCertificates ?? noPodCertificates).credentials(
    pod,
    ctx.volume.name,
    sourceIndex,
    source,
  );
  const file = (text: string) => credentialFile(ctx, text, defaultMode);
  const files: Payload = new Map();
  if (source.credentialBundlePath) files.set(source.credentialBundlePath, file(privateKeyPem + certificateChain));
  if (source.keyPath) files.set(source.keyPath, file(privateKeyPem));
  if (source.certificateChainPath) files.set(source.certificateChainPath, file(certificateChain));
  return files;
}

/**
 * Why a projected source of no kind tskubelet projects fails its volume: a kind it does not know. Failing the volume
 * (FailedMount, the pod kept in ContainerCreating) rather than leaving the files out, which the pod would find missing
 * only when it reads them. Pure.
 */
export function unsupportedProjection(source: object): string {
  const kind = Object.keys(source).find((k) => (source as Record<string, unknown>)[k] != null);
  return kind ? `${kind} projections are not supported by tskubelet yet` : 'a projected volume source names no kind';
}

/** projected volumes: every source into one directory. */
export const projectedPlugin: VolumePlugin = {
  dirName: 'kubernetes.io~projected',
  field: 'projected',
  remountEachSync: true,
  async setUp(ctx) {
    const { pod, host } = ctx;
    const src = ctx.volume.projected as { sources?: ProjectedSource[]; defaultMode?: number };
    const defaultMode = src.defaultMode ?? DEFAULT_MODE;
    const parts: Payload[] = [];
    const errors: string[] = [];
    for (const [sourceIndex, s] of (src.sources ?? []).entries()) {
      try {
        if (s.configMap)
          parts.push(await configMapFiles(pod, { ...s.configMap, defaultMode: undefined }, host, defaultMode));
        else if (s.secret)
          parts.push(
            await secretFiles(pod, s.secret.name ?? '', { ...s.secret, defaultMode: undefined }, host, defaultMode),
          );
        else if (s.downwardAPI)
          parts.push(unwrap(downwardApiPayload(pod, s.downwardAPI.items ?? [], { defaultMode, ctx: host.downward })));
        else if (s.serviceAccountToken) {
          if (!host.hasApiserver)
            throw new Error('cannot request a service account token: no apiserver configured (standalone mode)');
          const t = s.serviceAccountToken;
          const { token } = await host.getToken({
            namespace: pod.metadata.namespace ?? 'default',
            serviceAccount: (pod.spec.serviceAccountName as string | undefined) || 'default',
            audiences: t.audience ? [t.audience] : [],
            expirationSeconds: t.expirationSeconds ?? 3600,
            pod: { name: pod.metadata.name ?? '', uid: pod.metadata.uid ?? '' },
          });
          parts.push(new Map([[t.path, credentialFile(ctx, token, defaultMode)]]));
        } else if (s.clusterTrustBundle) parts.push(await trustBundleFile(s.clusterTrustBundle, ctx, defaultMode));
        else if (s.podCertificate)
          parts.push(await podCertificateFiles(ctx, sourceIndex, s.podCertificate, defaultMode));
        else throw new Error(unsupportedProjection(s));
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    if (errors.length) throw new Error(aggregateMessage(errors));
    return write(ctx, mergePayloads(parts), { tmpfs: true, plugin: this.dirName });
  },
};
