/**
 * The lean Prometheus registry: exact exposition of counters, gauges (with scrape-time collect)
 * and histograms (cumulative buckets, +Inf, _sum, _count), and promtool's verdict on a whole
 * registry with the process figures.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { Counter, Gauge, Histogram, processFamilies, Registry } from '../../../src/agent/metrics/registry.js';

describe('Registry', () => {
  it('renders counters by label values, in registration order', () => {
    const r = new Registry();
    const c = r.register(new Counter<'op'>('x_total', 'Things done.', ['op']));
    c.inc({ op: 'b' });
    c.inc({ op: 'a' }, 2);
    c.inc({ op: 'b' });
    const plain = r.register(new Counter('y_total', 'Plain.', []));
    plain.inc();
    expect(r.text()).toBe(
      [
        '# HELP x_total Things done.',
        '# TYPE x_total counter',
        'x_total{op="b"} 2',
        'x_total{op="a"} 2',
        '# HELP y_total Plain.',
        '# TYPE y_total counter',
        'y_total 1',
        '',
      ].join('\n'),
    );
  });

  it('collects gauges at scrape time, and a reset gauge loses the series that are gone', () => {
    const r = new Registry();
    let states: Record<string, number> = { running: 2, exited: 1 };
    r.register(
      new Gauge<'state'>('g', 'By state.', ['state'], (g) => {
        g.reset();
        for (const [state, n] of Object.entries(states)) g.set({ state }, n);
      }),
    );
    expect(r.text()).toContain('g{state="running"} 2\ng{state="exited"} 1\n');
    states = { running: 3 };
    expect(r.text()).toContain('g{state="running"} 3\n');
    expect(r.text()).not.toContain('exited');
  });

  it('renders histograms with cumulative buckets, +Inf, sum and count; escapes label values', () => {
    const r = new Registry();
    const h = r.register(new Histogram<'op'>('d_seconds', 'Durations.', ['op'], [1, 0.1]));
    h.observe({ op: 'a"b' }, 0.05);
    h.observe({ op: 'a"b' }, 0.5);
    h.observe({ op: 'a"b' }, 7);
    expect(r.text()).toBe(
      [
        '# HELP d_seconds Durations.',
        '# TYPE d_seconds histogram',
        'd_seconds_bucket{le="0.1",op="a\\"b"} 1',
        'd_seconds_bucket{le="1",op="a\\"b"} 2',
        'd_seconds_bucket{le="+Inf",op="a\\"b"} 3',
        'd_seconds_sum{op="a\\"b"} 7.55',
        'd_seconds_count{op="a\\"b"} 3',
        '',
      ].join('\n'),
    );
  });

  it('times with startTimer', async () => {
    const r = new Registry();
    const h = r.register(new Histogram('t_seconds', 'Timed.', [], [0.001, 10]));
    const end = h.startTimer();
    await new Promise((res) => setTimeout(res, 20));
    end();
    expect(r.text()).toContain('t_seconds_bucket{le="0.001"} 0\nt_seconds_bucket{le="10"} 1\n');
    expect(Number(/t_seconds_sum (\S+)/.exec(r.text())?.[1])).toBeGreaterThanOrEqual(0.015);
  });

  it('reads the process figures now, and promtool accepts the whole exposition', () => {
    const r = new Registry();
    r.register(new Counter<'op'>('kubelet_x_total', 'X.', ['op'])).inc({ op: 'a' });
    r.register(new Histogram('kubelet_y_seconds', 'Y.', [], [0.5])).observe(undefined, 1);
    const text = r.text(processFamilies(1_700_000_000));
    expect(text).toContain('process_start_time_seconds 1700000000\n');
    expect(Number(/^process_resident_memory_bytes (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(10 * 2 ** 20);
    expect(Number(/^process_open_fds (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(2);
    expect(Number(/^process_cpu_seconds_total (\S+)$/m.exec(text)?.[1])).toBeGreaterThan(0);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d+$/m);
    const p = spawnSync('promtool', ['check', 'metrics'], { input: text });
    expect([p.status, p.stdout.toString() + p.stderr.toString()]).toEqual([0, '']);
  });
});
