/** Builds the CRI PodSandboxConfig for a pod (pure; upstream generatePodSandboxConfig). */
import { join } from 'node:path';
import type { Container, Pod } from '../../api/types.js';
import type * as cri from '../../cri/types.js';
import { podDnsConfig, type NodeDns } from './dns-config.js';
import { sandboxLabels } from './labels.js';
import { cpuQuotaEnforced, podCgroupParent, type CgroupContext, type ResourceContext } from './linux-resources.js';
import { sandboxResources } from '../cgroups/pod-resource-config.js';
import { sandboxHostname } from './pod-hostname.js';
import { seLinuxOptions } from './security-profiles.js';

/** The pod's log directory: <podLogsDir>/<namespace>_<name>_<uid>. */
export function podLogDir(podLogsDir: string, pod: Pod): string {
  return join(podLogsDir, `${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`);
}

/**
 * The namespaces of the pod's sandbox and containers (upstream namespacesForPod): the node's with
 * hostNetwork / hostPID / hostIPC, one PID namespace for the pod with shareProcessNamespace. With the
 * UserNamespacesSupport gate on, the user namespace is named as upstream's
 * GetOrCreateUserNamespaceMappings names it: the pod's own (`userNamespace`, its ID mappings: a pod
 * with `hostUsers: false`), else the node's.
 */
export function podNamespaceOptions(
  pod: Pod,
  userNamespacesSupport = false,
  userNamespace?: cri.UserNamespace,
): cri.NamespaceOption {
  const spec = pod.spec as { hostPID?: boolean; shareProcessNamespace?: boolean };
  const userns = userNamespace ?? (userNamespacesSupport ? { mode: 'NODE' as const } : undefined);
  return {
    network: pod.spec.hostNetwork ? 'NODE' : 'POD',
    pid: spec.hostPID ? 'NODE' : spec.shareProcessNamespace ? 'POD' : 'CONTAINER',
    ipc: pod.spec.hostIPC ? 'NODE' : 'POD',
    ...(userns ? { userns_options: userns } : {}),
  };
}

/** `config` with the pod's own user namespace in its namespace options (the sandbox's, made once it is allocated). */
export function withUserNamespace(config: cri.PodSandboxConfig, userns: cri.UserNamespace): cri.PodSandboxConfig {
  const linux = config.linux ?? {};
  const security = linux.security_context ?? {};
  return {
    ...config,
    linux: {
      ...linux,
      security_context: { ...security, namespace_options: { ...security.namespace_options, userns_options: userns } },
    },
  };
}

/** Node facts the sandbox config needs. */
export interface SandboxContext {
  podLogsDir: string;
  dns: NodeDns;
  cgroups: CgroupContext;
  /**
   * Whether CPU limits are enforced as CFS quotas (not for exclusive CPUs), and their period (the sandbox's resources).
   */
  resources: Pick<ResourceContext, 'cpuCFSQuota' | 'cpuCFSQuotaPeriodUs' | 'exclusiveCpus'>;
  /** The UserNamespacesSupport gate: the node's user namespace named in the namespace options. */
  userNamespacesSupport?: boolean;
}

/**
 * The sandbox's seccomp profile: the runtime's default whatever the pod asks, as upstream forces it (a restrictive
 * pod-level profile is its containers', never the pause process's: kubernetes/kubernetes#84623), and as the Go
 * kubelet v1.36.2's sandbox configs in its fixture show.
 */
const SANDBOX_SECCOMP: cri.SecurityProfile = { profile_type: 'RuntimeDefault' };

/**
 * The pod's resources as upstream's applySandboxResources tells the runtime them (the sandbox's config, and
 * UpdatePodSandboxResources after a resize): no CFS quota while it holds exclusive CPUs.
 */
export function podSandboxResources(pod: Pod, resources: SandboxContext['resources']): cri.LinuxContainerResources {
  return sandboxResources(pod, {
    enforceCpuLimits: cpuQuotaEnforced(resources, pod),
    cpuPeriodUs: resources.cpuCFSQuotaPeriodUs,
    cfsQuota: resources.cpuCFSQuota,
  });
}

/**
 * A container's ports as the runtime gets them (upstream MakePortMappings): every one, with its host port or 0, a port
 * whose name (or, unnamed, whose family, protocol, host IP and ports) came before left out. Pure.
 */
export function portMappings(c: Container): cri.PortMapping[] {
  const seen = new Set<string>();
  const out: cri.PortMapping[] = [];
  for (const p of c.ports ?? []) {
    const protocol = p.protocol ?? 'TCP';
    const family = !p.hostIP ? 'any' : p.hostIP.includes(':') ? 'v6' : 'v4';
    const name = p.name || `${family}-${protocol}-${p.hostIP ?? ''}:${p.containerPort}:${p.hostPort ?? 0}`;
    if (seen.has(name)) continue;
    seen.add(name);
    out.push({
      protocol: protocol as cri.Protocol,
      container_port: p.containerPort,
      host_port: p.hostPort ?? 0,
      host_ip: p.hostIP ?? '',
    });
  }
  return out;
}

/** The PodSandboxConfig for `attempt`, or why the pod cannot have one (upstream: its host name). */
export function generateSandboxConfig(
  pod: Pod,
  attempt: number,
  ctx: SandboxContext,
): { ok: true; config: cri.PodSandboxConfig } | { ok: false; message: string } {
  const hostname = sandboxHostname(pod, ctx.dns.clusterDomain);
  if (!hostname.ok) return hostname;
  const ports = pod.spec.containers.flatMap(portMappings);
  const sc = (pod.spec.securityContext ?? {}) as Record<string, unknown>;
  const privileged = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])].some(
    (c) => (c.securityContext as Record<string, unknown> | undefined)?.privileged === true,
  );
  const sysctls = Object.fromEntries(
    ((sc.sysctls as { name: string; value: string }[] | undefined) ?? []).map((s) => [s.name, s.value]),
  );
  const config: cri.PodSandboxConfig = {
    metadata: { name: pod.metadata.name!, namespace: pod.metadata.namespace!, uid: pod.metadata.uid!, attempt },
    hostname: hostname.hostname,
    log_directory: podLogDir(ctx.podLogsDir, pod),
    dns_config: podDnsConfig(pod, ctx.dns),
    port_mappings: ports,
    labels: sandboxLabels(pod),
    annotations: { ...pod.metadata.annotations },
    linux: {
      cgroup_parent: podCgroupParent(pod, ctx.cgroups),
      // The pod's resources as upstream's applySandboxResources tells them (the embedded runtime's pod cgroup too).
      resources: podSandboxResources(pod, ctx.resources),
      security_context: {
        namespace_options: podNamespaceOptions(pod, ctx.userNamespacesSupport),
        privileged,
        run_as_user: typeof sc.runAsUser === 'number' ? { value: sc.runAsUser } : null,
        run_as_group: typeof sc.runAsGroup === 'number' ? { value: sc.runAsGroup } : null,
        supplemental_groups: Array.isArray(sc.supplementalGroups) ? (sc.supplementalGroups as number[]) : [],
        supplemental_groups_policy: sc.supplementalGroupsPolicy === 'Strict' ? 'Strict' : 'Merge',
        seccomp: SANDBOX_SECCOMP,
        ...seLinuxOptions(pod, undefined),
      },
      sysctls,
    },
  };
  return { ok: true, config };
}
