/**
 * A cgroup's block I/O by device, as runc's libcontainer reads it for cAdvisor: cgroup v1's blkio
 * files (BFQ's, then CFQ's, then the throttle policy's recursive and plain counters: the first
 * group with entries), or v2's io.stat mapped to v1's names (rbytes/wbytes → Read/Write bytes,
 * rios/wios → Read/Write operations, cost.* → io.cost's counters). What cAdvisor exports as
 * `container_fs_{reads,writes}{,_bytes}_total` and `container_blkio_device_usage_total`.
 * Synchronous, like the other cgroup readers (small files that never block).
 */
import { readFileSync } from 'node:fs';

/**
 * One device's counters by operation (v1: Read, Write, Sync, Async, Discard, Total; v2: Read, Write; io.cost: Count).
 */
export interface DeviceIo {
  major: number;
  minor: number;
  /** The device's name (`/dev/vda`), "" when the machine does not know it (cAdvisor's DeviceNamer). */
  device: string;
  ops: Record<string, number>;
}

/** libcontainer's BlkioStats, the parts cAdvisor exports. */
export interface CgroupIo {
  serviceBytes: DeviceIo[];
  serviced: DeviceIo[];
  costUsage: DeviceIo[];
  costWait: DeviceIo[];
  costIndebt: DeviceIo[];
  costIndelay: DeviceIo[];
}

/** Names a device by its numbers; "" when unknown. */
export type DeviceNamer = (major: number, minor: number) => string;

/** Above this many devices a cgroup file is not believed (a bound on what one read builds). */
const MAX_DEVICES = 256;

function entry(byKey: Map<string, DeviceIo>, key: string, name: DeviceNamer): DeviceIo | undefined {
  let e = byKey.get(key);
  if (e) return e;
  const m = /^(\d+):(\d+)$/.exec(key);
  if (!m || byKey.size >= MAX_DEVICES) return undefined;
  const major = Number(m[1]);
  const minor = Number(m[2]);
  e = { major, minor, device: name(major, minor), ops: {} };
  byKey.set(key, e);
  return e;
}

/** A v1 blkio stat file (`8:0 Read 4096` lines; the last `Total n` line is skipped). Pure. */
export function parseBlkioV1(text: string, name: DeviceNamer = () => ''): DeviceIo[] {
  const byKey = new Map<string, DeviceIo>();
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length !== 3) continue;
    const value = Number(f[2]);
    const e = Number.isFinite(value) ? entry(byKey, f[0], name) : undefined;
    if (e) e.ops[f[1]] = value;
  }
  return [...byKey.values()];
}

const V2_KEYS: Record<string, [keyof CgroupIo, string]> = {
  rbytes: ['serviceBytes', 'Read'],
  wbytes: ['serviceBytes', 'Write'],
  rios: ['serviced', 'Read'],
  wios: ['serviced', 'Write'],
  'cost.usage': ['costUsage', 'Count'],
  'cost.wait': ['costWait', 'Count'],
  'cost.indebt': ['costIndebt', 'Count'],
  'cost.indelay': ['costIndelay', 'Count'],
};

const empty = (): CgroupIo => ({
  serviceBytes: [],
  serviced: [],
  costUsage: [],
  costWait: [],
  costIndebt: [],
  costIndelay: [],
});

/** v2's io.stat (`8:0 rbytes=… wbytes=… rios=… wios=… dbytes=… dios=…`), in v1's tables and names. Pure. */
export function parseIoStat(text: string, name: DeviceNamer = () => ''): CgroupIo {
  const tables = new Map<keyof CgroupIo, Map<string, DeviceIo>>();
  for (const line of text.split('\n')) {
    const [dev, ...items] = line.trim().split(/\s+/);
    for (const item of items) {
      const eq = item.indexOf('=');
      const mapped = eq > 0 ? V2_KEYS[item.slice(0, eq)] : undefined;
      const value = Number(item.slice(eq + 1));
      if (!mapped || !Number.isFinite(value)) continue;
      const table = tables.get(mapped[0]) ?? tables.set(mapped[0], new Map()).get(mapped[0])!;
      const e = entry(table, dev, name);
      if (e) e.ops[mapped[1]] = value;
    }
  }
  const out = empty();
  for (const [k, t] of tables) out[k] = [...t.values()];
  return out;
}

/** v1's groups of files in libcontainer's order: [operations, bytes]. */
const V1_GROUPS: [string, string][] = [
  ['blkio.bfq.io_serviced_recursive', 'blkio.bfq.io_service_bytes_recursive'],
  ['blkio.io_serviced_recursive', 'blkio.io_service_bytes_recursive'],
  ['blkio.throttle.io_serviced_recursive', 'blkio.throttle.io_service_bytes_recursive'],
  ['blkio.throttle.io_serviced', 'blkio.throttle.io_service_bytes'],
];

function readOptional(dir: string, file: string): string | undefined {
  try {
    return readFileSync(`${dir}/${file}`, 'utf8');
  } catch {
    return undefined;
  }
}

/** Where a cgroup's I/O files are (cgroup-usage.ts CgroupDirs' part). */
export type IoDirs = { version: 2; dir: string } | { version: 1; blkioDir?: string };

/** A cgroup's I/O by device; undefined when it has no I/O accounting to read (no blkio hierarchy, no io.stat). */
export function readCgroupIo(d: IoDirs, name: DeviceNamer = () => ''): CgroupIo | undefined {
  if (d.version === 2) {
    const text = readOptional(d.dir, 'io.stat');
    return text === undefined ? undefined : parseIoStat(text, name);
  }
  if (d.blkioDir === undefined) return undefined;
  let found = false;
  for (const [opsFile, bytesFile] of V1_GROUPS) {
    const ops = readOptional(d.blkioDir, opsFile);
    found ||= ops !== undefined;
    const serviced = ops === undefined ? [] : parseBlkioV1(ops, name);
    if (!serviced.length) continue;
    return { ...empty(), serviced, serviceBytes: parseBlkioV1(readOptional(d.blkioDir, bytesFile) ?? '', name) };
  }
  return found ? empty() : undefined;
}
