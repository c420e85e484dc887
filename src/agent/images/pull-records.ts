/**
 * Which pods may use an image that is already on the node (KubeletEnsureSecretPulledImages, beta
 * and on in v1.36; upstream pkg/kubelet/images/pullmanager). The kubelet records each pull it
 * makes under `<root-dir>/image_manager/` in upstream's files: `pulling/sha256-<sha256(image)>`
 * (an ImagePullIntent while it pulls) and `pulled/sha256-<sha256(imageRef)>` (an
 * ImagePulledRecord: for each image name, the credentials it was pulled with). A pod asking for a
 * present image with IfNotPresent or Never must then show one of those credentials (the same pull
 * secret, or a secret with the same credentials), unless the image was pulled anonymously or with
 * the node's own credentials, or the image policy exempts it
 * (`imagePullCredentialsVerificationPolicy`); otherwise the image is pulled again with the pod's
 * credentials. The decisions are pure; the files are read and written by `PullRecords`.
 */
import { rfc3339 } from '../../lib/time.js';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { listDirSync, writeFileAtomic } from '../../lib/fs-util.js';
import { imageRegistry } from './keyring.js';

/** A pull secret as a record names it (credentialHash: of the credentials it gave for the image). */
export interface PullSecretRef {
  uid: string;
  namespace: string;
  name: string;
  credentialHash: string;
}

/** A service account whose token got the credentials from a credential provider (tokenAttributes). */
export interface PullServiceAccountRef {
  uid: string;
  namespace: string;
  name: string;
}

/** How an image was pulled, for one image name. */
export interface ImagePullCredentials {
  kubernetesSecrets?: PullSecretRef[];
  kubernetesServiceAccounts?: PullServiceAccountRef[];
  /** Pulled without pod credentials (anonymously, or with the node's): any pod may use it. */
  nodePodsAccessible?: boolean;
}

/** The ImagePulledRecord file. */
export interface ImagePulledRecord {
  kind: 'ImagePulledRecord';
  apiVersion: 'kubelet.config.k8s.io/v1beta1';
  lastUpdatedTime: string;
  imageRef: string;
  credentialMapping?: Record<string, ImagePullCredentials>;
}

/** imagePullCredentialsVerificationPolicy. */
export type VerificationPolicy =
  'NeverVerify' | 'NeverVerifyPreloadedImages' | 'NeverVerifyAllowlistedImages' | 'AlwaysVerify';

const API_VERSION = 'kubelet.config.k8s.io/v1beta1';
/** A record is a few hundred bytes; anything larger is not one. */
const MAX_RECORD_BYTES = 1 << 20;
/** Above this many secrets in a record, a match found while checking is not written back (upstream's limit). */
const WRITE_WHILE_MATCHING_LIMIT = 100;

/** The file name of `value`'s record: `sha256-<hex>`. Pure. */
export const recordFileName = (value: string) => `sha256-${createHash('sha256').update(value).digest('hex')}`;

/**
 * An image name without its tag and digest (upstream trimImageTagDigest): `reg:5000/app:1@sha256:…` → `reg:5000/app`.
 * Pure.
 */
export function trimImageTagDigest(image: string): string {
  const name = image.split('@')[0];
  const colon = name.lastIndexOf(':');
  return colon > name.lastIndexOf('/') ? name.slice(0, colon) : name;
}

/** An image name as the registry knows it, without tag or digest: `alpine:3` → `docker.io/library/alpine`. Pure. */
function qualifiedName(image: string): string {
  const { host, path } = imageRegistry(trimImageTagDigest(image));
  return `${host}/${path}`;
}

/** A path prefix with its registry: `team` → `docker.io/team` (no `library/`: a prefix is not an image). Pure. */
function qualifiedPrefix(prefix: string): string {
  // Read as the path of an image two levels under it, which is never a `library/` one.
  const { host, path } = imageRegistry(`${prefix}/x/y`);
  const rest = path.slice(0, -'/x/y'.length);
  return rest ? `${host}/${rest}` : host;
}

/**
 * Whether `image` is on the allowlist (exact names, or `<prefix>/*` for everything under a path). Both sides are
 * compared fully qualified, as v1.36 does (kubernetes/kubernetes#137629): a pod's `alpine` is the allowlist's
 * `docker.io/library/alpine`. Pure.
 */
export function allowlisted(image: string, allowlist: readonly string[]): boolean {
  const name = qualifiedName(image);
  return allowlist.some((entry) =>
    entry.endsWith('/*') ? name.startsWith(`${qualifiedPrefix(entry.slice(0, -2))}/`) : qualifiedName(entry) === name,
  );
}

