import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { nodeCpuNs, nodeMemory, nodeNetwork, nodeRlimit } from '../../../src/agent/stats/node-sources.js';

describe('node figures from /proc', () => {
  it('counts processes and reads the pid limit', () => {
    const r = nodeRlimit();
    expect(r.maxpid).toBe(Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim()));
    const pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length;
    // Processes come and go between the two reads.
    expect(Math.abs(r.curproc - pids)).toBeLessThan(20);
    expect(r.curproc).toBeGreaterThan(1);
  });

  it('reads cumulative CPU, memory and interfaces', () => {
    const a = nodeCpuNs();
    let spin = 0;
    for (let t = Date.now(); Date.now() - t < 30;) spin++;
    expect(spin).toBeGreaterThan(0);
    expect(nodeCpuNs()).toBeGreaterThan(a);
    const m = nodeMemory();
    expect(m.capacity).toBeGreaterThan(0);
    expect(m.workingSet).toBeLessThanOrEqual(m.usage);
    expect(m.available).toBe(m.capacity - m.workingSet);
    expect(nodeNetwork().interfaces.every((i) => i.name !== 'lo')).toBe(true);
  });
});
