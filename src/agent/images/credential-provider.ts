/**
 * Kubelet image credential provider plugins (upstream pkg/credentialprovider/plugin, the
 * `--image-credential-provider-config` / `--image-credential-provider-bin-dir` pair): how EKS,
 * GKE and AKS nodes pull from their clouds' registries (ecr-credential-provider, …). For an
 * image one of its `matchImages` covers, a provider's binary gets a CredentialProviderRequest on
 * stdin and prints a CredentialProviderResponse: registry keys → username/password, and whether
 * they hold for that image, its registry or every image, for how long. Answers are cached that
 * long (the provider's defaultCacheDuration when the answer names none; 0: not cached);
 * concurrent lookups in one registry share a run when its answer covers them all. The
 * credentials come after the pod's own pull secrets, as upstream's union keyring orders them. A
 * plugin that fails is logged and skipped; runs are bounded (60 s, 1 MiB of output).
 * A provider with `tokenAttributes` (KubeletServiceAccountTokenForCredentialProviders, beta and on)
 * gets, for a pod's image, a token of the pod's service account bound to the pod, for its
 * audience, and the service account's annotations it names; its answers are cached per service
 * account (`cacheType: ServiceAccount`) or per token (`Token`). A service account without a
 * required annotation, or a pod without one when one is required, gets nothing from it.
 */
import { createHash } from 'node:crypto';
import { realClock } from '../../lib/clock.js';
import { parseDuration } from '../../lib/duration.js';
import { messageOf } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import { runPlugin } from '../../lib/run-plugin.js';
import type { CredentialProviderMetrics } from '../metrics/credential-provider-metrics.js';
import {
  authEntries,
  credentialsOf,
  fromServiceAccount,
  imageRegistry,
  keyMatches,
  type AuthConfig,
  type KeyringEntry,
  type ObjectCoordinates,
} from './keyring.js';
import {
  loadCredentialProviderConfig,
  type CredentialProvider,
  type TokenAttributes,
} from './credential-provider-config.js';

const RUN_TIMEOUT_MS = 60_000;
const MAX_OUTPUT_BYTES = 1024 * 1024;

/**
 * A provider's answer, checked (pure): the keyring entries, for whom they hold and how long (ms; undefined: the
 * default).
 */
export function parseCredentialProviderResponse(
  out: string,
  apiVersion: string,
): { entries: KeyringEntry[]; cacheKeyType: 'Image' | 'Registry' | 'Global'; cacheMs?: number } {
  let doc: { kind?: unknown; apiVersion?: unknown; cacheKeyType?: unknown; cacheDuration?: unknown; auth?: unknown };
  try {
    doc = JSON.parse(out) as typeof doc;
  } catch {
    throw new Error('its output is not a CredentialProviderResponse (not JSON)');
  }
  if (doc?.kind !== 'CredentialProviderResponse')
    throw new Error('its output is not a CredentialProviderResponse (kind)');
  if (doc.apiVersion !== apiVersion)
    throw new Error(`it answered ${JSON.stringify(doc.apiVersion)}, was configured to use ${apiVersion}`);
  const type = doc.cacheKeyType;
  if (type !== 'Image' && type !== 'Registry' && type !== 'Global')
    throw new Error(`invalid cacheKeyType ${JSON.stringify(type)}`);
  let cacheMs: number | undefined;
  if (doc.cacheDuration !== undefined && doc.cacheDuration !== null) {
    cacheMs = typeof doc.cacheDuration === 'string' ? parseDuration(doc.cacheDuration) : undefined;
    if (cacheMs === undefined) throw new Error('invalid cacheDuration');
  }
  const auth = doc.auth ?? {};
  if (typeof auth !== 'object' || Array.isArray(auth)) throw new Error('auth must be a map of registry → credentials');
  return { entries: authEntries(auth as Record<string, unknown>), cacheKeyType: type, cacheMs };
}

interface Cached {
  entries: KeyringEntry[];
  expiresAt: number;
}

/** The pod an image is pulled for: whose service account a provider with tokenAttributes asks for. */
export interface PullingPod {
  namespace: string;
  name: string;
  uid: string;
  serviceAccountName?: string;
}

