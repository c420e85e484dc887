/** Builds the CRI ContainerConfig for a container of a pod (pure; upstream generateContainerConfig). */
import type { Container, Pod } from '../../api/types.js';
import type * as cri from '../../cri/types.js';
import { containerAnnotations, containerLabels } from './labels.js';

/** The log path relative to the pod log dir: <container>/<restartCount>.log. */
export function containerLogPath(name: string, restartCount: number): string {
  return `${name}/${restartCount}.log`;
}

function num(v: unknown): number | undefined { return typeof v === 'number' ? v : undefined; }

/** The ContainerConfig for instance `restartCount` of `c`; `imageRef` is what the image service resolved. */
export function generateContainerConfig(pod: Pod, c: Container, restartCount: number, imageRef: string): cri.ContainerConfig {
  const podSc = (pod.spec.securityContext ?? {}) as Record<string, unknown>;
  const sc = (c.securityContext ?? {}) as Record<string, unknown>;
  const runAsUser = num(sc.runAsUser) ?? num(podSc.runAsUser);
  const runAsGroup = num(sc.runAsGroup) ?? num(podSc.runAsGroup);
  const caps = (sc.capabilities ?? {}) as { add?: string[]; drop?: string[] };
  const envs = (c.env ?? []).filter((e) => e.valueFrom === undefined).map((e) => ({ key: e.name, value: e.value ?? '' }));
  return {
    metadata: { name: c.name, attempt: restartCount },
    image: { image: imageRef, user_specified_image: c.image ?? '' },
    command: c.command ?? [],
    args: c.args ?? [],
    working_dir: c.workingDir ?? '',
    envs,
    mounts: [],
    labels: containerLabels(pod, c),
    annotations: containerAnnotations(pod, c, restartCount),
    log_path: containerLogPath(c.name, restartCount),
    stdin: !!c.stdin,
    stdin_once: !!c.stdinOnce,
    tty: !!c.tty,
    linux: {
      resources: {},
      security_context: {
        privileged: sc.privileged === true,
        run_as_user: runAsUser !== undefined ? { value: runAsUser } : null,
        run_as_group: runAsGroup !== undefined ? { value: runAsGroup } : null,
        readonly_rootfs: sc.readOnlyRootFilesystem === true,
        no_new_privs: sc.allowPrivilegeEscalation === false,
        capabilities: { add_capabilities: caps.add ?? [], drop_capabilities: caps.drop ?? [] },
      },
    },
  };
}
