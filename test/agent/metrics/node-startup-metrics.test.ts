/** The node startup latency gauges, the moments as upstream's tracker test steps them. */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootTimeMs, NodeStartupTracker } from '../../../src/agent/metrics/node-startup-metrics.js';
import type { Gauge } from '../../../src/agent/metrics/registry.js';

function setup() {
  const gauges: Gauge[] = [];
  const metrics = { register: <M extends Gauge>(g: M) => (gauges.push(g), g) };
  let now = 1_000_000;
  const t = new NodeStartupTracker(metrics, { bootMs: now - 100, kubeletStartMs: now, now: () => now });
  const step = (ms: number) => (now += ms);
  const values = () =>
    Object.fromEntries(
      gauges.map((g) => [
        g.family().name.replace(/^kubelet_node_startup_|_seconds$/g, ''),
        g.family().samples[0].value,
      ]),
    );
  return { t, step, values };
}

describe('NodeStartupTracker', () => {
  it('every gauge is 0 until its moments are known', () => {
    expect(Object.values(setup().values())).toEqual([0, 0, 0, 0, 0]);
  });

  it('boot → start → first registration attempt → new Node → first Ready, each recorded once', () => {
    const { t, step, values } = setup();
    step(800);
    t.attemptRegister();
    step(300);
    t.attemptRegister();
    step(100);
    t.registeredNew();
    step(1100);
    t.nodeReady();
    step(700);
    t.nodeReady();
    t.registeredNew();
    expect(values()).toEqual({
      pre_kubelet_duration: 0.1,
      pre_registration_duration: 0.8,
      registration_duration: 0.4,
      post_registration_duration: 1.1,
      duration: 2.4,
    });
  });

  it('an existing Node (no registration seen) records nothing', () => {
    const { t, step, values } = setup();
    step(500);
    t.registeredNew();
    t.nodeReady();
    expect(Object.values(values())).toEqual([0, 0, 0, 0, 0]);
  });

  it("reads the boot time from /proc/stat's btime", () => {
    const f = join(mkdtempSync(join(tmpdir(), 'tsk-stat-')), 'stat');
    writeFileSync(f, 'cpu  1 2 3\nbtime 1700000000\nprocesses 5\n');
    expect(bootTimeMs(f)).toBe(1_700_000_000_000);
    expect(bootTimeMs(join(f, 'missing'))).toBeUndefined();
    expect(bootTimeMs()).toBeGreaterThan(0);
  });
});
