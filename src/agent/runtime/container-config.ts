/**
 * Builds the CRI ContainerConfig for a container of a pod (pure; upstream generateContainerConfig
 * and makeMounts): command/args (the runtime applies the image's entrypoint/cmd when they are
 * empty), env with $(VAR) expansion, the kubelet-managed /etc/hosts and termination-log mounts,
 * log path, Linux resources and security context, after the runAsNonRoot check.
 */
import type { Container, Pod } from '../../api/types.js';
import type * as cri from '../../cri/types.js';
import { criSignalOf } from '../../cri/stop-signals.js';
import { containerEnv, expand, type EnvContext } from './env.js';
import { envValueText } from '../../cri/env-value.js';
import { containerAnnotations, containerLabels } from './labels.js';
import { linuxContainerResources, type ResourceContext } from './linux-resources.js';
import { podNamespaceOptions } from './sandbox-config.js';
import { planContainerDevices, planContainerMounts, type PlannedMount } from '../volume/container-mounts.js';
import type { MountedVolume } from '../volume/types.js';
import { appArmorProfile, seccompProfile, seLinuxOptions, type SecurityProfileContext } from './security-profiles.js';

/** The log path relative to the pod log dir: <container>/<restartCount>.log. */
export function containerLogPath(name: string, restartCount: number): string {
  return `${name}/${restartCount}.log`;
}

/** Everything besides the pod and container that goes into the config. */
export interface ContainerConfigContext extends EnvContext {
  /** Host path of the pod's managed hosts file; undefined → no /etc/hosts mount. */
  hostsFile?: string;
  /** Host path of this instance's termination-log file; undefined → no mount. */
  terminationLogFile?: string;
  resources: ResourceContext;
  /** The image as the runtime reports it (user), for runAsNonRoot. */
  image: cri.Image | null;
  /** The pod's set-up volumes (volume manager), by volume name. */
  volumes?: ReadonlyMap<string, MountedVolume>;
  /** The pod's runtime handler makes recursive read-only mounts (volumeMounts' recursiveReadOnly). */
  handlerSupportsRRO?: boolean;
  /** seccompDefault and the Localhost profile root (absent: no default, profiles under /var/lib/kubelet/seccomp). */
  security?: SecurityProfileContext;
  /** The UserNamespacesSupport gate: the node's user namespace named in the namespace options. */
  userNamespacesSupport?: boolean;
  /** The pod's own user namespace (`hostUsers: false`: its ID mappings, as its sandbox has them). */
  userNamespace?: cri.UserNamespace;
  /** The ContainerStopSignals gate: `lifecycle.stopSignal` becomes the config's stop_signal. */
  containerStopSignals?: boolean;
}

const DEFAULT_SECURITY: SecurityProfileContext = {
  seccompDefault: false,
  seccompProfileRoot: '/var/lib/kubelet/seccomp',
};

/**
 * The config, or why it cannot be built (reason CreateContainerConfigError). `volumeMounts` are the first mounts of
 * `config.mounts`, still to have their subPaths resolved on disk.
 */
export type ContainerConfigResult =
  { ok: true; config: cri.ContainerConfig; volumeMounts: PlannedMount[] } | { ok: false; message: string };

/**
 * Upstream's default masked and read-only /proc and /sys paths for unprivileged containers (v1.36's: `/proc/interrupts`
 * among them, as the Go kubelet v1.36.2's configs in its fixture show).
 */
export const DEFAULT_MASKED_PATHS = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/interrupts',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];
export const DEFAULT_READONLY_PATHS = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];

function num(v: unknown): number | undefined {
  return typeof v === 'number' ? v : undefined;
}

/** Pod name as upstream's format.Pod: name_namespace(uid). */
export function formatPod(pod: Pod): string {
  return `${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`;
}

/** Upstream verifyRunAsNonRoot: an error message, or undefined when the container may run. */
export function verifyRunAsNonRoot(pod: Pod, c: Container, image: cri.Image | null): string | undefined {
  const podSc = (pod.spec.securityContext ?? {}) as Record<string, unknown>;
  const sc = (c.securityContext ?? {}) as Record<string, unknown>;
  const nonRoot = (sc.runAsNonRoot ?? podSc.runAsNonRoot) === true;
  if (!nonRoot) return undefined;
  const runAsUser = num(sc.runAsUser) ?? num(podSc.runAsUser);
  if (runAsUser !== undefined)
    return runAsUser === 0
      ? `container's runAsUser breaks non-root policy (pod: "${formatPod(pod)}", container: ${c.name})`
      : undefined;
  const uid = image?.uid ? Number(image.uid.value) : undefined;
  const username = image?.username ?? '';
  if (uid === 0 || (uid === undefined && !username))
    return `container has runAsNonRoot and image will run as root (pod: "${formatPod(pod)}", container: ${c.name})`;
  if (uid === undefined && username)
    return `container has runAsNonRoot and image has non-numeric user (${username}), cannot verify user is non-root (pod: "${formatPod(pod)}", container: ${c.name})`;
  return undefined;
}

function mountedPaths(c: Container): Set<string> {
  return new Set(((c.volumeMounts as { mountPath: string }[] | undefined) ?? []).map((m) => m.mountPath));
}

