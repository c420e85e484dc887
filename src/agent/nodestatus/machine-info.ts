/**
 * Facts about this machine for the Node object (upstream cadvisor MachineInfo + the node status
 * setters' sources): machine ID, system UUID, boot ID, kernel, OS image, architecture, CPU count,
 * memory, the huge page pools and the root dir's filesystem size. Read at the edge; every value
 * has a fallback.
 */
import { readdirSync } from 'node:fs';
import { readFile, statfs } from 'node:fs/promises';
import { arch, cpus, release, totalmem } from 'node:os';
import { swapTotalBytes } from '../runtime/swap.js';

/** What the node status needs to know of the machine. */
export interface MachineInfo {
  machineID: string;
  systemUUID: string;
  bootID: string;
  kernelVersion: string;
  osImage: string;
  /** GOARCH names: amd64, arm64, … */
  architecture: string;
  cpuCores: number;
  memoryBytes: number;
  /** Size of the filesystem holding the root dir (ephemeral-storage capacity). */
  ephemeralStorageBytes: number;
  /** Whether the kernel enforces AppArmor profiles (absent: unknown, as in tests' machines). */
  appArmorEnabled?: boolean;
  /** The huge page pools by page size (cAdvisor's HugePages: every size the kernel supports), smallest first. */
  hugePages?: HugePagePool[];
  /** The swap the node has (SwapTotal), in bytes; 0 or absent: none. */
  swapBytes?: number;
}

/** One huge page size and the pages the kernel holds of it (nr_hugepages). */
export interface HugePagePool {
  pageSizeKb: number;
  pages: number;
}

/** The page size (kB) in a /sys/kernel/mm/hugepages entry's name (`hugepages-2048kB`). Pure. */
export function hugePageSizeKb(dirName: string): number | undefined {
  const m = /^hugepages-(\d+)kB$/.exec(dirName);
  return m ? Number(m[1]) : undefined;
}

/** The huge page sizes (kB) the kernel supports, smallest first (libcontainer HugePageSizes); none without sysfs. */
export function hugePageSizesKbSync(root = '/sys/kernel/mm/hugepages'): number[] {
  let names: string[] = [];
  try {
    names = readdirSync(root);
  } catch {
    /* no sysfs: no sizes */
  }
  return names
    .map(hugePageSizeKb)
    .filter((n): n is number => n !== undefined)
    .sort((a, b) => a - b);
}

/** The huge page pools under `root` (/sys/kernel/mm/hugepages): none when it cannot be read. */
export async function readHugePages(root = '/sys/kernel/mm/hugepages'): Promise<HugePagePool[]> {
  const pools: HugePagePool[] = [];
  for (const pageSizeKb of hugePageSizesKbSync(root)) {
    const pages = Number(await text(`${root}/hugepages-${pageSizeKb}kB/nr_hugepages`));
    pools.push({ pageSizeKb, pages: Number.isSafeInteger(pages) && pages > 0 ? pages : 0 });
  }
  return pools;
}

const text = async (path: string) => (await readFile(path, 'utf8').catch(() => '')).trim();

/** Node's arch → Go's GOARCH. */
export function goArch(a: string = arch()): string {
  return (
    (
      {
        x64: 'amd64',
        ia32: '386',
        arm: 'arm',
        arm64: 'arm64',
        ppc64: 'ppc64le',
        s390x: 's390x',
        riscv64: 'riscv64',
      } as Record<string, string>
    )[a] ?? a
  );
}

/** PRETTY_NAME from os-release text. */
export function osImageOf(osRelease: string): string {
  const m = /^PRETTY_NAME=(.*)$/m.exec(osRelease);
  return m ? m[1].replace(/^"|"$/g, '') : 'Linux';
}

/** Reads the machine's facts; `rootDir` picks the filesystem for ephemeral storage. */
export async function readMachineInfo(rootDir: string): Promise<MachineInfo> {
  const fs = await statfs(rootDir).catch(() => statfs('/'));
  return {
    machineID: (await text('/etc/machine-id')) || (await text('/var/lib/dbus/machine-id')),
    systemUUID: (await text('/sys/class/dmi/id/product_uuid')).toLowerCase(),
    bootID: await text('/proc/sys/kernel/random/boot_id'),
    kernelVersion: release(),
    osImage: osImageOf((await text('/etc/os-release')) || (await text('/usr/lib/os-release'))),
    architecture: goArch(),
    cpuCores: cpus().length,
    memoryBytes: totalmem(),
    ephemeralStorageBytes: fs.blocks * fs.bsize,
    appArmorEnabled: (await text('/sys/module/apparmor/parameters/enabled')) === 'Y',
    hugePages: await readHugePages(),
    swapBytes: swapTotalBytes(),
  };
}
