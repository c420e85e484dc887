/**
 * The seccomp and AppArmor profiles and the SELinux label of a container and of a sandbox, as
 * upstream's kuberuntime (getSeccompProfile, getAppArmorProfile, the effective security context)
 * chooses them (pure): the container's own field, else the pod's; for seccomp with neither,
 * RuntimeDefault when seccompDefault is set, else Unconfined.
 * A Localhost seccomp profile is a file under `<root-dir>/seccomp`; a Localhost AppArmor profile
 * is a profile name loaded on the host.
 */
import { join } from 'node:path';
import { allContainers } from '../../api/containers.js';
import type { Container, Pod } from '../../api/types.js';
import type * as cri from '../../cri/types.js';

/** What the kubelet's configuration adds. */
export interface SecurityProfileContext {
  /** seccompDefault: RuntimeDefault for containers that name no profile. */
  seccompDefault: boolean;
  /** <root-dir>/seccomp: where Localhost seccomp profiles live. */
  seccompProfileRoot: string;
}

type ProfileField = { type?: string; localhostProfile?: string } | undefined;

/** The profile, or the error upstream reports (a CreateContainerConfigError). */
export type ProfileResult = { ok: true; profile: cri.SecurityProfile } | { ok: false; message: string };

function seccompField(field: ProfileField, ctx: SecurityProfileContext): ProfileResult {
  if (!field) return { ok: true, profile: { profile_type: ctx.seccompDefault ? 'RuntimeDefault' : 'Unconfined' } };
  if (field.type === 'RuntimeDefault') return { ok: true, profile: { profile_type: 'RuntimeDefault' } };
  if (field.type === 'Localhost') {
    if (!field.localhostProfile)
      return { ok: false, message: 'localhostProfile must be set if seccompProfile type is Localhost.' };
    return {
      ok: true,
      profile: { profile_type: 'Localhost', localhost_ref: join(ctx.seccompProfileRoot, field.localhostProfile) },
    };
  }
  return { ok: true, profile: { profile_type: 'Unconfined' } };
}

type SELinuxField = { user?: string; role?: string; type?: string; level?: string } | undefined;

const scOf = (x: { securityContext?: unknown } | undefined) =>
  x?.securityContext as
    { seccompProfile?: ProfileField; appArmorProfile?: ProfileField; seLinuxOptions?: SELinuxField } | undefined;

/**
 * The SELinux label of container `c` (undefined: the sandbox's): seLinuxOptions, the container's else the pod's; none
 * when neither sets it.
 */
export function seLinuxOptions(pod: Pod, c: Container | undefined): { selinux_options?: cri.SELinuxOption } {
  const o = scOf(c)?.seLinuxOptions ?? scOf(pod.spec)?.seLinuxOptions;
  return o
    ? { selinux_options: { user: o.user ?? '', role: o.role ?? '', type: o.type ?? '', level: o.level ?? '' } }
    : {};
}

/** The seccomp profile of container `c` (undefined: the sandbox's). */
export function seccompProfile(pod: Pod, c: Container | undefined, ctx: SecurityProfileContext): ProfileResult {
  return seccompField(scOf(c)?.seccompProfile ?? scOf(pod.spec)?.seccompProfile, ctx);
}

/** The AppArmor annotation prefix upstream still honours (before the appArmorProfile fields). */
const APPARMOR_ANNOTATION_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';

/**
 * Whether `pod` asks for an AppArmor profile other than Unconfined (upstream isRequired: the pod field, a container's,
 * else a beta annotation).
 */
export function appArmorRequired(pod: Pod): boolean {
  const confined = (f: ProfileField) => !!f && f.type !== 'Unconfined';
  if (confined(scOf(pod.spec)?.appArmorProfile)) return true;
  if (allContainers(pod).some((c) => confined(scOf(c)?.appArmorProfile))) return true;
  return Object.entries(pod.metadata.annotations ?? {}).some(
    ([k, v]) => k.startsWith(APPARMOR_ANNOTATION_PREFIX) && v !== 'unconfined',
  );
}

/** The AppArmor profile of `c` with its deprecated name; undefined when nothing asks for one (the runtime decides). */
export function appArmorProfile(
  pod: Pod,
  c: Container,
): { ok: true; profile?: cri.SecurityProfile; name?: string } | { ok: false; message: string } {
  let field = scOf(c)?.appArmorProfile;
  if (!field) {
    // Upstream apparmor.GetProfile: the container field, then the annotation, then the pod field.
    const a = pod.metadata.annotations?.[`${APPARMOR_ANNOTATION_PREFIX}${c.name}`];
    if (a === 'runtime/default') field = { type: 'RuntimeDefault' };
    else if (a === 'unconfined') field = { type: 'Unconfined' };
    else if (a?.startsWith('localhost/')) field = { type: 'Localhost', localhostProfile: a.slice('localhost/'.length) };
  }
  field ??= scOf(pod.spec)?.appArmorProfile;
  if (!field) return { ok: true };
  if (field.type === 'RuntimeDefault')
    return { ok: true, profile: { profile_type: 'RuntimeDefault' }, name: 'runtime/default' };
  if (field.type === 'Unconfined') return { ok: true, profile: { profile_type: 'Unconfined' }, name: 'unconfined' };
  if (field.type === 'Localhost') {
    if (!field.localhostProfile) return { ok: false, message: 'missing localhost apparmor profile name' };
    return {
      ok: true,
      profile: { profile_type: 'Localhost', localhost_ref: field.localhostProfile },
      name: `localhost/${field.localhostProfile}`,
    };
  }
  return { ok: true };
}
