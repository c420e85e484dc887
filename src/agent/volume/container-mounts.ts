/**
 * A container's volume mounts as CRI Mounts (upstream kubelet_pods.go makeMounts):
 * `planContainerMounts` is the pure part — volume lookup, `subPathExpr` expansion, upstream's
 * subPath checks (absolute, `..`), read-only (the mount's flag or a read-only volume), mount
 * propagation (Bidirectional only for privileged containers), recursive read-only mounts
 * (`recursiveReadOnly`, as the runtime handler allows); `prepareSubPaths` is the I/O part —
 * it creates a missing subPath directory and refuses one that resolves outside its volume through
 * a symlink (upstream PrepareSafeSubpath), with upstream's deliberately vague messages; a volume
 * the kubelet does not make is asked apart, with a deadline (lib/ask-apart.ts).
 */
import { chmod, mkdir, realpath, stat } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import type { Container, VolumeMountStatus } from '../../api/types.js';
import type * as cri from '../../cri/types.js';
import { expand } from '../runtime/env.js';
import type { MountedVolume } from './types.js';
import { realpathApart, VolumeNotAnswering } from '../../lib/ask-apart.js';

/** In-process realpath's ENOENT as realpathApart's answer for a missing path; other errors stand. */
const missing = (err: NodeJS.ErrnoException): undefined => {
  if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
  throw err;
};

/** core/v1 VolumeMount. */
export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
  subPathExpr?: string;
  mountPropagation?: string;
  recursiveReadOnly?: string;
}

/**
 * Whether a mount is made recursively read-only (upstream resolveRecursiveReadOnly): never without
 * `recursiveReadOnly` or with Disabled; IfPossible when the runtime handler can; Enabled only when it
 * can. Throws upstream's message for what cannot be honoured. Pure.
 */
export function resolveRecursiveReadOnly(m: VolumeMount, handlerSupportsRRO: boolean): boolean {
  const mode = m.recursiveReadOnly;
  if (!mode || mode === 'Disabled') return false;
  if (!m.readOnly) throw new Error(`volume "${m.name}" requested recursive read-only mode, but it is not read-only`);
  if (m.mountPropagation && m.mountPropagation !== 'None')
    throw new Error(
      `volume "${m.name}" requested recursive read-only mode, but it is not compatible with propagation "${m.mountPropagation}"`,
    );
  if (mode === 'IfPossible') return handlerSupportsRRO;
  if (mode === 'Enabled') {
    if (!handlerSupportsRRO)
      throw new Error(`volume "${m.name}" requested recursive read-only mode, but it is not supported by the runtime`);
    return true;
  }
  throw new Error(`unknown recursive read-only mode "${mode}"`);
}

/** A container's volume mounts as its status reports them (upstream convertToAPIContainerStatuses). Pure. */
export function volumeMountStatuses(c: Container, handlerSupportsRRO: boolean): VolumeMountStatus[] | undefined {
  const mounts = (c.volumeMounts ?? []) as VolumeMount[];
  if (!mounts.length) return undefined;
  return mounts.map((m) => {
    if (!m.readOnly) return { name: m.name, mountPath: m.mountPath };
    let rro = false;
    try {
      rro = resolveRecursiveReadOnly(m, handlerSupportsRRO);
    } catch {
      // As upstream: logged there, reported as Disabled (the container itself is refused: planContainerMounts).
    }
    return { name: m.name, mountPath: m.mountPath, readOnly: true, recursiveReadOnly: rro ? 'Enabled' : 'Disabled' };
  });
}

/** A mount before its subPath is resolved on disk. */
export interface PlannedMount {
  name: string;
  volumePath: string;
  subPath: string;
  mount: cri.Mount;
  /** The volume is not one the kubelet makes under its root dir: paths in it are resolved apart (lib/ask-apart.ts). */
  apart?: boolean;
}

/** The plugins whose volumes the kubelet makes itself, under its root dir, on its own filesystems. */
const KUBELET_MADE = new Set([
  'kubernetes.io~empty-dir',
  'kubernetes.io~configmap',
  'kubernetes.io~secret',
  'kubernetes.io~downward-api',
  'kubernetes.io~projected',
]);

/** The planned mounts, or upstream's CreateContainerConfigError message. */
export type MountPlan = { ok: true; mounts: PlannedMount[] } | { ok: false; message: string };

const PROPAGATION: Record<string, string> = {
  None: 'PROPAGATION_PRIVATE',
  HostToContainer: 'PROPAGATION_HOST_TO_CONTAINER',
  Bidirectional: 'PROPAGATION_BIDIRECTIONAL',
};

/**
 * Plans `c`'s volume mounts from the set-up volumes; `env` expands subPathExpr; `handlerSupportsRRO`:
 * the pod's runtime handler makes recursive read-only mounts. Pure.
 */
