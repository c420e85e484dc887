/** Pressure stall information: the kernel's lines read as they are, the system's and a cgroup v2 group's files. */
import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cgroupPressure, parsePressure, systemPressure } from '../../src/lib/pressure.js';
import { pressureFamilies } from '../../src/agent/stats/cadvisor-details.js';

const text = [
  'some avg10=4.54 avg60=4.13 avg300=5.40 total=1914555210',
  'full avg10=0.50 avg60=0.25 avg300=0.10 total=12345',
  '',
].join('\n');

describe('pressure stall information', () => {
  it("reads the kernel's some and full lines: percentages and the cumulative microseconds", () => {
    expect(parsePressure(text)).toEqual({
      some: { avg10: 4.54, avg60: 4.13, avg300: 5.4, total: 1914555210 },
      full: { avg10: 0.5, avg60: 0.25, avg300: 0.1, total: 12345 },
    });
    // Kernels before 5.13 write no `full` line for CPU: zeros, as the kernel's later ones.
    expect(parsePressure(text.split('\n')[0])?.full).toEqual({ avg10: 0, avg60: 0, avg300: 0, total: 0 });
    expect(parsePressure('')).toBeUndefined();
  });

  it("reads a cgroup v2 group's files and the system's: what exists, nothing when none does", () => {
    const dir = mkdtempSync(join(tmpdir(), 'tsk-psi-'));
    try {
      writeFileSync(join(dir, 'cpu.pressure'), text);
      writeFileSync(join(dir, 'io.pressure'), text);
      expect(cgroupPressure(dir)).toEqual({ cpu: parsePressure(text), io: parsePressure(text) });
      mkdirSync(join(dir, 'proc'));
      expect(systemPressure(join(dir, 'proc'))).toBeUndefined();
      writeFileSync(join(dir, 'proc', 'memory'), text);
      expect(systemPressure(join(dir, 'proc'))).toEqual({ memory: parsePressure(text) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("exports cAdvisor's series: stalled is full, waiting is some, in seconds", () => {
    const families = pressureFamilies([{ labels: { id: '/' }, pressure: { cpu: parsePressure(text) } }], 1000);
    expect(families.map((f) => [f.name, f.samples[0].value])).toEqual([
      ['container_pressure_cpu_stalled_seconds_total', 0.012345],
      ['container_pressure_cpu_waiting_seconds_total', 1914.55521],
    ]);
  });
});
