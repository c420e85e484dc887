/**
 * The credential provider config (upstream pkg/credentialprovider/plugin/config.go): a
 * CredentialProviderConfig file, or since v1.36 a directory of them merged in name order, each
 * provider checked as upstream's validation checks it (its first error thrown, naming the field),
 * and the hash of what was read, which `kubelet_credential_provider_config_info` reports.
 */
import { createHash } from 'node:crypto';
import { access, constants, readdir, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { parseDuration } from '../../lib/duration.js';
import { messageOf } from '../../lib/errors.js';
import { parseYamlBounded, readBytesBounded } from '../../lib/bounded-yaml.js';

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
const MAX_CONFIG_BYTES = 1024 * 1024;

/** What a provider asks of the pod's service account (tokenAttributes). */
export interface TokenAttributes {
  audience: string;
  requireServiceAccount: boolean;
  requiredAnnotationKeys: string[];
  optionalAnnotationKeys: string[];
  cacheType: 'ServiceAccount' | 'Token';
}

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
  tokenAttributes?: TokenAttributes;
}

const QUALIFIED_NAME =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** A provider's tokenAttributes, checked as upstream's validation does (its first error thrown). */
function parseTokenAttributes(raw: unknown, where: string, apiVersion: string): TokenAttributes {
  const t = (raw ?? {}) as Record<string, unknown>;
  const at = `${where}.tokenAttributes`;
  if (typeof t.serviceAccountTokenAudience !== 'string' || !t.serviceAccountTokenAudience)
    throw new Error(`${at}.serviceAccountTokenAudience: serviceAccountTokenAudience is required`);
  if (typeof t.requireServiceAccount !== 'boolean')
    throw new Error(`${at}.requireServiceAccount: requireServiceAccount is required`);
  if (apiVersion !== 'credentialprovider.kubelet.k8s.io/v1')
    throw new Error(`${at}: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version`);
  const keys = (field: string) => {
    const v = t[field] ?? [];
    if (!Array.isArray(v) || !v.every((k) => typeof k === 'string'))
      throw new Error(`${at}.${field}: a list of strings`);
    const seen = new Set<string>();
    for (const k of v as string[]) {
      const name = k.toLowerCase();
      if (!QUALIFIED_NAME.test(name) || name.split('/').at(-1)!.length > 63 || name.length > 317)
        throw new Error(`${at}.${field}: Invalid value: ${JSON.stringify(k)}: must be a qualified name`);
      if (seen.has(k)) throw new Error(`${at}.${field}: Duplicate value: ${JSON.stringify(k)}`);
      seen.add(k);
    }
    return v as string[];
  };
  const required = keys('requiredServiceAccountAnnotationKeys');
  const optional = keys('optionalServiceAccountAnnotationKeys');
  if (!t.requireServiceAccount && required.length)
    throw new Error(
      `${at}.requiredServiceAccountAnnotationKeys: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set`,
    );
  const both = required.filter((k) => optional.includes(k)).sort();
  if (both.length)
    throw new Error(`${at}: ${JSON.stringify(both)}: annotation keys cannot be both required and optional`);
  if (t.cacheType === undefined || t.cacheType === '')
    throw new Error(
      `${at}.cacheType: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token`,
    );
  if (t.cacheType !== 'ServiceAccount' && t.cacheType !== 'Token')
    throw new Error(
      `${at}.cacheType: Unsupported value: ${JSON.stringify(t.cacheType)}: supported values: "ServiceAccount", "Token"`,
    );
  return {
    audience: t.serviceAccountTokenAudience,
    requireServiceAccount: t.requireServiceAccount,
    requiredAnnotationKeys: required,
    optionalAnnotationKeys: optional,
    cacheType: t.cacheType,
  };
}

/**
 * The providers of a CredentialProviderConfig document (pure); throws naming what is wrong, as upstream's validation
 * does.
 */
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
      ...(p.tokenAttributes !== undefined
        ? { tokenAttributes: parseTokenAttributes(p.tokenAttributes, where, p.apiVersion as string) }
        : {}),
    };
  });
}

/** The providers of the config, and its hash as upstream's `kubelet_credential_provider_config_info` names it. */
export interface LoadedCredentialProviderConfig {
  providers: CredentialProvider[];
  /** `sha256:<hex>` over each file read, its length (8 bytes, big-endian) then its bytes, in order. */
  hash: string;
}

/** The files of a config path: the file itself, or a directory's *.json, *.yaml and *.yml files in name order. */
async function configFiles(configPath: string): Promise<string[]> {
  if (!(await stat(configPath)).isDirectory()) return [configPath];
  const files = (await readdir(configPath, { withFileTypes: true }))
    .filter((e) => !e.isDirectory() && ['.json', '.yaml', '.yml'].includes(extname(e.name)))
    .map((e) => join(configPath, e.name))
    .sort();
  if (!files.length) throw new Error(`no configuration files found in directory "${configPath}"`);
  return files;
}

/**
 * Reads the config — one file, or every config file of a directory merged in name order, a
 * provider name at most once across them (upstream v1.36) — and checks each provider's binary is
 * there and executable (upstream fails the kubelet's start otherwise).
 */
export async function loadCredentialProviderConfig(
  configPath: string,
  binDir: string,
): Promise<LoadedCredentialProviderConfig> {
  const hash = createHash('sha256');
  const providers: CredentialProvider[] = [];
  let files: string[];
  try {
    files = await configFiles(configPath);
  } catch (err) {
    throw new Error(`failed to read the image credential provider config "${configPath}": ${messageOf(err)}`);
  }
  for (const file of files) {
    let bytes: Buffer;
    try {
      bytes = await readBytesBounded(file, MAX_CONFIG_BYTES);
    } catch (err) {
      throw new Error(`failed to read the image credential provider config "${file}": ${messageOf(err)}`);
    }
    const length = Buffer.alloc(8);
    length.writeBigUInt64BE(BigInt(bytes.length));
    hash.update(length).update(bytes);
    let found: CredentialProvider[];
    try {
      found = parseCredentialProviderConfig(bytes.toString('utf8'), binDir);
    } catch (err) {
      throw new Error(`invalid image credential provider config "${file}": ${messageOf(err)}`);
    }
    for (const p of found) {
      if (providers.some((q) => q.name === p.name))
        throw new Error(`duplicate provider name ${JSON.stringify(p.name)} found in configuration file(s)`);
      providers.push(p);
    }
  }
  for (const p of providers) {
    await access(p.command, constants.X_OK).catch((err: unknown) => {
      throw new Error(`error inspecting binary executable "${p.command}": ${messageOf(err)}`);
    });
  }
  return { providers, hash: `sha256:${hash.digest('hex')}` };
}
