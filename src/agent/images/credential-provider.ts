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
 */
import { access, constants } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDuration } from '../../lib/duration.js';
import { messageOf } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import { runPlugin } from '../../lib/run-plugin.js';
import {
  authEntries,
  credentialsOf,
  imageRegistry,
  keyMatches,
  type AuthConfig,
  type KeyringEntry,
} from './keyring.js';
import { parseYamlBounded, readTextBounded } from '../../lib/bounded-yaml.js';

const CONFIG_API_VERSIONS = [
  'kubelet.config.k8s.io/v1',
  'kubelet.config.k8s.io/v1beta1',
  'kubelet.config.k8s.io/v1alpha1',
];
const PLUGIN_API_VERSIONS = [
  'credentialprovider.kubelet.k8s.io/v1',
  'credentialprovider.kubelet.k8s.io/v1beta1',
  'credentialprovider.kubelet.k8s.io/v1alpha1',
];
const RUN_TIMEOUT_MS = 60_000;
const MAX_OUTPUT_BYTES = 1024 * 1024;
const MAX_CONFIG_BYTES = 1024 * 1024;

/** One provider of the config, checked. */
export interface CredentialProvider {
  name: string;
  matchImages: string[];
  defaultCacheMs: number;
  apiVersion: string;
  args: string[];
  env: { name: string; value: string }[];
  /** <bin-dir>/<name>. */
  command: string;
}

/** The providers of a CredentialProviderConfig document (pure); throws naming what is wrong, as upstream's validation does. */
export function parseCredentialProviderConfig(text: string, binDir: string): CredentialProvider[] {
  let doc: unknown;
  try {
    doc = parseYamlBounded(text);
  } catch (err) {
    throw new Error(`cannot decode the credential provider config: ${messageOf(err)}`);
  }
  const d = (doc ?? {}) as { apiVersion?: unknown; kind?: unknown; providers?: unknown };
  if (d.kind !== 'CredentialProviderConfig') throw new Error('kind must be CredentialProviderConfig');
  if (!CONFIG_API_VERSIONS.includes(d.apiVersion as string))
    throw new Error(`unsupported apiVersion ${JSON.stringify(d.apiVersion)}`);
  if (!Array.isArray(d.providers) || d.providers.length === 0)
    throw new Error('at least 1 item in plugins is required');
  const seen = new Set<string>();
  return d.providers.map((raw: unknown, i: number) => {
    const p = (raw ?? {}) as Record<string, unknown>;
    const where = `providers[${i}]`;
    const name = p.name;
    if (typeof name !== 'string' || !name) throw new Error(`${where}.name: name is required`);
    if (name.includes('/')) throw new Error(`${where}.name: provider name cannot contain '/'`);
    if (name.includes(' ')) throw new Error(`${where}.name: provider name cannot contain spaces`);
    if (name === '.' || name === '..') throw new Error(`${where}.name: provider name cannot be '.' or '..'`);
    if (seen.has(name)) throw new Error(`${where}.name: duplicate provider name ${JSON.stringify(name)}`);
    seen.add(name);
    const match = p.matchImages;
    if (!Array.isArray(match) || match.length === 0 || !match.every((m) => typeof m === 'string' && m))
      throw new Error(`${where}.matchImages: at least 1 item in matchImages is required`);
    const cache = typeof p.defaultCacheDuration === 'string' ? parseDuration(p.defaultCacheDuration) : undefined;
    if (cache === undefined || cache < 0)
      throw new Error(`${where}.defaultCacheDuration: a non-negative duration is required`);
    if (!PLUGIN_API_VERSIONS.includes(p.apiVersion as string))
      throw new Error(
        `${where}.apiVersion: supported values are ${PLUGIN_API_VERSIONS.map((v) => JSON.stringify(v)).join(', ')}`,
      );
    const args = p.args ?? [];
    if (!Array.isArray(args) || !args.every((a) => typeof a === 'string'))
      throw new Error(`${where}.args: a list of strings`);
    const env = p.env ?? [];
    if (
      !Array.isArray(env) ||
      !env.every(
        (e) =>
          typeof (e as { name?: unknown })?.name === 'string' && typeof (e as { value?: unknown }).value === 'string',
      )
    )
      throw new Error(`${where}.env: a list of {name, value} strings`);
    return {
      name,
      matchImages: match as string[],
      defaultCacheMs: cache,
      apiVersion: p.apiVersion as string,
      args: args as string[],
      env: env as CredentialProvider['env'],
      command: join(binDir, name),
    };
  });
}

