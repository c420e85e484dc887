/**
 * CDI (Container Device Interface) on the embedded runtime: a container's CDI devices
 * (`vendor.com/class=name`, from a device plugin or a DRA driver) are resolved in the CDI spec
 * files (`/etc/cdi`, `/var/run/cdi`; JSON or YAML) and their container edits applied to its
 * config — env vars, mounts, and device nodes bound at their paths (the container's processes see
 * the host's /dev). Hooks are not run. Resolution is pure over the specs; reading them is bounded.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type * as cri from '../cri/types.js';

/** The default spec directories, as CDI's. */
export const DEFAULT_CDI_SPEC_DIRS = ['/etc/cdi', '/var/run/cdi'];
const MAX_SPEC_BYTES = 1 << 20;

interface ContainerEdits {
  env?: string[];
  mounts?: { hostPath: string; containerPath: string; options?: string[] }[];
  deviceNodes?: { path: string; hostPath?: string; permissions?: string }[];
}

/** A CDI spec (the fields applied). */
export interface CdiSpec {
  kind: string;
  devices?: { name: string; containerEdits?: ContainerEdits }[];
  containerEdits?: ContainerEdits;
}

/** Reads every spec in `dirs` (a file that is not one is skipped). */
export async function readCdiSpecs(dirs: readonly string[]): Promise<CdiSpec[]> {
  const specs: CdiSpec[] = [];
  for (const dir of dirs) {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      continue;
    }
    for (const name of names.filter((n) => /\.(json|ya?ml)$/.test(n)).sort()) {
      try {
        const text = await readFile(join(dir, name), 'utf8');
        if (text.length > MAX_SPEC_BYTES) continue;
        const spec = parseYaml(text) as CdiSpec;
        if (spec && typeof spec.kind === 'string') specs.push(spec);
      } catch {
        // Not a spec.
      }
    }
  }
  return specs;
}

/** `config` with the edits of its CDI devices applied; an error names a device no spec has. Pure. */
export function applyCdiDevices(config: cri.ContainerConfig, specs: readonly CdiSpec[]): cri.ContainerConfig {
  const wanted = config.CDI_devices ?? [];
  if (!wanted.length) return config;
  const envs = [...(config.envs ?? [])];
  const mounts = [...(config.mounts ?? [])];
  const apply = (edits: ContainerEdits | undefined) => {
    for (const e of edits?.env ?? []) {
      const eq = e.indexOf('=');
      const key = eq < 0 ? e : e.slice(0, eq);
      const value = eq < 0 ? '' : e.slice(eq + 1);
      const at = envs.findIndex((x) => x.key === key);
      if (at >= 0) envs[at] = { key, value };
      else envs.push({ key, value });
    }
    for (const m of edits?.mounts ?? [])
      mounts.push({
        container_path: m.containerPath,
        host_path: m.hostPath,
        readonly: (m.options ?? []).includes('ro'),
      });
    for (const d of edits?.deviceNodes ?? [])
      mounts.push({
        container_path: d.path,
        host_path: d.hostPath ?? d.path,
        readonly: !(d.permissions ?? 'rw').includes('w'),
      });
  };
  const unresolved: string[] = [];
  const applied = new Set<CdiSpec>();
  for (const { name } of wanted) {
    const [kind, device] = name.split('=');
    const spec = specs.find((s) => s.kind === kind && (s.devices ?? []).some((d) => d.name === device));
    if (!spec) {
      unresolved.push(name);
      continue;
    }
    if (!applied.has(spec)) {
      apply(spec.containerEdits);
      applied.add(spec);
    }
    apply(spec.devices!.find((d) => d.name === device)!.containerEdits);
  }
  if (unresolved.length) throw new Error(`unresolvable CDI devices ${unresolved.join(', ')}`);
  return { ...config, envs, mounts, CDI_devices: [] };
}
