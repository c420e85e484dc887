/**
 * The CRI configs tskubelet gives the runtime, as the Go kubelet v1.36.2 gave them for the pods of its fixtures
 * (test/fixtures/go-kubelet-1.36/cri-containers.json: the CRI configs containerd kept, zero values left out as its
 * JSON leaves them), on that node (24684084 KiB of memory, 2 MiB and 1 GiB huge pages, swap accounted, NoSwap).
 * Regressions: a container or sandbox without a CPU limit got no `cpu_period`, so a configured cpuCFSQuotaPeriod did
 * not reach it; `/proc/interrupts` was not among the masked paths; a sandbox got the ports with a host port only, and
 * the pod's seccomp profile instead of the runtime's default; a container without a user of its own was not given the
 * image's.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Pod } from '../../../src/api/types.js';
import { linuxContainerResources, type ResourceContext } from '../../../src/agent/runtime/linux-resources.js';
import { generateSandboxConfig, podSandboxResources } from '../../../src/agent/runtime/sandbox-config.js';
import { generateContainerConfig } from '../../../src/agent/runtime/container-config.js';
import type { MountedVolume } from '../../../src/agent/volume/types.js';

const fixtures = join(import.meta.dirname, '..', '..', 'fixtures', 'go-kubelet-1.36');
const pods = (JSON.parse(readFileSync(join(fixtures, 'pods.json'), 'utf8')) as { items: Pod[] }).items;
const kept = JSON.parse(readFileSync(join(fixtures, 'cri-containers.json'), 'utf8')) as {
  Labels: Record<string, string>;
  CRI: {
    config?: {
      [field: string]: unknown;
      log_path?: string;
      command?: string[];
      args?: string[];
      linux?: {
        resources?: Record<string, unknown>;
        security_context?: { masked_paths?: string[]; readonly_paths?: string[]; run_as_user?: { value?: number } };
      };
    };
  };
}[];

const memoryBytes = 24684084 * 1024;
const node: ResourceContext = {
  memoryCapacityBytes: memoryBytes,
  cpuCFSQuota: true,
  cpuCFSQuotaPeriodUs: 100_000,
  hugePageSizesKb: [2048, 1048576],
  swap: { controller: 'v1', behavior: 'NoSwap', capacityBytes: 0, memoryCapacityBytes: memoryBytes },
};

/** As containerd's JSON keeps it: zero values left out. */
const withoutZeros = (o: unknown): unknown =>
  JSON.parse(JSON.stringify(o, (_k, v: unknown) => (v === 0 ? undefined : v)));

describe('Linux resources, as the Go kubelet v1.36.2 gave them to containerd', () => {
  for (const entry of kept) {
    const pod = pods.find((p) => p.metadata.name === entry.Labels['io.kubernetes.pod.name'])!;
    const name = entry.Labels['io.kubernetes.container.name'];
    const want = entry.CRI.config?.linux?.resources;
    if (name)
      it(`${pod.metadata.name}/${name}: every field`, () => {
        const container = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((c) => c.name === name)!;
        expect(withoutZeros(linuxContainerResources(pod, container, node))).toEqual(want);
      });
    else
      it(`${pod.metadata.name}'s sandbox: its CPU`, () => {
        const cpu = (r: Record<string, unknown> | undefined) => ({
          period: r?.cpu_period,
          quota: r?.cpu_quota,
          shares: r?.cpu_shares,
        });
        expect(cpu(withoutZeros(podSandboxResources(pod, node)) as Record<string, unknown>)).toEqual(cpu(want));
      });
  }
});

