/**
 * Facts about this machine for the Node object (upstream cadvisor MachineInfo + the node status
 * setters' sources): machine ID, system UUID, boot ID, kernel, OS image, architecture, CPU count,
 * memory and the root dir's filesystem size. Read at the edge; every value has a fallback.
 */
import { readFile, statfs } from 'node:fs/promises';
import { arch, cpus, release, totalmem } from 'node:os';

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
}

const text = async (path: string) => (await readFile(path, 'utf8').catch(() => '')).trim();

/** Node's arch → Go's GOARCH. */
export function goArch(a: string = arch()): string {
  return ({ x64: 'amd64', ia32: '386', arm: 'arm', arm64: 'arm64', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64' } as Record<string, string>)[a] ?? a;
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
  };
}
