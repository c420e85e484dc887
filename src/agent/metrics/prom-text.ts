/** The Prometheus text exposition format (0.0.4), pure: families of samples, optionally timestamped. */
import { compareStrings } from '../../lib/compare.js';

/** One sample: labels, value, optional timestamp (ms); `suffix` names a histogram's _bucket / _sum / _count series. */
export interface Sample {
  labels?: Record<string, string>;
  value: number;
  timestampMs?: number;
  suffix?: '_bucket' | '_sum' | '_count';
}
/** A metric family. */
export interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  samples: Sample[];
}

const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
/** A number as Prometheus (and Go's strconv) writes it. */
export const promNumber = (v: number): string =>
  Number.isFinite(v) ? String(v) : v > 0 ? '+Inf' : v < 0 ? '-Inf' : 'NaN';

function renderLabels(labels: Record<string, string> | undefined): string {
  if (!labels) return '';
  const names = Object.keys(labels);
  if (!names.length) return '';
  names.sort(compareStrings); // as client_golang sorts label pairs
  return `{${names.map((k) => `${k}="${esc(labels[k])}"`).join(',')}}`;
}

/** Renders families; a family without samples is still announced (HELP/TYPE), as client_golang does. */
export function renderFamilies(families: Family[]): string {
  const out: string[] = [];
  for (const f of families) {
    out.push(`# HELP ${f.name} ${f.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples)
      out.push(
        `${f.name}${s.suffix ?? ''}${renderLabels(s.labels)} ${promNumber(s.value)}${s.timestampMs !== undefined ? ` ${s.timestampMs}` : ''}`,
      );
  }
  return `${out.join('\n')}\n`;
}
