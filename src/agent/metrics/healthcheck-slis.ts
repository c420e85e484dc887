/**
 * The component SLIs (upstream component-base metrics/prometheus/slis; ComponentSLIs, GA): each run of /healthz records
 * every check's result, kubernetes_healthcheck{name,type} (1 passed, 0 failed, the last run) and
 * kubernetes_healthchecks_total{name,status,type} (success / error), served at /metrics/slis. A DELETE there resets
 * them, as upstream's handler with reset does. Only what was observed is served (no family without samples).
 */
import type { Family } from './prom-text.js';

/** One check's result in a run. */
export interface HealthcheckResult {
  name: string;
  ok: boolean;
}

/** The healthcheck SLIs since start (or the last reset). */
export class HealthcheckSlis {
  /** By check name and type: 1 when the last run passed. */
  private readonly last = new Map<string, { name: string; type: string; value: number }>();
  /** By check name, type and status: how many runs. */
  private readonly totals = new Map<string, { name: string; type: string; status: string; count: number }>();

  /** Records a run of the `type` endpoint (healthz). */
  observe(type: string, results: readonly HealthcheckResult[]): void {
    for (const r of results) {
      const status = r.ok ? 'success' : 'error';
      this.last.set(`${r.name}\0${type}`, { name: r.name, type, value: r.ok ? 1 : 0 });
      const key = `${r.name}\0${type}\0${status}`;
      const total = this.totals.get(key) ?? { name: r.name, type, status, count: 0 };
      total.count++;
      this.totals.set(key, total);
    }
  }

  reset(): void {
    this.last.clear();
    this.totals.clear();
  }

  /** The families with samples, under upstream's names and help texts. */
  families(): Family[] {
    const families: Family[] = [
      {
        name: 'kubernetes_healthcheck',
        help: '[STABLE] This metric records the result of a single healthcheck.',
        type: 'gauge',
        samples: [...this.last.values()].map((s) => ({ labels: { name: s.name, type: s.type }, value: s.value })),
      },
      {
        name: 'kubernetes_healthchecks_total',
        help: '[STABLE] This metric records the results of all healthcheck.',
        type: 'counter',
        samples: [...this.totals.values()].map((s) => ({
          labels: { name: s.name, status: s.status, type: s.type },
          value: s.count,
        })),
      },
    ];
    return families.filter((f) => f.samples.length);
  }
}
