/**
 * Container environment (upstream kubelet_pods.go makeEnvironmentVariables): envFrom
 * (configMapRef / secretRef, with prefix and optional), then env — literal values, fieldRef
 * (metadata, spec, status fields), resourceFieldRef, configMapKeyRef / secretKeyRef, fileKeyRef — each value
 * expanded with $(VAR) against the variables before it and the service variables; then the
 * service link variables not already set. The API objects come prefetched in `ctx.objects`;
 * without them (no apiserver) a reference is a config error. Pure.
 */
import { isUtf8 } from 'node:buffer';
import type { Container, Pod } from '../../api/types.js';
import { bytes, milliCpu } from '../../api/quantity.js';
import { envFileKey, parseEnvFile, type FileKeyRef } from './env-file.js';
import { envValueText } from '../../cri/env-value.js';

/** What fieldRef may read beyond the pod itself. */
export interface EnvContext {
  podIPs: string[];
  hostIPs: string[];
  nodeName: string;
  nodeAllocatable?: { cpuMilli: number; memoryBytes: number };
  objects?: PodObjects;
  /** The env files fileKeyRef reads (env-file.ts readEnvFiles): content, null when unreadable. */
  envFiles?: ReadonlyMap<string, string | null>;
}

/** The API objects a pod's env refers to, fetched beforehand: null = not found. */
export interface PodObjects {
  configMaps: Map<string, { data?: Record<string, string>; binaryData?: Record<string, string> } | null>;
  /** Secret data values are base64, as the API returns them. */
  secrets: Map<string, { data?: Record<string, string> } | null>;
  /** Service link variables (service-env.ts), already filtered by enableServiceLinks. */
  serviceEnv: Record<string, string>;
}

const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/**
 * An env value: text, or the bytes of a Secret value that is not UTF-8, which go to the runtime as they are (upstream
 * v1.36.2, kubernetes/kubernetes#139168: CRI's env value is `bytes` on the wire).
 */
export type EnvValue = string | Uint8Array;

/** A resolved env, or the reason it cannot be built (upstream CreateContainerConfigError). */
export type EnvResult = { ok: true; env: { key: string; value: EnvValue }[] } | { ok: false; message: string };

/** A Secret's value (base64, as the API returns it): its text when it is UTF-8, else its bytes. */
function secretValue(base64: string): EnvValue {
  const data = Buffer.from(base64, 'base64');
  return isUtf8(data) ? data.toString('utf8') : data;
}

/** Expands $(VAR) using `lookup`; $$ escapes; unknown references stay as written. */
export function expand(input: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const ch = input[i];
    if (ch !== '$' || i + 1 >= input.length) {
      out += ch;
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i++;
      continue;
    }
    if (next === '(') {
      const end = input.indexOf(')', i + 2);
      if (end < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, end);
      const v = lookup(name);
      out += v ?? `$(${name})`;
      i = end;
      continue;
    }
    out += ch;
  }
  return out;
}

/** The value of a downward-API fieldRef path (env and volumes); undefined when unsupported. */
export function fieldValue(pod: Pod, path: string, ctx: EnvContext): string | undefined {
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (m) return (pod.metadata[m[1] as 'labels' | 'annotations'] ?? {})[m[2]] ?? '';
  switch (path) {
    case 'metadata.name':
      return pod.metadata.name ?? '';
    case 'metadata.namespace':
      return pod.metadata.namespace ?? '';
    case 'metadata.uid':
      return pod.metadata.uid ?? '';
    case 'spec.nodeName':
      return (pod.spec.nodeName as string | undefined) ?? ctx.nodeName;
    case 'spec.serviceAccountName':
      return (pod.spec.serviceAccountName as string | undefined) ?? '';
    case 'status.podIP':
      return ctx.podIPs[0] ?? '';
    case 'status.podIPs':
      return ctx.podIPs.join(',');
    case 'status.hostIP':
      return ctx.hostIPs[0] ?? '';
    case 'status.hostIPs':
      return ctx.hostIPs.join(',');
    default:
      return undefined;
  }
}

/** The value of a resourceFieldRef for container `c` (limits default to the node's allocatable). */
export function resourceValue(
  c: Container,
  ref: { resource: string; divisor?: string },
  ctx: EnvContext,
): string | undefined {
  const [kind, name] = ref.resource.split('.') as ['limits' | 'requests', string];
  const raw = c.resources?.[kind]?.[name];
  if (name === 'cpu') {
    const milli = milliCpu(raw) ?? (kind === 'limits' ? ctx.nodeAllocatable?.cpuMilli : 0) ?? 0;
    const div = milliCpu(ref.divisor ?? '1') || 1000;
    return String(Math.ceil(milli / div));
  }
  if (name === 'memory' || name === 'ephemeral-storage') {
    const b = bytes(raw) ?? (kind === 'limits' && name === 'memory' ? ctx.nodeAllocatable?.memoryBytes : 0) ?? 0;
    const div = bytes(ref.divisor ?? '1') || 1;
    return String(Math.ceil(b / div));
  }
  return undefined;
}

type KeyRef = { name: string; key: string; optional?: boolean };

