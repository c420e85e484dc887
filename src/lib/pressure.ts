/**
 * Pressure stall information (PSI, kernel ≥ 4.20): how long tasks waited on CPU, memory or I/O.
 * The kernel writes one line per kind, `some avg10=… avg60=… avg300=… total=…` and the same for
 * `full`: the share of the last 10 s, 60 s and 300 s (percent) that some or all tasks were stalled,
 * and the cumulative stall in microseconds. The system's are in /proc/pressure/{cpu,memory,io};
 * a cgroup v2 group's in its cpu.pressure, memory.pressure and io.pressure. Kept as the kernel
 * gives them, as cAdvisor passes them to the summary (KubeletPSI, GA in v1.36).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One line: the averages (percent) and the cumulative stall (µs). */
export interface PressureData {
  total: number;
  avg10: number;
  avg60: number;
  avg300: number;
}

/** Some tasks stalled, and all of them (the kernel's `full`; zero for CPU at the system level). */
export interface Pressure {
  some: PressureData;
  full: PressureData;
}

/** A pressure file's text; undefined when it has no `some` line. Pure. */
export function parsePressure(text: string): Pressure | undefined {
  const line = (kind: 'some' | 'full'): PressureData | undefined => {
    const found = new RegExp(`^${kind} (.*)$`, 'm').exec(text);
    if (!found) return undefined;
    const fields = new Map(found[1].split(' ').map((pair) => pair.split('=') as [string, string]));
    const value = (key: string) => Number(fields.get(key) ?? 0) || 0;
    return { total: value('total'), avg10: value('avg10'), avg60: value('avg60'), avg300: value('avg300') };
  };
  const some = line('some');
  if (!some) return undefined;
  return { some, full: line('full') ?? { total: 0, avg10: 0, avg60: 0, avg300: 0 } };
}

/** CPU, memory and I/O pressure, where the kernel gives them. */
export interface PressureByResource {
  cpu?: Pressure;
  memory?: Pressure;
  io?: Pressure;
}

const readPressure = (path: string): Pressure | undefined => {
  try {
    return parsePressure(readFileSync(path, 'latin1'));
  } catch {
    return undefined;
  }
};

/** The resources of `files` (resource → path) whose pressure could be read; undefined when none could. */
function pressureOf(files: Record<keyof PressureByResource, string>): PressureByResource | undefined {
  const out: PressureByResource = {};
  for (const [resource, path] of Object.entries(files) as [keyof PressureByResource, string][]) {
    const found = readPressure(path);
    if (found) out[resource] = found;
  }
  return Object.keys(out).length ? out : undefined;
}

/** The system's pressure (/proc/pressure); undefined without PSI (an old kernel, or `psi=0`). */
export function systemPressure(dir = '/proc/pressure'): PressureByResource | undefined {
  return pressureOf({ cpu: join(dir, 'cpu'), memory: join(dir, 'memory'), io: join(dir, 'io') });
}

/** A cgroup v2 group's pressure (its cpu.pressure, memory.pressure and io.pressure); undefined without. */
export function cgroupPressure(dir: string): PressureByResource | undefined {
  return pressureOf({
    cpu: join(dir, 'cpu.pressure'),
    memory: join(dir, 'memory.pressure'),
    io: join(dir, 'io.pressure'),
  });
}