/** Where service accounts and their tokens come from (the apiserver). */
export interface ServiceAccountSource {
  /** The service account's UID and annotations; throws when it cannot be read. */
  serviceAccount(namespace: string, name: string): Promise<{ uid: string; annotations: Record<string, string> }>;
  /** A token of the service account for `audience`, bound to the pod. */
  token(pod: PullingPod, serviceAccount: string, audience: string): Promise<string>;
}

/** What a run for a pod's image carries beyond the image, and the cache key part it makes. */
interface ServiceAccountPart {
  /** The pod's service account (the pull records name it for what the provider gave). */
  coordinates: ObjectCoordinates;
  token: string;
  annotations: Record<string, string>;
  cacheKey: string;
}

export interface CredentialProvidersDeps {
  logger: Logger;
  /** A monotonic clock in ms for the credentials' cache (a Clock's `monotonic`, the default). */
  now?: () => number;
  serviceAccounts?: ServiceAccountSource;
  /** Upstream's plugin metrics (metrics/credential-provider-metrics.ts). */
  metrics?: CredentialProviderMetrics;
}

/** The node's credential providers: credentials for an image, from cache or a plugin run. */
export class CredentialProviders {
  private readonly cache = new Map<string, Cached>();
  private readonly running = new Map<string, Promise<{ image: string; entries: KeyringEntry[] }>>();
  constructor(
    private readonly providers: CredentialProvider[],
    private readonly deps: CredentialProvidersDeps,
  ) {}

  /** The providers of `configPath` (binaries under `binDir`), checked; throws as upstream fails the kubelet's start. */
  static async fromFiles(configPath: string, binDir: string, d: CredentialProvidersDeps): Promise<CredentialProviders> {
    try {
      const config = await loadCredentialProviderConfig(configPath, binDir);
      // The config's hash, as upstream's info metric names it, once it is the one in use.
      d.metrics?.configApplied(config.hash);
      return new CredentialProviders(config.providers, d);
    } catch (err) {
      throw new Error(`failed to register CRI auth plugins: ${messageOf(err)}`, { cause: err });
    }
  }

  private now(): number {
    return (this.deps.now ?? realClock.monotonic)();
  }

  /** The credentials every matching provider gives for `image` (pulled for `pod`), most specific first per provider. */
  async credentialsFor(image: string, pod?: PullingPod): Promise<AuthConfig[]> {
    const out: AuthConfig[] = [];
    for (const p of this.providers) {
      if (!p.matchImages.some((m) => keyMatches(m, image))) continue;
      try {
        const account = p.tokenAttributes ? await this.serviceAccountPart(p.tokenAttributes, pod) : undefined;
        if (account === null) continue;
        const credentials = credentialsOf(await this.entries(p, image, account), image);
        if (account) fromServiceAccount(credentials, account.coordinates);
        out.push(...credentials);
      } catch (err) {
        this.deps.logger.warn(
          { provider: p.name, image, err: messageOf(err) },
          'failed getting credential from external registry credential provider',
        );
      }
    }
    return out;
  }

  /**
   * The token and annotations a provider with tokenAttributes gets for `pod` (upstream
   * perPodPluginProvider): undefined to run without them (no service account, none required),
   * null when the provider gives this pod nothing (one required and missing, or a required
   * annotation missing).
   */
  private async serviceAccountPart(
    t: TokenAttributes,
    pod: PullingPod | undefined,
  ): Promise<ServiceAccountPart | undefined | null> {
    const name = pod?.serviceAccountName;
    if (!pod || !name || !this.deps.serviceAccounts) return t.requireServiceAccount ? null : undefined;
    const account = await this.deps.serviceAccounts.serviceAccount(pod.namespace, name);
    const annotations: Record<string, string> = {};
    for (const key of t.requiredAnnotationKeys) {
      if (!(key in account.annotations)) {
        this.deps.logger.info(
          { serviceAccount: `${pod.namespace}/${name}`, annotation: key },
          'required annotation not found on the service account: the credential provider is skipped',
        );
        return null;
      }
      annotations[key] = account.annotations[key];
    }
    for (const key of t.optionalAnnotationKeys)
      if (key in account.annotations) annotations[key] = account.annotations[key];
    const token = await this.deps.serviceAccounts.token(pod, name, t.audience);
    const sorted = Object.keys(annotations)
      .sort()
      .map((k) => [k, annotations[k]]);
    const parts: unknown[] = [pod.namespace, name, account.uid, sorted];
    if (t.cacheType === 'Token') parts.push('token', createHash('sha256').update(token).digest('hex'));
    return {
      coordinates: { uid: account.uid, namespace: pod.namespace, name },
      token,
      annotations,
      cacheKey: JSON.stringify(parts),
    };
  }