/** What the decision reads. */
export interface PullDecisionInput {
  policy: VerificationPolicy;
  allowlist: readonly string[];
  image: string;
  /** The record of the present image's ref, if the kubelet pulled it. */
  record: ImagePulledRecord | undefined;
  /** A pull of `image` was begun and not finished (the kubelet may have stopped during it). */
  intentExists: boolean;
  /** The pod's pull secrets that give credentials for the image. */
  podSecrets: readonly PullSecretRef[];
  /** The pod's service account, when a credential provider gives credentials for the image with its token. */
  podServiceAccounts?: readonly PullServiceAccountRef[];
}

const sameObject = (a: PullServiceAccountRef, b: PullServiceAccountRef) =>
  a.uid === b.uid && a.namespace === b.namespace && a.name === b.name;

/**
 * Why a present image may or may not be used without a pull, as upstream's
 * kubelet_imagemanager_image_mustpull_checks_total counts its checks: the policy exempts it, a record shows the pod may
 * use it, the pod must authenticate (pull), or the records could not be read (a pull, to be safe).
 */
export type MustPullCheckResult = 'credentialPolicyAllowed' | 'credentialRecordFound' | 'mustAuthenticate' | 'error';

/** A check's decision: pull or not, why, and the secret to add to the record. */
export interface PullDecision {
  pull: boolean;
  result: MustPullCheckResult;
  remember?: PullSecretRef;
}

/**
 * Whether the pod must pull a present image again to show it may use it, and the secret to add to
 * the record when it may because a secret matched by its credentials or its identity only (upstream
 * MustAttemptImagePull). Pure.
 */
export function mustAttemptImagePull(o: PullDecisionInput): PullDecision {
  const pulledByKubelet = !!o.record || o.intentExists;
  const exempt =
    o.policy === 'NeverVerify' ||
    (o.policy === 'NeverVerifyPreloadedImages' && !pulledByKubelet) ||
    (o.policy === 'NeverVerifyAllowlistedImages' && !pulledByKubelet && allowlisted(o.image, o.allowlist));
  if (exempt) return { pull: false, result: 'credentialPolicyAllowed' };
  const cached = o.record?.credentialMapping?.[trimImageTagDigest(o.image)];
  if (!cached) return { pull: true, result: 'mustAuthenticate' };
  if (cached.nodePodsAccessible) return { pull: false, result: 'credentialRecordFound' };
  // The same service account (by UID too: a recreated one of the same name is another) was given the image.
  const accounts = cached.kubernetesServiceAccounts ?? [];
  if ((o.podServiceAccounts ?? []).some((mine) => accounts.some((known) => sameObject(known, mine))))
    return { pull: false, result: 'credentialRecordFound' };
  const secrets = cached.kubernetesSecrets ?? [];
  for (const podSecret of o.podSecrets)
    for (const known of secrets) {
      const sameCredentials = known.credentialHash.length > 0 && known.credentialHash === podSecret.credentialHash;
      const sameSecret =
        known.uid === podSecret.uid && known.namespace === podSecret.namespace && known.name === podSecret.name;
      if (sameCredentials || sameSecret)
        return sameCredentials && sameSecret
          ? { pull: false, result: 'credentialRecordFound' }
          : {
              pull: false,
              result: 'credentialRecordFound',
              ...(secrets.length < WRITE_WHILE_MATCHING_LIMIT ? { remember: podSecret } : {}),
            };
    }
  return { pull: true, result: 'mustAuthenticate' };
}

/** `record` (or a new one) with `credentials` added for `image`; `changed` false when nothing new. Pure. */
export function mergeCredentials(
  record: ImagePulledRecord | undefined,
  imageRef: string,
  image: string,
  credentials: ImagePullCredentials,
  nowIso: string,
): { record: ImagePulledRecord; changed: boolean } {
  const name = trimImageTagDigest(image);
  const mapping = { ...record?.credentialMapping };
  const current = mapping[name];
  let next: ImagePullCredentials;
  if (!current) next = credentials;
  else if (credentials.nodePodsAccessible) next = { nodePodsAccessible: true };
  else if (current.nodePodsAccessible) next = current;
  else {
    // A secret is replaced by itself with new credentials, else added; a service account is added once.
    const secrets = [...(current.kubernetesSecrets ?? [])];
    for (const s of credentials.kubernetesSecrets ?? []) {
      const at = secrets.findIndex((k) => sameObject(k, s));
      if (at < 0) secrets.push(s);
      else secrets[at] = s;
    }
    const accounts = [...(current.kubernetesServiceAccounts ?? [])];
    for (const a of credentials.kubernetesServiceAccounts ?? [])
      if (!accounts.some((k) => sameObject(k, a))) accounts.push(a);
    next = {
      ...current,
      ...(secrets.length ? { kubernetesSecrets: secrets } : {}),
      ...(accounts.length ? { kubernetesServiceAccounts: accounts } : {}),
    };
  }
  const changed = !current || JSON.stringify(current) !== JSON.stringify(next);
  mapping[name] = next;
  return {
    record: {
      kind: 'ImagePulledRecord',
      apiVersion: API_VERSION,
      lastUpdatedTime: changed || !record ? nowIso : record.lastUpdatedTime,
      imageRef,
      credentialMapping: mapping,
    },
    changed: changed || !record,
  };
}

