/**
 * A lean Prometheus registry: counters, gauges and histograms with labels, rendered in the text
 * format by prom-text.ts, and the process_* / nodejs_* metrics read at scrape time.
 *
 * Why not prom-client: it held ~2 MiB of heap for what the kubelet uses, and its default
 * metrics keep an event-loop-delay monitor that wakes the process every 10 ms (~0.3 % of a core
 * on an idle node) and a GC observer. Everything here costs nothing between scrapes but the
 * increments themselves.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { renderFamilies, promNumber, type Family, type Sample } from './prom-text.js';

type LabelValues<L extends string> = Partial<Record<L, string>>;

/** One metric family of the registry. */
interface Collectable {
  family(): Family;
}

/** The series of one metric, by label values. */
abstract class Metric<L extends string, V> implements Collectable {
  protected readonly series = new Map<string, { labels: Record<string, string>; value: V }>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly L[],
  ) {}

  protected entry(labels: LabelValues<L> | undefined, init: () => V): { labels: Record<string, string>; value: V } {
    // Most series have one label (a CRI call's operation_type on every call): its value is the key, unjoined.
    const names = this.labelNames;
    const key =
      names.length === 1
        ? (labels?.[names[0]] ?? '')
        : names.length
          ? names.map((n) => labels?.[n] ?? '').join('\u0000')
          : '';
    let e = this.series.get(key);
    if (!e) {
      const own: Record<string, string> = {};
      for (const n of this.labelNames) if (labels?.[n] !== undefined) own[n] = labels[n];
      this.series.set(key, (e = { labels: own, value: init() }));
    }
    return e;
  }

  /** Forgets every series. */
  reset(): void {
    this.series.clear();
  }

  /** Forgets the series with these label values (a gone pod's). */
  delete(labels: LabelValues<L>): void {
    this.series.delete(this.labelNames.map((n) => labels[n] ?? '').join('\u0000'));
  }

  abstract family(): Family;
}

/** A monotonic counter; one without labels reads 0 before its first increment, as client_golang's. */
export class Counter<L extends string = never> extends Metric<L, { n: number }> {
  constructor(name: string, help: string, labelNames: readonly L[]) {
    super(name, help, labelNames);
    if (!labelNames.length) this.entry(undefined, () => ({ n: 0 }));
  }

  inc(labels?: LabelValues<L>, by = 1): void {
    this.entry(labels, () => ({ n: 0 })).value.n += by;
  }

  family(): Family {
    return {
      name: this.name,
      help: this.help,
      type: 'counter',
      samples: [...this.series.values()].map((e) => ({ labels: e.labels, value: e.value.n })),
    };
  }
}

/** A gauge; `collect` (if given) sets it just before each scrape. */
export class Gauge<L extends string = never> extends Metric<L, { n: number }> {
  constructor(
    name: string,
    help: string,
    labelNames: readonly L[],
    private readonly collect?: (g: Gauge<L>) => void,
  ) {
    super(name, help, labelNames);
  }

  set(labels: LabelValues<L> | undefined, value: number): void {
    this.entry(labels, () => ({ n: 0 })).value.n = value;
  }

  /** Adds `by` (negative to subtract). */
  add(labels: LabelValues<L> | undefined, by: number): void {
    this.entry(labels, () => ({ n: 0 })).value.n += by;
  }

  family(): Family {
    this.collect?.(this);
    return {
      name: this.name,
      help: this.help,
      type: 'gauge',
      samples: [...this.series.values()].map((e) => ({ labels: e.labels, value: e.value.n })),
    };
  }
}

/** Prometheus client_golang's DefBuckets: upstream's histograms that name no buckets of their own use these. */
export const DEFAULT_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * A histogram with fixed upper bounds (seconds, for the kubelet's); one without labels reads 0 before its first
 * observation, as client_golang's.
 */
export class Histogram<L extends string = never> extends Metric<L, { counts: number[]; sum: number; count: number }> {
  private readonly bounds: number[];

  constructor(name: string, help: string, labelNames: readonly L[], buckets: readonly number[]) {
    super(name, help, labelNames);
    this.bounds = [...buckets].sort((a, b) => a - b);
    if (!labelNames.length) this.entry(undefined, this.empty);
  }

  private readonly empty = () => ({ counts: this.bounds.map(() => 0), sum: 0, count: 0 });

  observe(labels: LabelValues<L> | undefined, value: number): void {
    const h = this.entry(labels, this.empty).value;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++)
      if (value <= bounds[i]) {
        h.counts[i]++;
        break;
      }
    h.sum += value;
    h.count++;
  }

  /** Starts timing; the returned function observes the seconds since. */
  startTimer(labels?: LabelValues<L>): () => void {
    const t0 = performance.now();
    return () => this.observe(labels, (performance.now() - t0) / 1000);
  }

  family(): Family {
    const samples: Sample[] = [];
    for (const { labels, value: h } of this.series.values()) {
      let cumulative = 0;
      this.bounds.forEach((b, i) => {
        cumulative += h.counts[i];
        samples.push({ suffix: '_bucket', labels: { ...labels, le: promNumber(b) }, value: cumulative });
      });
      samples.push({ suffix: '_bucket', labels: { ...labels, le: '+Inf' }, value: h.count });
      samples.push({ suffix: '_sum', labels, value: h.sum });
      samples.push({ suffix: '_count', labels, value: h.count });
    }
    return { name: this.name, help: this.help, type: 'histogram', samples };
  }
}

