import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  loadavgTasks,
  nodeCpuNs,
  nodeMemory,
  nodeNetwork,
  nodeRlimit,
  vmstatFaults,
} from '../../../src/agent/stats/node-sources.js';

/** The number of entries in a directory, or undefined once it is gone. */
function readdirSyncOr(dir: string): number | undefined {
  try {
    return readdirSync(dir).length;
  } catch {
    return undefined;
  }
}

describe('node figures from /proc', () => {
  it('reads the task limit and the running tasks as upstream (threads included)', () => {
    const r = nodeRlimit();
    const limit = (f: string) => Number(readFileSync(f, 'utf8').trim());
    expect(r.maxpid).toBe(Math.min(limit('/proc/sys/kernel/pid_max'), limit('/proc/sys/kernel/threads-max')));
    // Every thread of every process: at least this test's own threads beyond the process count.
    const tasks = readdirSync('/proc')
      .filter((n) => /^\d+$/.test(n))
      .reduce((n, pid) => n + (readdirSyncOr(`/proc/${pid}/task`) ?? 0), 0);
    expect(Math.abs(r.curproc - tasks)).toBeLessThan(Math.max(20, tasks / 10)); // tasks come and go between the reads
    expect(loadavgTasks('1.36 3.49 4.53 2/3518 3715089\n')).toBe(3518);
    expect(loadavgTasks('garbage')).toBeUndefined();
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
    // RSS (anonymous pages) and the page faults since boot, as the root cgroup counts them.
    expect(m.rss).toBeGreaterThan(0);
    expect(m.rss).toBeLessThanOrEqual(m.usage);
    expect(m.pageFaults).toBeGreaterThan(1000);
    expect(m.majorPageFaults).toBeGreaterThanOrEqual(0);
    expect(nodeNetwork().interfaces.every((i) => i.name !== 'lo')).toBe(true);
  });

  it('reads the page faults of /proc/vmstat', () => {
    expect(vmstatFaults('pgpgout 5\npgfault 123\npgmajfault 4\npgfault_x 9\n')).toEqual({
      pageFaults: 123,
      majorPageFaults: 4,
    });
    expect(vmstatFaults('')).toEqual({ pageFaults: undefined, majorPageFaults: undefined });
  });
});