/** The records on disk. Reads are bounded; a file that is not a record is as no record (fail safe: verify). */
export class PullRecords {
  private readonly pulled: string;
  private readonly pulling: string;
  /** Pulls of an image in flight, so that one ending does not remove another's intent. */
  private readonly inFlight = new Map<string, number>();
  constructor(rootDir: string) {
    this.pulled = join(rootDir, 'image_manager', 'pulled');
    this.pulling = join(rootDir, 'image_manager', 'pulling');
  }

  async record(imageRef: string): Promise<ImagePulledRecord | undefined> {
    try {
      const text = await readFile(join(this.pulled, recordFileName(imageRef)), 'utf8');
      if (text.length > MAX_RECORD_BYTES) return undefined;
      const parsed = JSON.parse(text) as ImagePulledRecord;
      return parsed.kind === 'ImagePulledRecord' && parsed.imageRef === imageRef ? parsed : undefined;
    } catch {
      return undefined;
    }
  }

  /** How many intents and records are on disk (kubelet_imagemanager_ondisk_pullintents / _pulledrecords). */
  countsOnDisk(): { intents: number; records: number } {
    return { intents: listDirSync(this.pulling)?.length ?? 0, records: listDirSync(this.pulled)?.length ?? 0 };
  }

  async intentExists(image: string): Promise<boolean> {
    if ((this.inFlight.get(image) ?? 0) > 0) return true;
    try {
      await readFile(join(this.pulling, recordFileName(image)));
      return true;
    } catch {
      return false;
    }
  }

  /** Records that a pull of `image` begins (before it does). */
  async beginPull(image: string): Promise<void> {
    this.inFlight.set(image, (this.inFlight.get(image) ?? 0) + 1);
    await mkdir(this.pulling, { recursive: true, mode: 0o700 });
    await writeFileAtomic(
      join(this.pulling, recordFileName(image)),
      JSON.stringify({ kind: 'ImagePullIntent', apiVersion: API_VERSION, image }),
      0o600,
    );
  }

  /** A pull ended: its record (when it succeeded) and the end of its intent. */
  async endPull(image: string, pulled?: { imageRef: string; credentials: ImagePullCredentials }): Promise<void> {
    if (pulled) await this.remember(image, pulled.imageRef, pulled.credentials);
    const left = (this.inFlight.get(image) ?? 1) - 1;
    if (left > 0) this.inFlight.set(image, left);
    else {
      this.inFlight.delete(image);
      await rm(join(this.pulling, recordFileName(image)), { force: true });
    }
  }

  /**
   * Removes the records of images no longer on the node (upstream PruneUnknownRecords, run after
   * the image garbage collector's pass): each record whose imageRef is not in `imageRefs` and that
   * was last written before `listedAtMs` (when `imageRefs` was listed; a record written since
   * belongs to a pull the list may predate). A file that is not a record is left as it is.
   * Returns the imageRefs whose records went.
   */
  async pruneUnknown(imageRefs: ReadonlySet<string>, listedAtMs: number): Promise<string[]> {
    const names = await readdir(this.pulled).catch(() => [] as string[]);
    const pruned: string[] = [];
    for (const name of names) {
      const file = join(this.pulled, name);
      const text = await readFile(file, 'utf8').catch(() => '');
      if (!text || text.length > MAX_RECORD_BYTES) continue;
      let record: Partial<ImagePulledRecord>;
      try {
        record = JSON.parse(text) as Partial<ImagePulledRecord>;
      } catch {
        continue;
      }
      if (record.kind !== 'ImagePulledRecord' || typeof record.imageRef !== 'string') continue;
      const updatedMs = Date.parse(record.lastUpdatedTime ?? '');
      if (!(updatedMs < listedAtMs) || imageRefs.has(record.imageRef)) continue;
      await rm(file, { force: true });
      pruned.push(record.imageRef);
    }
    return pruned;
  }

  /** Adds `credentials` for `image` to the record of `imageRef`. */
  async remember(image: string, imageRef: string, credentials: ImagePullCredentials): Promise<void> {
    const merged = mergeCredentials(await this.record(imageRef), imageRef, image, credentials, rfc3339Now());
    if (!merged.changed) return;
    await mkdir(this.pulled, { recursive: true, mode: 0o700 });
    await writeFileAtomic(join(this.pulled, recordFileName(imageRef)), JSON.stringify(merged.record), 0o600);
  }
}

const rfc3339Now = () => rfc3339(Date.now());