/** Reads the config and checks each provider's binary is there and executable (upstream fails the kubelet's start otherwise). */
export async function loadCredentialProviders(configPath: string, binDir: string): Promise<CredentialProvider[]> {
  let text: string;
  try {
    text = await readTextBounded(configPath, MAX_CONFIG_BYTES);
  } catch (err) {
    throw new Error(`failed to read the image credential provider config "${configPath}": ${messageOf(err)}`);
  }
  let providers: CredentialProvider[];
  try {
    providers = parseCredentialProviderConfig(text, binDir);
  } catch (err) {
    throw new Error(`invalid image credential provider config "${configPath}": ${messageOf(err)}`);
  }
  for (const p of providers) {
    await access(p.command, constants.X_OK).catch((err: unknown) => {
      throw new Error(`error inspecting binary executable "${p.command}": ${messageOf(err)}`);
    });
  }
  return providers;
}

/** A provider's answer, checked (pure): the keyring entries, for whom they hold and how long (ms; undefined: the default). */
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

/** The node's credential providers: credentials for an image, from cache or a plugin run. */
export class CredentialProviders {
  private readonly cache = new Map<string, Cached>();
  private readonly running = new Map<string, Promise<{ image: string; entries: KeyringEntry[] }>>();
  constructor(
    private readonly providers: CredentialProvider[],
    private readonly d: { logger: Logger; now?: () => number },
  ) {}

  /** The providers of `configPath` (binaries under `binDir`), checked; throws as upstream fails the kubelet's start. */
  static async fromFiles(
    configPath: string,
    binDir: string,
    d: { logger: Logger; now?: () => number },
  ): Promise<CredentialProviders> {
    try {
      return new CredentialProviders(await loadCredentialProviders(configPath, binDir), d);
    } catch (err) {
      throw new Error(`failed to register CRI auth plugins: ${messageOf(err)}`, { cause: err });
    }
  }

  private now(): number {
    return (this.d.now ?? Date.now)();
  }

  /** The credentials every matching provider gives for `image`, most specific first per provider. */
  async credentialsFor(image: string): Promise<AuthConfig[]> {
    const out: AuthConfig[] = [];
    for (const p of this.providers) {
      if (!p.matchImages.some((m) => keyMatches(m, image))) continue;
      try {
        out.push(...credentialsOf(await this.entries(p, image), image));
      } catch (err) {
        this.d.logger.warn(
          { provider: p.name, image, err: messageOf(err) },
          'failed getting credential from external registry credential provider',
        );
      }
    }
    return out;
  }

  private cached(p: CredentialProvider, image: string): KeyringEntry[] | undefined {
    const now = this.now();
    for (const key of [
      `${p.name}\0image\0${image}`,
      `${p.name}\0registry\0${imageRegistry(image).host}`,
      `${p.name}\0global`,
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
  private async entries(p: CredentialProvider, image: string): Promise<KeyringEntry[]> {
    const key = `${p.name}\0${imageRegistry(image).host}`;
    for (;;) {
      const hit = this.cached(p, image);
      if (hit) return hit;
      const inflight = this.running.get(key);
      if (!inflight) break;
      const r = await inflight.catch(() => undefined);
      if (r?.image === image) return r.entries;
    }
    const run = this.run(p, image).finally(() => this.running.delete(key));
    this.running.set(key, run);
    return (await run).entries;
  }

  private async run(p: CredentialProvider, image: string): Promise<{ image: string; entries: KeyringEntry[] }> {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const { name, value } of p.env) env[name] = value;
    const out = await runPlugin({
      command: p.command,
      args: p.args,
      env,
      stdin: JSON.stringify({ apiVersion: p.apiVersion, kind: 'CredentialProviderRequest', image }),
      timeoutMs: RUN_TIMEOUT_MS,
      maxBytes: MAX_OUTPUT_BYTES,
      what: 'image credential provider',
    });
    let r: ReturnType<typeof parseCredentialProviderResponse>;
    try {
      r = parseCredentialProviderResponse(out, p.apiVersion);
    } catch (err) {
      throw new Error(`image credential provider ${p.name}: ${messageOf(err)}`);
    }
    const ttl = r.cacheMs ?? p.defaultCacheMs;
    if (ttl > 0) {
      const key =
        r.cacheKeyType === 'Image'
          ? `${p.name}\0image\0${image}`
          : r.cacheKeyType === 'Registry'
            ? `${p.name}\0registry\0${imageRegistry(image).host}`
            : `${p.name}\0global`;
      // Bounded: a node pulls from few registries, but every image could be its own key.
      if (this.cache.size >= 1024) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(key, { entries: r.entries, expiresAt: this.now() + ttl });
    }
    return { image, entries: r.entries };
  }
}
