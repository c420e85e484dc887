/**
 * The machine's disks as cAdvisor's machine info has them (its DiskMap: every /sys/block entry but
 * loop, ram and sr devices, keyed `major:minor`, with its size and I/O scheduler), and how cAdvisor
 * names a device in its I/O series: `/dev/<disk>` from that map, else the source of a filesystem
 * mounted from it, else "".
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DeviceNamer } from './cgroup-io.js';

/** cAdvisor's info.DiskInfo (the JSON of /spec's disk_map). */
export interface DiskInfo {
  name: string;
  major: number;
  minor: number;
  size: number;
  scheduler: string;
}

/** The scheduler in brackets of a queue/scheduler file (`none [mq-deadline] kyber`), else "none". Pure. */
export function parseScheduler(text: string): string {
  return /\[(.*)\]/.exec(text)?.[1] ?? 'none';
}

/** The disks under `sysBlock`, keyed `major:minor`; a disk whose numbers cannot be read is left out. */
export function readDiskMap(sysBlock = '/sys/block'): Map<string, DiskInfo> {
  const out = new Map<string, DiskInfo>();
  let names: string[];
  try {
    names = readdirSync(sysBlock);
  } catch {
    return out;
  }
  for (const name of names) {
    if (/^(loop|ram|sr)/.test(name)) continue;
    const read = (file: string) => {
      try {
        return readFileSync(join(sysBlock, name, file), 'utf8');
      } catch {
        return undefined;
      }
    };
    const m = /^(\d+):(\d+)/.exec(read('dev') ?? '');
    if (!m) continue;
    const sectors = Number((read('size') ?? '0').trim());
    out.set(`${m[1]}:${m[2]}`, {
      name,
      major: Number(m[1]),
      minor: Number(m[2]),
      size: Number.isFinite(sectors) ? sectors * 512 : 0,
      scheduler: parseScheduler(read('queue/scheduler') ?? ''),
    });
  }
  return out;
}

/** The devices of mounted filesystems from /proc/<pid>/mountinfo text: `major:minor` → a `/dev/…` source. Pure. */
export function mountedDevices(mountinfo: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of mountinfo.split('\n')) {
    const f = line.split(' ');
    const dash = f.indexOf('-');
    const source = dash > 0 ? f[dash + 2] : undefined;
    if (f[2] && source?.startsWith('/dev/') && !out.has(f[2])) out.set(f[2], source);
  }
  return out;
}

/** cAdvisor's MachineInfoNamer over these maps. Pure. */
export function deviceNamer(disks: ReadonlyMap<string, DiskInfo>, mounts: ReadonlyMap<string, string>): DeviceNamer {
  return (major, minor) => {
    const key = `${major}:${minor}`;
    const disk = disks.get(key);
    return disk ? `/dev/${disk.name}` : (mounts.get(key) ?? '');
  };
}

/** The namer of this machine now (its disks and mounts read once). */
export function machineDeviceNamer(): DeviceNamer {
  let mountinfo = '';
  try {
    mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    // no /proc: disks only
  }
  return deviceNamer(readDiskMap(), mountedDevices(mountinfo));
}
