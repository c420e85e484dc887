/**
 * What /flagz shows (component-base zpages/flagz): every flag tskubelet implements with the value
 * in effect, formatted as pflag prints values (`[a,b]` lists, `k=v` maps, Go durations), the
 * KubeletConfiguration's value for flags that set a field. Pure.
 */
import type { Kind } from './config-flags.js';
import { configFlags } from './config-flags.js';
import { kubeletFlagKinds, type ParsedFlags } from './flags.js';
import type { KubeletConfiguration } from './schema.js';

const camel = (name: string) => name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** A value as pflag's Value.String() prints it. */
function flagText(kind: Kind, value: unknown): string {
  if (value === undefined || value === null)
    return kind === 'list' ? '[]' : kind === 'bool' || kind === 'version' ? 'false' : '';
  if (Array.isArray(value)) {
    if (kind === 'taints')
      return (value as { key: string; value?: string; effect: string }[])
        .map((t) => `${t.key}${t.value === undefined ? '' : `=${t.value}`}:${t.effect}`)
        .join(',');
    return `[${value.join(',')}]`;
  }
  if (typeof value === 'object')
    return Object.entries(value as Record<string, unknown>)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`)
      .join(',');
  return String(value as string | number | boolean);
}

function at(config: unknown, path: readonly string[]): unknown {
  let value = config;
  for (const key of path) value = (value as Record<string, unknown> | undefined)?.[key];
  return value;
}

/** Flag name → the value in effect. */
export function flagzValues(parsed: ParsedFlags, kc: KubeletConfiguration): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [name, { path, kind }] of Object.entries(configFlags)) values[name] = flagText(kind, at(kc, path));
  for (const [name, kind] of Object.entries(kubeletFlagKinds))
    values[name] = flagText(kind, (parsed.flags as Record<string, unknown>)[camel(name)]);
  return values;
}
