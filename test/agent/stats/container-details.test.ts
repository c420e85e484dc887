/**
 * The containers' cgroup details (/metrics/cadvisor's cache, throttling and spec series) are read
 * when asked, once per collector sample: a node nobody scrapes pays nothing, many scrapes cost one read.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { parseNetDev } from '../../../src/agent/stats/node-sources.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StatsCollector } from '../../../src/agent/stats/collector.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import type { CriRuntime } from '../../../src/cri/services.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-details-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('StatsCollector.containerDetails', () => {
  it('reads each container cgroup once per sample, only when asked', async () => {
    mkdirSync(join(dir, 'c1'));
    writeFileSync(join(dir, 'c1', 'memory.stat'), 'file 4096\nfile_mapped 0\n');
    writeFileSync(join(dir, 'c1', 'cpu.max'), '10000 100000\n');
    const stats = [
      {
        attributes: {
          id: 'c1',
          metadata: { name: 'main', attempt: 0 },
          labels: { 'io.kubernetes.pod.uid': 'u1', 'io.kubernetes.container.name': 'main' },
          annotations: {},
        },
        cpu: { timestamp: 1, usage_core_nano_seconds: { value: 5 } },
      },
    ];
    const runtime = {
      runtime: { listContainerStats: async () => stats, listPodSandboxStats: async () => [] },
      images: { imageFsInfo: async () => ({ image_filesystems: [] }) },
    } as unknown as CriRuntime;
    const asked: string[] = [];
    const collector = new StatsCollector({
      runtime,
      rootDir: dir,
      podLogsDir: dir,
      clock: new FakeClock(1_000_000),
      logger: createLogger({ level: 'fatal' }),
      containerCgroup: (uid, id) => {
        asked.push(`${uid}/${id}`);
        return { version: 2, dir: join(dir, id) };
      },
    });
    await collector.sample();
    expect(asked).toEqual([]);
    expect(collector.containerDetails().get('c1')).toMatchObject({
      cacheBytes: 4096,
      cpuQuotaUs: 10000,
      cpuPeriodUs: 100000,
    });
    collector.containerDetails();
    expect(asked).toEqual(['u1/c1']);
    await collector.sample();
    collector.containerDetails();
    expect(asked).toEqual(['u1/c1', 'u1/c1']);
    // The pod's interfaces, from the network namespace of a process of its container (here: this test's own).
    writeFileSync(join(dir, 'c1', 'cgroup.procs'), `${process.pid}\n`);
    await collector.sample();
    const own = collector.podNetDev().get('u1');
    expect(own).toEqual(parseNetDev(readFileSync(`/proc/${process.pid}/net/dev`, 'utf8')));
    expect(asked).toHaveLength(3);
  });
});

describe('parseNetDev', () => {
  it('reads every interface but loopback with cAdvisor’s counters', () => {
    const text = [
      'Inter-|   Receive                                                |  Transmit',
      ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed',
      '    lo:     100       2    0    0    0     0          0         0      100       2    0    0    0     0       0          0',
      '  eth0:    5000      40    1    3    0     0          0         0     7000      50    2    4    0     0       0          0',
    ].join('\n');
    expect(parseNetDev(text)).toEqual([
      {
        name: 'eth0',
        rxBytes: 5000,
        rxPackets: 40,
        rxErrors: 1,
        rxDropped: 3,
        txBytes: 7000,
        txPackets: 50,
        txErrors: 2,
        txDropped: 4,
      },
    ]);
  });
});
