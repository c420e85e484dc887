/**
 * /metrics/cadvisor's series from a container's cgroup beyond its usage (cAdvisor's names, help
 * and conditions): page cache, swap, mapped files, peak usage, the CPU split and
 * CFS throttling (only for a container with a CPU quota), the spec's limits and shares, OOM kills,
 * processes and block I/O by device — what the usual dashboards (memory cache, CPU throttling,
 * storage I/O) and alerts read.
 * (cAdvisor's container_memory_failcnt is left out: a counter without `_total`, which promtool
 * refuses.) Pure.
 */
import type { Family } from '../metrics/prom-text.js';
import type { CgroupDetail } from '../../lib/cgroup-usage.js';
import type { CgroupIo } from '../../lib/cgroup-io.js';
import type { NetDevStats } from './node-sources.js';
import type { PressureByResource } from '../../lib/pressure.js';

type Labels = Record<string, string>;
type Pick = (d: CgroupDetail) => number | undefined;

/** name, help, type, value, and whether the sample is a spec (no timestamp, as cAdvisor's spec series). */
const SERIES: [string, string, Family['type'], Pick, 'stat' | 'spec'][] = [
  [
    'container_cpu_user_seconds_total',
    'Cumulative user cpu time consumed in seconds.',
    'counter',
    (d) => seconds(d.userNs),
    'stat',
  ],
  [
    'container_cpu_system_seconds_total',
    'Cumulative system cpu time consumed in seconds.',
    'counter',
    (d) => seconds(d.systemNs),
    'stat',
  ],
  [
    'container_cpu_cfs_periods_total',
    'Number of elapsed enforcement period intervals.',
    'counter',
    (d) => withQuota(d, d.cfsPeriods),
    'stat',
  ],
  [
    'container_cpu_cfs_throttled_periods_total',
    'Number of throttled period intervals.',
    'counter',
    (d) => withQuota(d, d.cfsThrottledPeriods),
    'stat',
  ],
  [
    'container_cpu_cfs_throttled_seconds_total',
    'Total time duration the container has been throttled.',
    'counter',
    (d) => withQuota(d, seconds(d.cfsThrottledNs)),
    'stat',
  ],
  ['container_memory_cache', 'Number of bytes of page cache memory.', 'gauge', (d) => d.cacheBytes, 'stat'],
  ['container_memory_swap', 'Container swap usage in bytes.', 'gauge', (d) => d.swapBytes, 'stat'],
  ['container_memory_mapped_file', 'Size of memory mapped files in bytes.', 'gauge', (d) => d.mappedFileBytes, 'stat'],
  [
    'container_memory_max_usage_bytes',
    'Maximum memory usage recorded in bytes',
    'gauge',
    (d) => d.maxUsageBytes,
    'stat',
  ],
  [
    'container_oom_events_total',
    'Count of out of memory events observed for the container',
    'counter',
    (d) => d.oomKills,
    'stat',
  ],
  ['container_processes', 'Number of processes running inside the container.', 'gauge', (d) => d.processes, 'stat'],
  ['container_spec_cpu_shares', 'CPU share of the container.', 'gauge', (d) => d.cpuShares, 'spec'],
  ['container_spec_cpu_period', 'CPU period of the container.', 'gauge', (d) => d.cpuPeriodUs || undefined, 'spec'],
  ['container_spec_cpu_quota', 'CPU quota of the container.', 'gauge', (d) => d.cpuQuotaUs, 'spec'],
  // cAdvisor's specMemoryValue: an unlimited one is 0.
  ['container_spec_memory_limit_bytes', 'Memory limit for the container.', 'gauge', (d) => d.limitBytes ?? 0, 'spec'],
  [
    'container_spec_memory_swap_limit_bytes',
    'Memory swap limit for the container.',
    'gauge',
    (d) => d.swapLimitBytes ?? 0,
    'spec',
  ],
];

function seconds(ns: number | undefined): number | undefined {
  return ns === undefined ? undefined : ns / 1e9;
}

/** cAdvisor emits the CFS series only for a container with a quota. */
function withQuota(d: CgroupDetail, v: number | undefined): number | undefined {
  return d.cpuQuotaUs ? v : undefined;
}

/**
 * cAdvisor's per-device I/O series (its DiskIOMetrics): name, help, table, operation and unit
 * divisor. A device without the operation counts 0, as cAdvisor's ioValues.
 */
const IO: [string, string, keyof CgroupIo, string, number][] = [
  ['container_fs_reads_bytes_total', 'Cumulative count of bytes read', 'serviceBytes', 'Read', 1],
  ['container_fs_reads_total', 'Cumulative count of reads completed', 'serviced', 'Read', 1],
  ['container_fs_writes_bytes_total', 'Cumulative count of bytes written', 'serviceBytes', 'Write', 1],
  ['container_fs_writes_total', 'Cumulative count of writes completed', 'serviced', 'Write', 1],
  ['container_fs_io_cost_usage_seconds_total', 'Cumulative IOCost usage in seconds', 'costUsage', 'Count', 1e6],
  ['container_fs_io_cost_wait_seconds_total', 'Cumulative IOCost wait in seconds', 'costWait', 'Count', 1e6],
  ['container_fs_io_cost_indebt_seconds_total', 'Cumulative IOCost debt in seconds', 'costIndebt', 'Count', 1e6],
  ['container_fs_io_cost_indelay_seconds_total', 'Cumulative IOCost delay in seconds', 'costIndelay', 'Count', 1e6],
];