/** Families in registration order, rendered together. */
export class Registry {
  private readonly metrics: Collectable[] = [];

  register<M extends Collectable>(m: M): M {
    this.metrics.push(m);
    return m;
  }

  /**
   * The exposition text of `before` (families read at scrape time), every registered family, and what `after` makes of
   * those (families about the registry itself).
   */
  text(before: Family[] = [], after?: (families: readonly Family[]) => Family[]): string {
    const families = this.metrics.map((m) => m.family());
    return renderFamilies([...before, ...families, ...(after?.(families) ?? [])]);
  }
}

const single = (name: string, help: string, type: 'counter' | 'gauge', value: number): Family => ({
  name,
  help,
  type,
  samples: [{ value }],
});

/** The Linux /proc figures of this process (undefined where /proc cannot be read). */
function procFigures(): { openFds?: number; maxFds?: number; virtualBytes?: number } {
  const tryRead = <T>(f: () => T): T | undefined => {
    try {
      return f();
    } catch {
      return undefined;
    }
  };
  return {
    openFds: tryRead(() => readdirSync('/proc/self/fd').length - 1), // less the directory's own descriptor
    maxFds: tryRead(() =>
      Number(/^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? NaN),
    ),
    virtualBytes: tryRead(
      () => Number(/^VmSize:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? NaN) * 1024,
    ),
  };
}

/** process_* (as client_golang's process collector names them) and nodejs_* heap figures, read now. */
export function processFamilies(startTimeSeconds: number): Family[] {
  const cpu = process.cpuUsage();
  const mem = process.memoryUsage();
  const proc = procFigures();
  const families: Family[] = [
    single('process_cpu_user_seconds_total', 'Total user CPU time spent in seconds.', 'counter', cpu.user / 1e6),
    single('process_cpu_system_seconds_total', 'Total system CPU time spent in seconds.', 'counter', cpu.system / 1e6),
    single(
      'process_cpu_seconds_total',
      'Total user and system CPU time spent in seconds.',
      'counter',
      (cpu.user + cpu.system) / 1e6,
    ),
    single(
      'process_start_time_seconds',
      'Start time of the process since unix epoch in seconds.',
      'gauge',
      startTimeSeconds,
    ),
    single('process_resident_memory_bytes', 'Resident memory size in bytes.', 'gauge', mem.rss),
  ];
  if (proc.virtualBytes !== undefined && Number.isFinite(proc.virtualBytes))
    families.push(single('process_virtual_memory_bytes', 'Virtual memory size in bytes.', 'gauge', proc.virtualBytes));
  if (proc.openFds !== undefined)
    families.push(single('process_open_fds', 'Number of open file descriptors.', 'gauge', proc.openFds));
  if (proc.maxFds !== undefined && Number.isFinite(proc.maxFds))
    families.push(single('process_max_fds', 'Maximum number of open file descriptors.', 'gauge', proc.maxFds));
  const [major, minor, patch] = process.versions.node.split('.');
  families.push(
    single('nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.', 'gauge', mem.heapTotal),
    single('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.', 'gauge', mem.heapUsed),
    single('nodejs_external_memory_bytes', 'Node.js external memory size in bytes.', 'gauge', mem.external),
    {
      name: 'nodejs_version_info',
      help: 'Node.js version info.',
      type: 'gauge',
      samples: [{ labels: { version: process.version, major, minor, patch }, value: 1 }],
    },
  );
  return families;
}

/**
 * component-base's own families about a registry (registered_metrics_total, disabled_metrics_total,
 * hidden_metrics_total, beta): how many of `families` are of each stability level, as their help texts begin
 * (`[ALPHA] …`; the process figures have none). No metric is disabled or hidden here. Pure.
 */
export function registryFamilies(families: readonly Family[]): Family[] {
  const levels = new Map<string, number>();
  for (const f of families) {
    const level = /^\[([A-Z]+)\] /.exec(f.help)?.[1];
    if (level) levels.set(level, (levels.get(level) ?? 0) + 1);
  }
  return [
    {
      name: 'registered_metrics_total',
      help: '[BETA] The count of registered metrics broken by stability level and deprecation version.',
      type: 'counter',
      samples: [...levels].map(([level, n]) => ({
        labels: { deprecated_version: '', stability_level: level },
        value: n,
      })),
    },
    single('disabled_metrics_total', '[BETA] The count of disabled metrics.', 'counter', 0),
    single('hidden_metrics_total', '[BETA] The count of hidden metrics.', 'counter', 0),
  ];
}
