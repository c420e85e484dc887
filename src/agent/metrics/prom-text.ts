/** The Prometheus text exposition format (0.0.4) with explicit timestamps, pure. */

/** One sample: labels, value, optional timestamp (ms). */
export interface Sample {
  labels?: Record<string, string>;
  value: number;
  timestampMs?: number;
}
/** A metric family. */
export interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  samples: Sample[];
}

const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const num = (v: number) => (Number.isFinite(v) ? String(v) : v > 0 ? '+Inf' : v < 0 ? '-Inf' : 'NaN');

/** Renders families; a family without samples is still announced (HELP/TYPE), as client_golang does. */
export function renderFamilies(families: Family[]): string {
  const out: string[] = [];
  for (const f of families) {
    out.push(`# HELP ${f.name} ${f.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) {
      const labels =
        s.labels && Object.keys(s.labels).length
          ? `{${Object.entries(s.labels)
              .sort(([a], [b]) => a.localeCompare(b))
              .map(([k, v]) => `${k}="${esc(v)}"`)
              .join(',')}}`
          : '';
      out.push(`${f.name}${labels} ${num(s.value)}${s.timestampMs !== undefined ? ` ${s.timestampMs}` : ''}`);
    }
  }
  return `${out.join('\n')}\n`;
}
