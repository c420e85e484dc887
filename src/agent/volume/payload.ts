/**
 * The files of configMap, secret, downwardAPI and projected volumes (upstream MakePayload of each
 * plugin, CollectData of downwardAPI, collectData of projected). Pure: the API objects and the
 * service-account token come in, a payload or an upstream error message comes out.
 */
import type { Container, Pod } from '../../api/types.js';
import { fieldValue, resourceValue } from '../runtime/env.js';
import type { Payload } from './atomic-writer.js';
import { goQuote } from '../../lib/go-quote.js';

/** API default of every projection's defaultMode (0644). */
export const DEFAULT_MODE = 0o644;

/** A ConfigMap as the API returns it. */
export interface ConfigMapObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
  immutable?: boolean;
}
/** A Secret as the API returns it (data base64). */
export interface SecretObject {
  data?: Record<string, string>;
  immutable?: boolean;
}

/** core/v1 KeyToPath. */
export interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}
/** core/v1 DownwardAPIVolumeFile. */
export interface DownwardApiFile {
  path: string;
  mode?: number;
  fieldRef?: { fieldPath: string };
  resourceFieldRef?: { containerName?: string; resource: string; divisor?: string };
}

/** A payload, or the reason it cannot be built. */
export type PayloadResult = { ok: true; payload: Payload } | { ok: false; message: string };

function keyedPayload(
  kind: 'configmap' | 'secret',
  values: Map<string, Buffer>,
  o: { items?: KeyToPath[]; defaultMode: number; optional: boolean },
): PayloadResult {
  const payload: Payload = new Map();
  if (!o.items?.length) {
    for (const [k, data] of values) payload.set(k, { data, mode: o.defaultMode });
    return { ok: true, payload };
  }
  for (const item of o.items) {
    const data = values.get(item.key);
    if (!data) {
      if (o.optional) continue;
      return {
        ok: false,
        message:
          kind === 'configmap'
            ? `configmap references non-existent config key: ${item.key}`
            : `references non-existent secret key: ${item.key}`,
      };
    }
    payload.set(item.path, { data, mode: item.mode ?? o.defaultMode });
  }
  return { ok: true, payload };
}

/** A configMap volume's (or projection's) files; `cm` null = not found. */
export function configMapPayload(
  name: string,
  cm: ConfigMapObject | null,
  o: { items?: KeyToPath[]; defaultMode?: number; optional?: boolean },
): PayloadResult {
  if (!cm)
    return o.optional ? { ok: true, payload: new Map() } : { ok: false, message: `configmap "${name}" not found` };
  const values = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(cm.data ?? {})) values.set(k, Buffer.from(v, 'utf8'));
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) values.set(k, Buffer.from(v, 'base64'));
  return keyedPayload('configmap', values, {
    items: o.items,
    defaultMode: o.defaultMode ?? DEFAULT_MODE,
    optional: !!o.optional,
  });
}

/** A secret volume's (or projection's) files; `secret` null = not found. */
export function secretPayload(
  name: string,
  secret: SecretObject | null,
  o: { items?: KeyToPath[]; defaultMode?: number; optional?: boolean },
): PayloadResult {
  if (!secret)
    return o.optional ? { ok: true, payload: new Map() } : { ok: false, message: `secret "${name}" not found` };
  const values = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(secret.data ?? {})) values.set(k, Buffer.from(v, 'base64'));
  return keyedPayload('secret', values, {
    items: o.items,
    defaultMode: o.defaultMode ?? DEFAULT_MODE,
    optional: !!o.optional,
  });
}

/** Upstream fieldpath.FormatMap: sorted `key="value"` lines, joined by newlines. */
export function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${goQuote(m![k])}`)
    .join('\n');
}

/** Node facts the downward API may read. */
export interface DownwardContext {
  nodeName: string;
  hostIPs: string[];
  podIPs: string[];
  nodeAllocatable?: { cpuMilli: number; memoryBytes: number };
}

/** A downwardAPI volume's (or projection's) files. */
export function downwardApiPayload(
  pod: Pod,
  items: DownwardApiFile[],
  o: { defaultMode?: number; ctx: DownwardContext },
): PayloadResult {
  const payload: Payload = new Map();
  const envCtx = {
    podIPs: o.ctx.podIPs,
    hostIPs: o.ctx.hostIPs,
    nodeName: o.ctx.nodeName,
    nodeAllocatable: o.ctx.nodeAllocatable,
  };
  for (const item of items) {
    let value: string | undefined;
    if (item.fieldRef) {
      const path = item.fieldRef.fieldPath;
      if (path === 'metadata.labels') value = formatMap(pod.metadata.labels);
      else if (path === 'metadata.annotations') value = formatMap(pod.metadata.annotations);
      else value = fieldValue(pod, path, envCtx);
      if (value === undefined)
        return { ok: false, message: `error for volume item "${item.path}": unsupported fieldPath: ${path}` };
    } else if (item.resourceFieldRef) {
      const all: Container[] = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])];
      const c = all.find((x) => x.name === item.resourceFieldRef!.containerName);
      if (!c) return { ok: false, message: `container ${item.resourceFieldRef.containerName ?? ''} not found` };
      value = resourceValue(c, item.resourceFieldRef, envCtx);
      if (value === undefined)
        return { ok: false, message: `Unsupported container resource : ${item.resourceFieldRef.resource}` };
    } else continue;
    payload.set(item.path, { data: Buffer.from(value, 'utf8'), mode: item.mode ?? o.defaultMode ?? DEFAULT_MODE });
  }
  return { ok: true, payload };
}

/**
 * Merges projections into one payload (later sources do not replace earlier paths' data silently: last wins, as
 * upstream's map).
 */
export function mergePayloads(parts: Payload[]): Payload {
  const out: Payload = new Map();
  for (const p of parts) for (const [k, v] of p) out.set(k, v);
  return out;
}