/** A value from a ConfigMap or Secret key; undefined = skip (optional); string = error message via `fail`. */
function keyValue(
  kind: 'ConfigMap' | 'Secret',
  ref: KeyRef,
  o: { ns: string; objects: PodObjects | undefined },
): { value?: EnvValue; error?: string } {
  const { ns, objects } = o;
  if (!objects)
    return {
      error: `couldn't get ${kind === 'ConfigMap' ? 'configMap' : 'secret'} ${ns}/${ref.name}: no apiserver configured`,
    };
  const obj = kind === 'ConfigMap' ? objects.configMaps.get(ref.name) : objects.secrets.get(ref.name);
  if (!obj)
    return ref.optional ? {} : { error: `${kind === 'ConfigMap' ? 'configmap' : 'secret'} "${ref.name}" not found` };
  // A ConfigMap's binaryData is not read: upstream looks the key up in its data only.
  const raw = obj.data?.[ref.key];
  if (raw === undefined)
    return ref.optional ? {} : { error: `couldn't find key ${ref.key} in ${kind} ${ns}/${ref.name}` };
  return { value: kind === 'Secret' ? secretValue(raw) : raw };
}

/** The container's env: envFrom, then env in order (later names replace earlier ones), then service links. */
export function containerEnv(pod: Pod, c: Container, ctx: EnvContext): EnvResult {
  const ns = pod.metadata.namespace ?? 'default';
  const vars = new Map<string, EnvValue>();
  const services = ctx.objects?.serviceEnv ?? {};
  for (const from of (c.envFrom ?? []) as {
    prefix?: string;
    configMapRef?: { name: string; optional?: boolean };
    secretRef?: { name: string; optional?: boolean };
  }[]) {
    const kind = from.configMapRef ? 'ConfigMap' : 'Secret';
    const ref = from.configMapRef ?? from.secretRef;
    if (!ref) continue;
    if (!ctx.objects)
      return {
        ok: false,
        message: `couldn't get ${kind === 'ConfigMap' ? 'configMap' : 'secret'} ${ns}/${ref.name}: no apiserver configured`,
      };
    const obj = kind === 'ConfigMap' ? ctx.objects.configMaps.get(ref.name) : ctx.objects.secrets.get(ref.name);
    if (!obj) {
      if (ref.optional) continue;
      return { ok: false, message: `${kind === 'ConfigMap' ? 'configmap' : 'secret'} "${ref.name}" not found` };
    }
    for (const [k, v] of Object.entries(obj.data ?? {})) {
      const name = `${from.prefix ?? ''}${k}`;
      if (!ENV_NAME.test(name)) continue;
      vars.set(name, kind === 'Secret' ? secretValue(v) : v);
    }
  }
  const lookup = (n: string) => {
    const value = vars.get(n);
    return value === undefined ? services[n] : envValueText(value);
  };
  for (const e of c.env ?? []) {
    let value: EnvValue | undefined;
    if (e.valueFrom === undefined) value = expand(e.value ?? '', lookup);
    else {
      const from = e.valueFrom as {
        fieldRef?: { fieldPath: string };
        resourceFieldRef?: { containerName?: string; resource: string; divisor?: string };
        configMapKeyRef?: KeyRef;
        secretKeyRef?: KeyRef;
        fileKeyRef?: FileKeyRef;
      };
      if (from.fileKeyRef) {
        const ref = from.fileKeyRef;
        const text = ctx.envFiles?.get(envFileKey(ref));
        const found = text === undefined || text === null ? undefined : parseEnvFile(text).get(ref.key);
        if (found === undefined) {
          if (ref.optional) continue;
          return {
            ok: false,
            message:
              text === undefined || text === null
                ? `couldn't read env file ${ref.path} in volume ${ref.volumeName} for env ${e.name}`
                : `couldn't find key ${ref.key} in env file ${ref.path} in volume ${ref.volumeName}`,
          };
        }
        value = found;
      } else if (from.fieldRef) value = fieldValue(pod, from.fieldRef.fieldPath, ctx);
      else if (from.resourceFieldRef) {
        const target = from.resourceFieldRef.containerName
          ? [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].find(
              (x) => x.name === from.resourceFieldRef!.containerName,
            )
          : c;
        value = target ? resourceValue(target, from.resourceFieldRef, ctx) : undefined;
      } else if (from.configMapKeyRef || from.secretKeyRef) {
        const r = keyValue(
          from.configMapKeyRef ? 'ConfigMap' : 'Secret',
          (from.configMapKeyRef ?? from.secretKeyRef)!,
          { ns, objects: ctx.objects },
        );
        if (r.error) return { ok: false, message: r.error };
        if (r.value === undefined) continue;
        value = r.value;
      }
      if (value === undefined) return { ok: false, message: `unsupported valueFrom for env ${e.name}` };
    }
    vars.delete(e.name);
    vars.set(e.name, value);
  }
  for (const [k, v] of Object.entries(services)) if (!vars.has(k)) vars.set(k, v);
  return { ok: true, env: [...vars].map(([key, value]) => ({ key, value })) };
}
