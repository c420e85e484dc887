/**
 * The kernel settings the kubelet relies on (upstream cm.setupKernelTunables): overcommit always
 * allowed, the OOM killer rather than a panic on OOM, a reboot 10 s after a panic, a panic on an
 * oops, and room for the keys of many containers. With protectKernelDefaults the kubelet refuses
 * to start when one differs, naming each, as upstream's does. Without it upstream rewrites them;
 * tskubelet leaves the kernel alone (a deviation docs/compatibility.md states).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The settings, as paths under /proc/sys, and their values. */
export const KERNEL_DEFAULTS: [string, number][] = [
  ['vm/overcommit_memory', 1],
  ['vm/panic_on_oom', 0],
  ['kernel/panic', 10],
  ['kernel/panic_on_oops', 1],
  ['kernel/keys/root_maxkeys', 1_000_000],
  ['kernel/keys/root_maxbytes', 25_000_000],
];

/** Upstream's message for every setting that differs (or cannot be read); empty when all match. */
export async function kernelDefaultsErrors(procSys = '/proc/sys'): Promise<string[]> {
  const errs: string[] = [];
  for (const [flag, want] of KERNEL_DEFAULTS) {
    let got: number;
    try {
      got = Number((await readFile(join(procSys, flag), 'utf8')).trim());
    } catch (err) {
      errs.push(`cannot read kernel flag ${flag}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
      continue;
    }
    if (got !== want) errs.push(`invalid kernel flag: ${flag}, expected value: ${want}, actual value: ${got}`);
  }
  return errs;
}