/**
 * The families for `containers` (each with its labels and cgroup detail), stamped `timestampMs`; none without details.
 */
export function cadvisorDetailFamilies(
  containers: readonly { labels: Labels; detail?: CgroupDetail }[],
  timestampMs: number,
): Family[] {
  const withIo = containers.flatMap((c) => (c.detail?.io ? [{ labels: c.labels, io: c.detail.io }] : []));
  return [
    ...SERIES.map(([name, help, type, pick, kind]) => ({
      name,
      help,
      type,
      samples: containers.flatMap((c) => {
        const value = c.detail && pick(c.detail);
        return value === undefined ? [] : [{ labels: c.labels, value, ...(kind === 'stat' ? { timestampMs } : {}) }];
      }),
    })),
    ...IO.map(([name, help, table, op, divisor]) => ({
      name,
      help,
      type: 'counter' as const,
      samples: withIo.flatMap((c) =>
        c.io[table].map((d) => ({
          labels: { ...c.labels, device: d.device },
          value: (d.ops[op] ?? 0) / divisor,
          timestampMs,
        })),
      ),
    })),
    {
      name: 'container_blkio_device_usage_total',
      help: 'Blkio Device bytes usage',
      type: 'counter' as const,
      samples: withIo.flatMap((c) =>
        c.io.serviceBytes.flatMap((d) =>
          Object.entries(d.ops).map(([operation, value]) => ({
            labels: { ...c.labels, device: d.device, major: String(d.major), minor: String(d.minor), operation },
            value,
            timestampMs,
          })),
        ),
      ),
    },
  ].filter((f) => f.samples.length);
}

/** cAdvisor's packet, error and drop counters of a pod's interfaces (its network namespace's /proc/<pid>/net/dev). */
const NETWORK: [string, string, keyof NetDevStats][] = [
  ['container_network_receive_packets_total', 'Cumulative count of packets received', 'rxPackets'],
  [
    'container_network_receive_packets_dropped_total',
    'Cumulative count of packets dropped while receiving',
    'rxDropped',
  ],
  ['container_network_receive_errors_total', 'Cumulative count of errors encountered while receiving', 'rxErrors'],
  ['container_network_transmit_packets_total', 'Cumulative count of packets transmitted', 'txPackets'],
  [
    'container_network_transmit_packets_dropped_total',
    'Cumulative count of packets dropped while transmitting',
    'txDropped',
  ],
  ['container_network_transmit_errors_total', 'Cumulative count of errors encountered while transmitting', 'txErrors'],
];

/** The network counter families of `rows` (a pod's labels with `interface`, and that interface's counters). */
export function networkCounterFamilies(
  rows: readonly { labels: Labels; stats: NetDevStats }[],
  timestampMs: number,
): Family[] {
  return NETWORK.map(([name, help, key]) => ({
    name,
    help,
    type: 'counter' as const,
    samples: rows.map((r) => ({ labels: r.labels, value: r.stats[key] as number, timestampMs })),
  })).filter((f) => f.samples.length);
}

/** cAdvisor's pressure series (its PressureMetrics): `stalled` is the kernel's `full`, `waiting` its `some`. */
const PRESSURE: [string, string, keyof PressureByResource, 'full' | 'some'][] = [
  [
    'container_pressure_cpu_stalled_seconds_total',
    'Total time duration no tasks in the container could make progress due to CPU congestion.',
    'cpu',
    'full',
  ],
  [
    'container_pressure_cpu_waiting_seconds_total',
    'Total time duration tasks in the container have waited due to CPU congestion.',
    'cpu',
    'some',
  ],
  [
    'container_pressure_memory_stalled_seconds_total',
    'Total time duration no tasks in the container could make progress due to memory congestion.',
    'memory',
    'full',
  ],
  [
    'container_pressure_memory_waiting_seconds_total',
    'Total time duration tasks in the container have waited due to memory congestion.',
    'memory',
    'some',
  ],
  [
    'container_pressure_io_stalled_seconds_total',
    'Total time duration no tasks in the container could make progress due to IO congestion.',
    'io',
    'full',
  ],
  [
    'container_pressure_io_waiting_seconds_total',
    'Total time duration tasks in the container have waited due to IO congestion.',
    'io',
    'some',
  ],
];

/** The pressure families of `rows` (labels and the kernel's figures); the kernel's µs as seconds. */
export function pressureFamilies(
  rows: readonly { labels: Labels; pressure: PressureByResource }[],
  timestampMs: number,
): Family[] {
  return PRESSURE.map(([name, help, resource, kind]) => ({
    name,
    help,
    type: 'counter' as const,
    samples: rows.flatMap((r) => {
      const data = r.pressure[resource]?.[kind];
      return data ? [{ labels: r.labels, value: data.total / 1e6, timestampMs }] : [];
    }),
  })).filter((f) => f.samples.length);
}