  private cached(p: CredentialProvider, image: string, account?: ServiceAccountPart): KeyringEntry[] | undefined {
    const now = this.now();
    const sa = account ? `\0${account.cacheKey}` : '';
    for (const key of [
      `${p.name}\0image\0${image}${sa}`,
      `${p.name}\0registry\0${imageRegistry(image).host}${sa}`,
      `${p.name}\0global${sa}`,
    ]) {
      const c = this.cache.get(key);
      if (c && now < c.expiresAt) return c.entries;
      if (c) this.cache.delete(key);
    }
    return undefined;
  }

  /**
   * From the cache, else from a run. Lookups for one registry wait for a run in flight there, then
   * look at the cache again: a registry-wide answer serves them all with one run.
   */
  private async entries(p: CredentialProvider, image: string, account?: ServiceAccountPart): Promise<KeyringEntry[]> {
    const key = `${p.name}\0${imageRegistry(image).host}${account ? `\0${account.cacheKey}` : ''}`;
    for (;;) {
      const hit = this.cached(p, image, account);
      if (hit) return hit;
      const inflight = this.running.get(key);
      if (!inflight) break;
      const r = await inflight.catch(() => undefined);
      if (r?.image === image) return r.entries;
    }
    const run = this.run(p, image, account).finally(() => this.running.delete(key));
    this.running.set(key, run);
    return (await run).entries;
  }

  private async run(
    p: CredentialProvider,
    image: string,
    account?: ServiceAccountPart,
  ): Promise<{ image: string; entries: KeyringEntry[] }> {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const { name, value } of p.env) env[name] = value;
    const request = {
      apiVersion: p.apiVersion,
      kind: 'CredentialProviderRequest',
      image,
      ...(account ? { serviceAccountToken: account.token } : {}),
      ...(account && Object.keys(account.annotations).length ? { serviceAccountAnnotations: account.annotations } : {}),
    };
    const began = performance.now();
    const out = await runPlugin({
      command: p.command,
      args: p.args,
      env,
      stdin: JSON.stringify(request),
      timeoutMs: RUN_TIMEOUT_MS,
      maxBytes: MAX_OUTPUT_BYTES,
      what: 'image credential provider',
    }).then(
      (text) => {
        this.deps.metrics?.ran(p.name, (performance.now() - began) / 1000, false);
        return text;
      },
      (err: unknown) => {
        this.deps.metrics?.ran(p.name, (performance.now() - began) / 1000, true);
        throw err;
      },
    );
    let r: ReturnType<typeof parseCredentialProviderResponse>;
    try {
      r = parseCredentialProviderResponse(out, p.apiVersion);
    } catch (err) {
      throw new Error(`image credential provider ${p.name}: ${messageOf(err)}`);
    }
    // The token is the pod's: an answer that hands it back as a password may not be shared with other pods.
    if (account && p.tokenAttributes?.cacheType !== 'Token' && r.entries.some((e) => e.auth.password === account.token))
      throw new Error(
        `image credential provider ${p.name}: credential provider plugin returned the service account token as the password which is not allowed when service account cache type is not set to 'Token'`,
      );
    const ttl = r.cacheMs ?? p.defaultCacheMs;
    if (ttl > 0) {
      const sa = account ? `\0${account.cacheKey}` : '';
      const key =
        r.cacheKeyType === 'Image'
          ? `${p.name}\0image\0${image}${sa}`
          : r.cacheKeyType === 'Registry'
            ? `${p.name}\0registry\0${imageRegistry(image).host}${sa}`
            : `${p.name}\0global${sa}`;
      // Bounded: a node pulls from few registries, but every image could be its own key.
      if (this.cache.size >= 1024) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(key, { entries: r.entries, expiresAt: this.now() + ttl });
    }
    return { image, entries: r.entries };
  }
}