/** The ContainerConfig for instance `restartCount` of `c`; `imageRef` is what the image service resolved. */
export function generateContainerConfig(
  pod: Pod,
  c: Container,
  restartCount: number,
  imageRef: string,
  ctx: ContainerConfigContext,
): ContainerConfigResult {
  const nonRoot = verifyRunAsNonRoot(pod, c, ctx.image);
  if (nonRoot) return { ok: false, message: nonRoot };
  const env = containerEnv(pod, c, ctx);
  if (!env.ok) return env;
  const vars = new Map(env.env.map((e) => [e.key, envValueText(e.value)]));
  const lookup = (n: string) => vars.get(n);
  const podSc = (pod.spec.securityContext ?? {}) as Record<string, unknown>;
  const sc = (c.securityContext ?? {}) as Record<string, unknown>;
  const runAsUser = num(sc.runAsUser) ?? num(podSc.runAsUser);
  const runAsGroup = num(sc.runAsGroup) ?? num(podSc.runAsGroup);
  const caps = (sc.capabilities ?? {}) as { add?: string[]; drop?: string[] };
  const planned = planContainerMounts(c, ctx.volumes ?? new Map(), vars, ctx.handlerSupportsRRO);
  if (!planned.ok) return planned;
  const devices = planContainerDevices(c, ctx.volumes ?? new Map());
  if (!devices.ok) return devices;
  // Upstream order: volume mounts, then the managed /etc/hosts, then the termination log.
  const mounts: cri.Mount[] = planned.mounts.map((m) => m.mount);
  const taken = mountedPaths(c);
  if (ctx.hostsFile && !taken.has('/etc/hosts'))
    mounts.push({ container_path: '/etc/hosts', host_path: ctx.hostsFile, readonly: false });
  if (ctx.terminationLogFile && c.terminationMessagePath)
    mounts.push({ container_path: c.terminationMessagePath, host_path: ctx.terminationLogFile, readonly: false });
  const seccomp = seccompProfile(pod, c, ctx.security ?? DEFAULT_SECURITY);
  if (!seccomp.ok) return seccomp;
  const apparmor = appArmorProfile(pod, c);
  if (!apparmor.ok) return apparmor;
  const fsGroup = num(podSc.fsGroup);
  const unmasked = sc.privileged === true || sc.procMount === 'Unmasked';
  const supplemental = Array.isArray(podSc.supplementalGroups) ? (podSc.supplementalGroups as number[]) : [];
  const stopSignal = ctx.containerStopSignals
    ? (c.lifecycle as { stopSignal?: string } | undefined)?.stopSignal
    : undefined;
  return {
    ok: true,
    volumeMounts: planned.mounts,
    config: {
      metadata: { name: c.name, attempt: restartCount },
      image: { image: imageRef, user_specified_image: c.image ?? '' },
      command: (c.command ?? []).map((x) => expand(x, lookup)),
      args: (c.args ?? []).map((x) => expand(x, lookup)),
      working_dir: c.workingDir ?? '',
      envs: env.env,
      mounts,
      ...(devices.devices.length ? { devices: devices.devices } : {}),
      labels: containerLabels(pod, c),
      annotations: containerAnnotations(pod, c, restartCount),
      log_path: containerLogPath(c.name, restartCount),
      stdin: !!c.stdin,
      stdin_once: !!c.stdinOnce,
      tty: !!c.tty,
      linux: {
        resources: linuxContainerResources(pod, c, ctx.resources),
        security_context: {
          privileged: sc.privileged === true,
          // Without one in the spec, the image's user, as upstream's determineEffectiveSecurityContext sends it.
          run_as_user:
            runAsUser !== undefined
              ? { value: runAsUser }
              : ctx.image?.uid != null
                ? { value: Number(ctx.image.uid.value) }
                : null,
          ...(runAsUser === undefined && ctx.image?.username ? { run_as_username: ctx.image.username } : {}),
          run_as_group: runAsGroup !== undefined ? { value: runAsGroup } : null,
          supplemental_groups:
            fsGroup !== undefined && !supplemental.includes(fsGroup) ? [fsGroup, ...supplemental] : supplemental,
          supplemental_groups_policy: podSc.supplementalGroupsPolicy === 'Strict' ? 'Strict' : 'Merge',
          readonly_rootfs: sc.readOnlyRootFilesystem === true,
          no_new_privs: sc.allowPrivilegeEscalation === false,
          capabilities: { add_capabilities: caps.add ?? [], drop_capabilities: caps.drop ?? [] },
          // Upstream ConvertToRuntimeMaskedPaths / ReadonlyPaths: none for procMount Unmasked (a privileged container's
          // are cleared by the runtime).
          masked_paths: unmasked ? [] : DEFAULT_MASKED_PATHS,
          readonly_paths: unmasked ? [] : DEFAULT_READONLY_PATHS,
          seccomp: seccomp.profile,
          ...seLinuxOptions(pod, c),
          ...(apparmor.profile ? { apparmor: apparmor.profile, apparmor_profile: apparmor.name } : {}),
          namespace_options: podNamespaceOptions(pod, ctx.userNamespacesSupport, ctx.userNamespace),
        },
      },
      ...(stopSignal ? { stop_signal: criSignalOf(stopSignal) } : {}),
    },
  };
}
