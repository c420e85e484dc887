/**
 * The trust anchors of ClusterTrustBundles, for projected volumes' `clusterTrustBundle` sources, as upstream's
 * LazyInformerManager (pkg/kubelet/clustertrustbundle): on first use it asks discovery which version of the API the
 * apiserver serves (certificates.k8s.io v1, then v1beta1, then v1alpha1), keeps every ClusterTrustBundle by a
 * list+watch of that version, and waits up to 10 s for the first list. A bundle is read by name, or all bundles of a
 * signer that a label selector picks (no selector: none; an empty one: all). Their certificates are deduplicated
 * and written again as plain CERTIFICATE blocks, in an order of their own that stays the same while the kubelet
 * runs and changes when it restarts (upstream's shuffle, which it caches for 5 minutes, so that no client comes to
 * depend on an order).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import type { KubeClient } from '../../lib/kube-client.js';
import { apiError } from '../../lib/kube-client.js';
import { labelSelectorMatcher, type LabelSelector } from '../../lib/label-selector.js';
import { ListWatch } from '../../lib/list-watch.js';
import type { Logger } from '../../lib/logger.js';
import { allFromPem, toPem } from '../../lib/der.js';

/** Where the trust anchors of a projected `clusterTrustBundle` source come from. */
export interface TrustAnchors {
  /** The PEM of the bundle `name`; '' when it does not exist and `allowMissing`. */
  byName(name: string, allowMissing: boolean): Promise<string>;
  /** The PEM of the bundles of `signerName` that `selector` picks; '' when none does and `allowMissing`. */
  bySigner(signerName: string, selector: LabelSelector | null | undefined, allowMissing: boolean): Promise<string>;
}

const NOT_SUPPORTED = 'ClusterTrustBundle projection is not supported in static kubelet mode';

/** Upstream's NoopManager: no apiserver, the ClusterTrustBundleProjection gate off, or no version of the API. */
export const noTrustAnchors: TrustAnchors = {
  byName: () => Promise.reject(new Error(NOT_SUPPORTED)),
  bySigner: () => Promise.reject(new Error(NOT_SUPPORTED)),
};

interface ClusterTrustBundle {
  metadata: { name: string; labels?: Record<string, string>; resourceVersion?: string };
  spec?: { signerName?: string; trustBundle?: string };
}

/** The versions asked for, newest first (upstream's order). */
const VERSIONS = ['certificates.k8s.io/v1', 'certificates.k8s.io/v1beta1', 'certificates.k8s.io/v1alpha1'];
/** How long the first use waits for the first list. */
const SYNC_WAIT_MS = 10_000;

/**
 * The certificates of `trustBundles`, each once, as CERTIFICATE blocks ordered by a hash of `salt` and their DER: the
 * same set gives the same file while the salt is the same. Pure.
 */
export function normalizeTrustAnchors(trustBundles: readonly string[], salt: Buffer): string {
  const byDer = new Map<string, Buffer>();
  for (const bundle of trustBundles) for (const der of allFromPem(bundle)) byDer.set(der.toString('base64'), der);
  const rank = (der: Buffer) => createHash('sha256').update(salt).update(der).digest('hex');
  return [...byDer.values()]
    .map((der) => ({ der, rank: rank(der) }))
    .sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0))
    .map(({ der }) => toPem('CERTIFICATE', der))
    .join('');
}

/** The informer-backed source of trust anchors (upstream's LazyInformerManager and InformerManager). */
export class ClusterTrustBundles implements TrustAnchors {
  private readonly salt = randomBytes(16);
  private signal: AbortSignal = new AbortController().signal;
  /** The first use's discovery and list, shared by the calls that come meanwhile; unset again when discovery failed. */
  private ready?: Promise<void>;
  /** Set when discovery found no version of the API: every read fails as upstream's NoopManager. */
  private apiMissing = false;
  private bundles?: Map<string, ClusterTrustBundle>;

  constructor(private readonly deps: { client: KubeClient; clock: Clock; logger: Logger }) {}

  /** Remembers what stops the watch, which starts on first use. */
  start(signal: AbortSignal): void {
    this.signal = signal;
  }

  async byName(name: string, allowMissing: boolean): Promise<string> {
    const bundles = await this.synced();
    const bundle = bundles.get(name);
    if (!bundle) {
      if (allowMissing) return '';
      throw new Error(
        `while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io ${JSON.stringify(name)} not found`,
      );
    }
    return normalizeTrustAnchors([bundle.spec?.trustBundle ?? ''], this.salt);
  }

  async bySigner(
    signerName: string,
    selector: LabelSelector | null | undefined,
    allowMissing: boolean,
  ): Promise<string> {
    const bundles = await this.synced();
    let matches;
    try {
      matches = labelSelectorMatcher(selector);
    } catch (err) {
      throw new Error(`while parsing label selector: ${messageOf(err)}`);
    }
    const picked = [...bundles.values()].filter(
      (b) => matches(b.metadata.labels) && (b.spec?.signerName ?? '') === signerName,
    );
    if (picked.length === 0) {
      if (allowMissing) return '';
      throw new Error('combination of signerName and labelSelector matched zero ClusterTrustBundles');
    }
    return normalizeTrustAnchors(
      picked.map((b) => b.spec?.trustBundle ?? ''),
      this.salt,
    );
  }

  /** The bundles once listed; upstream's errors before. */
  private async synced(): Promise<ReadonlyMap<string, ClusterTrustBundle>> {
    this.ready ??= this.begin().catch((err: unknown) => {
      this.ready = undefined;
      throw new Error(`failed to ensure informer manager for ClusterTrustBundles: ${messageOf(err)}`);
    });
    await this.ready;
    if (this.apiMissing) throw new Error(NOT_SUPPORTED);
    if (!this.bundles) throw new Error('ClusterTrustBundle informer has not yet synced');
    return this.bundles;
  }

  /** Discovery, then the list+watch of the version found, waiting up to SYNC_WAIT_MS for its first list. */
  private async begin(): Promise<void> {
    const { client, clock, logger } = this.deps;
    let found: string | undefined;
    for (const groupVersion of VERSIONS) {
      const r = await client.request<{ resources?: { name: string }[] }>({ path: `/apis/${groupVersion}` });
      if (r.status === 404) continue;
      if (r.status !== 200) {
        const why = messageOf(apiError(`discovery of ${groupVersion}`, r));
        throw new Error(`failed to determine which informer manager to choose: ${why}`);
      }
      if (r.body?.resources?.some((resource) => resource.name === 'clustertrustbundles')) {
        found = groupVersion;
        break;
      }
    }
    if (!found) {
      this.apiMissing = true;
      logger.info(
        "No version of the ClusterTrustBundle API was found, the ClusterTrustBundle informer won't be started",
      );
      return;
    }
    const reflector = new ListWatch<ClusterTrustBundle>({
      client,
      path: `/apis/${found}/clustertrustbundles`,
      clock,
      logger,
    });
    logger.info({ apiGroup: found }, 'Started ClusterTrustBundle informer');
    await new Promise<void>((resolve) => {
      const cancel = clock.setTimer(() => {
        logger.info('ClusterTrustBundle informer not synced, continuing to attempt in background');
        resolve();
      }, SYNC_WAIT_MS);
      reflector.start({
        signal: this.signal,
        onSnapshot: (items) => {
          this.bundles = new Map(items.map((bundle) => [bundle.metadata.name, bundle]));
          cancel();
          resolve();
        },
      });
    });
  }
}