describe('container configs, as the Go kubelet v1.36.2 gave them to containerd', () => {
  for (const entry of kept.filter((e) => e.Labels['io.kubernetes.container.name'])) {
    const pod = pods.find((p) => p.metadata.name === entry.Labels['io.kubernetes.pod.name'])!;
    const name = entry.Labels['io.kubernetes.container.name'];
    it(`${pod.metadata.name}/${name}: command, log path, masked and read-only paths, user`, () => {
      const container = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find((c) => c.name === name)!;
      // Every volume set up (where does not matter here); the env's API objects left out.
      const volumes = new Map<string, MountedVolume>(
        ((pod.spec.volumes ?? []) as { name: string }[]).map((v) => [
          v.name,
          { path: `/volumes/${v.name}`, readOnly: false, plugin: 'kubernetes.io~empty-dir' },
        ]),
      );
      const r = generateContainerConfig(pod, { ...container, env: undefined, envFrom: undefined }, 0, 'sha256:x', {
        podIPs: [pod.status!.podIP!],
        hostIPs: [pod.status!.hostIP!],
        nodeName: 'ts-node',
        // The fixture's images run as root (a user the image names is what the container gets without its own).
        image: {
          id: 'sha256:x',
          repo_tags: [],
          repo_digests: [],
          size: 1,
          uid: { value: 0 },
          username: '',
          pinned: false,
        },
        resources: node,
        volumes,
      });
      if (!r.ok) throw new Error(r.message);
      const want = entry.CRI.config!;
      const context = r.config.linux?.security_context;
      expect({
        command: r.config.command?.length ? r.config.command : undefined,
        args: r.config.args?.length ? r.config.args : undefined,
        logPath: r.config.log_path,
        masked: context?.masked_paths,
        readonly: context?.readonly_paths,
        runAsUser: context?.run_as_user ? Number(context.run_as_user.value) : undefined,
      }).toEqual({
        command: want.command,
        args: want.args,
        logPath: want.log_path,
        masked: want.linux?.security_context?.masked_paths,
        readonly: want.linux?.security_context?.readonly_paths,
        runAsUser: want.linux?.security_context?.run_as_user
          ? (want.linux.security_context.run_as_user.value ?? 0)
          : undefined,
      });
    });
  }
});

/** As containerd's JSON keeps a config: zero values, empty lists and maps and the default enum values left out. */
const asKept = (o: unknown): unknown =>
  JSON.parse(
    JSON.stringify(o, (_k, v: unknown) =>
      v === 0 || v === '' || v === false || v === null || v === 'TCP' || v === 'RuntimeDefault' || v === 'POD'
        ? undefined
        : v,
    ),
    (_k, v: unknown) =>
      (Array.isArray(v) && !v.length) || (v && typeof v === 'object' && !Array.isArray(v) && !Object.keys(v).length)
        ? undefined
        : v,
  );

describe('sandbox configs, as the Go kubelet v1.36.2 gave them to containerd', () => {
  for (const entry of kept.filter((e) => !e.Labels['io.kubernetes.container.name'])) {
    const pod = pods.find((p) => p.metadata.name === entry.Labels['io.kubernetes.pod.name'])!;
    it(`${pod.metadata.name}: name, host name, log directory, DNS, ports, labels, cgroup parent, seccomp`, () => {
      // That node: no clusterDNS, its resolv.conf naming one server; cgroupfs.
      const r = generateSandboxConfig(pod, 0, {
        podLogsDir: '/var/log/pods',
        dns: { clusterDNS: [], clusterDomain: 'cluster.local', resolvConf: 'nameserver 10.255.255.53\n' },
        cgroups: { cgroupsPerQOS: true, cgroupRoot: '/', cgroupDriver: 'cgroupfs' },
        resources: node,
      });
      if (!r.ok) throw new Error(r.message);
      const pick = (c: Record<string, unknown>) => {
        const linux = c.linux as { cgroup_parent?: string; security_context?: { seccomp?: unknown } } | undefined;
        return asKept({
          metadata: c.metadata,
          hostname: c.hostname,
          log_directory: c.log_directory,
          dns_config: c.dns_config,
          port_mappings: c.port_mappings,
          labels: c.labels,
          cgroup_parent: linux?.cgroup_parent,
          seccomp: linux?.security_context?.seccomp ?? 'RuntimeDefault',
        });
      };
      expect(pick(r.config as unknown as Record<string, unknown>)).toEqual(pick(entry.CRI.config!));
    });
  }
});