export function planContainerMounts(
  c: Container,
  volumes: ReadonlyMap<string, MountedVolume>,
  env: ReadonlyMap<string, string>,
  handlerSupportsRRO = false,
): MountPlan {
  const out: PlannedMount[] = [];
  const privileged = (c.securityContext as { privileged?: boolean } | undefined)?.privileged === true;
  for (const m of (c.volumeMounts ?? []) as VolumeMount[]) {
    const vol = volumes.get(m.name);
    if (!vol) return { ok: false, message: `cannot find volume "${m.name}" to mount into container "${c.name}"` };
    let subPath = m.subPath ?? '';
    if (m.subPathExpr) subPath = expand(m.subPathExpr, (n) => env.get(n));
    if (subPath) {
      if (subPath.startsWith('/'))
        return { ok: false, message: `error SubPath \`${subPath}\` must not be an absolute path` };
      if (subPath.split(/[\\/]/).includes('..'))
        return { ok: false, message: `unable to provision SubPath \`${subPath}\`: must not contain '..'` };
    }
    const propagation = PROPAGATION[m.mountPropagation ?? 'None'];
    if (!propagation) return { ok: false, message: `invalid MountPropagation mode: ${m.mountPropagation}` };
    if (propagation === 'PROPAGATION_BIDIRECTIONAL' && !privileged)
      return { ok: false, message: 'Bidirectional mount propagation is available only to privileged containers' };
    let rro: boolean;
    try {
      rro = resolveRecursiveReadOnly(m, handlerSupportsRRO);
    } catch (err) {
      return { ok: false, message: `failed to resolve recursive read-only mode: ${(err as Error).message}` };
    }
    if (vol.image) {
      // The runtime mounts the image, read-only, and finds the subPath in it (refusing one that is not there).
      out.push({
        name: m.name,
        volumePath: '',
        subPath: '',
        mount: {
          container_path: m.mountPath,
          host_path: '',
          readonly: true,
          image: vol.image,
          ...(subPath ? { image_sub_path: subPath } : {}),
          propagation,
        },
      });
      continue;
    }
    out.push({
      name: m.name,
      volumePath: vol.path,
      subPath,
      ...(KUBELET_MADE.has(vol.plugin) ? {} : { apart: true }),
      mount: {
        container_path: m.mountPath,
        host_path: subPath ? join(vol.path, subPath) : vol.path,
        readonly: m.readOnly === true || vol.readOnly,
        selinux_relabel: vol.seLinuxRelabel === true,
        propagation,
        ...(rro ? { recursive_read_only: true } : {}),
      },
    });
  }
  return { ok: true, mounts: out };
}

/**
 * upstream makeBlockVolumes: the container's `volumeDevices` as CRI devices — each must name a
 * raw block volume of the pod; "mrw", or "r" for a read-only one.
 */
export function planContainerDevices(
  c: Container,
  volumes: ReadonlyMap<string, MountedVolume>,
):
  | { ok: true; devices: { container_path: string; host_path: string; permissions: string }[] }
  | { ok: false; message: string } {
  const devices = [];
  for (const d of c.volumeDevices ?? []) {
    if (!d.devicePath.startsWith('/'))
      return { ok: false, message: `error DevicePath \`${d.devicePath}\` must be an absolute path` };
    const vol = volumes.get(d.name);
    if (!vol?.devicePath)
      return { ok: false, message: `cannot find volume "${d.name}" to pass into container "${c.name}"` };
    devices.push({ container_path: d.devicePath, host_path: vol.devicePath, permissions: vol.readOnly ? 'r' : 'mrw' });
  }
  return { ok: true, devices };
}

/** Resolves every subPath on disk; a subPath escaping its volume is refused. */
export async function prepareSubPaths(
  plan: PlannedMount[],
  containerName: string,
): Promise<{ ok: true; mounts: cri.Mount[] } | { ok: false; message: string }> {
  const mounts: cri.Mount[] = [];
  for (const p of plan) {
    if (!p.subPath) {
      mounts.push(p.mount);
      continue;
    }
    const failure = `failed to prepare subPath for volumeMount "${p.name}" of container "${containerName}"`;
    // A volume that may stop answering is asked apart, so that it holds none of the kubelet's own threads.
    const resolve = p.apart ? (path: string) => realpathApart(path) : (path: string) => realpath(path);
    let base: string | undefined;
    let resolved: string | undefined;
    try {
      base = await resolve(p.volumePath);
      resolved = base === undefined ? undefined : await resolve(p.mount.host_path).catch(missing);
    } catch (err) {
      return { ok: false, message: err instanceof VolumeNotAnswering ? `${failure}: volume ${err.message}` : failure };
    }
    if (base === undefined) return { ok: false, message: failure };
    if (resolved === undefined) {
      // Missing: upstream SafeMakeDir creates it — only when every existing parent stays inside the
      // volume — with the volume directory's mode (setgid and sticky bits included), so that a
      // pod's fsGroup can use it as it uses the volume; each directory is chmodded (the umask). The
      // volume has just answered: these calls are made in-process.
      const parent = await deepestExisting(p.mount.host_path);
      if (!parent || !inside(parent, base))
        return {
          ok: false,
          message: `failed to create subPath directory for volumeMount "${p.name}" of container "${containerName}"`,
        };
      const mode = (await stat(base)).mode & 0o7777;
      const first = await mkdir(p.mount.host_path, { recursive: true, mode });
      for (let dir = p.mount.host_path; first && dir.length >= first.length; dir = dirname(dir)) await chmod(dir, mode);
      resolved = await realpath(p.mount.host_path);
    }
    if (!inside(resolved, base)) return { ok: false, message: failure };
    mounts.push({ ...p.mount, host_path: resolved });
  }
  return { ok: true, mounts };
}

function inside(path: string, base: string): boolean {
  return path === base || path.startsWith(base.endsWith(sep) ? base : base + sep);
}

async function deepestExisting(path: string): Promise<string | undefined> {
  let p = path;
  while (p && p !== sep) {
    try {
      return await realpath(p);
    } catch {
      p = p.slice(0, p.lastIndexOf(sep)) || sep;
    }
  }
  return sep;
}
