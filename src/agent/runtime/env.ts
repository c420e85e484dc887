/**
 * Container environment (upstream kubelet_pods.go makeEnvironmentVariables, the parts that need no
 * apiserver): literal values, fieldRef (metadata, spec, status fields), resourceFieldRef, and
 * $(VAR) expansion in env values, command and args (upstream third_party/forked/golang/expansion).
 * configMapKeyRef / secretKeyRef / envFrom need the API: they are reported as a config error.
 * Pure.
 */
import type { Container, Pod } from '../../api/types.js';
import { bytes, milliCpu } from '../../api/quantity.js';

/** What fieldRef may read beyond the pod itself. */
export interface EnvContext { podIPs: string[]; hostIPs: string[]; nodeName: string; nodeAllocatable?: { cpuMilli: number; memoryBytes: number } }

/** A resolved env, or the reason it cannot be built (upstream CreateContainerConfigError). */
export type EnvResult = { ok: true; env: { key: string; value: string }[] } | { ok: false; message: string };

/** Expands $(VAR) using `lookup`; $$ escapes; unknown references stay as written. */
export function expand(input: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const ch = input[i];
    if (ch !== '$' || i + 1 >= input.length) { out += ch; continue; }
    const next = input[i + 1];
    if (next === '$') { out += '$'; i++; continue; }
    if (next === '(') {
      const end = input.indexOf(')', i + 2);
      if (end < 0) { out += input.slice(i); break; }
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

function fieldValue(pod: Pod, path: string, ctx: EnvContext): string | undefined {
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (m) return (pod.metadata[m[1] as 'labels' | 'annotations'] ?? {})[m[2]] ?? '';
  switch (path) {
    case 'metadata.name': return pod.metadata.name ?? '';
    case 'metadata.namespace': return pod.metadata.namespace ?? '';
    case 'metadata.uid': return pod.metadata.uid ?? '';
    case 'spec.nodeName': return (pod.spec.nodeName as string | undefined) ?? ctx.nodeName;
    case 'spec.serviceAccountName': return (pod.spec.serviceAccountName as string | undefined) ?? '';
    case 'status.podIP': return ctx.podIPs[0] ?? '';
    case 'status.podIPs': return ctx.podIPs.join(',');
    case 'status.hostIP': return ctx.hostIPs[0] ?? '';
    case 'status.hostIPs': return ctx.hostIPs.join(',');
    default: return undefined;
  }
}

function resourceValue(c: Container, ref: { resource: string; divisor?: string }, ctx: EnvContext): string | undefined {
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

/** The container's env, in order, each value expanded against the ones before it. */
export function containerEnv(pod: Pod, c: Container, ctx: EnvContext): EnvResult {
  const env: { key: string; value: string }[] = [];
  const seen = new Map<string, string>();
  if ((c.envFrom as unknown[] | undefined)?.length) return { ok: false, message: 'envFrom needs an apiserver (no kubeconfig configured)' };
  for (const e of c.env ?? []) {
    let value: string | undefined;
    if (e.valueFrom === undefined) value = expand(e.value ?? '', (n) => seen.get(n));
    else {
      const from = e.valueFrom as { fieldRef?: { fieldPath: string }; resourceFieldRef?: { containerName?: string; resource: string; divisor?: string }; configMapKeyRef?: { name: string }; secretKeyRef?: { name: string } };
      if (from.fieldRef) value = fieldValue(pod, from.fieldRef.fieldPath, ctx);
      else if (from.resourceFieldRef) {
        const target = from.resourceFieldRef.containerName ? [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].find((x) => x.name === from.resourceFieldRef!.containerName) : c;
        value = target ? resourceValue(target, from.resourceFieldRef, ctx) : undefined;
      } else if (from.configMapKeyRef) return { ok: false, message: `couldn't get configMap ${pod.metadata.namespace}/${from.configMapKeyRef.name}: no apiserver configured` };
      else if (from.secretKeyRef) return { ok: false, message: `couldn't get secret ${pod.metadata.namespace}/${from.secretKeyRef.name}: no apiserver configured` };
      if (value === undefined) return { ok: false, message: `unsupported valueFrom for env ${e.name}` };
    }
    seen.set(e.name, value);
    env.push({ key: e.name, value });
  }
  return { ok: true, env };
}
