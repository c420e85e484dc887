/** The pure pieces of the CRI configs: quantities, resources, cgroup names, DNS, hosts file, env, runAsNonRoot. */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Container, Pod } from '../../../src/api/types.js';
import { bytes, milliCpu, parseQuantity } from '../../../src/api/quantity.js';
import {
  hugePageUnitSize,
  linuxContainerResources,
  milliCpuToQuota,
  milliCpuToShares,
  podCgroupParent,
} from '../../../src/agent/runtime/linux-resources.js';
import { parseResolvConf, podDnsConfig } from '../../../src/agent/runtime/dns-config.js';
import { hostsFileContent } from '../../../src/agent/runtime/hosts-file.js';
import { dns1123LabelErrors, podHostNameAndDomain, sandboxHostname } from '../../../src/agent/runtime/pod-hostname.js';
import { containerEnv, expand } from '../../../src/agent/runtime/env.js';
import { generateContainerConfig, verifyRunAsNonRoot } from '../../../src/agent/runtime/container-config.js';
import { generateSandboxConfig } from '../../../src/agent/runtime/sandbox-config.js';
import { terminationMessageSource } from '../../../src/agent/runtime/termination-message.js';
import { runtimeErrors, runtimeHandlers } from '../../../src/agent/runtime/runtime-state.js';

const GiB = 2 ** 30;
const pod = (spec: Partial<Pod['spec']> = {}, c: Partial<Container> = {}): Pod => ({
  metadata: { name: 'web', namespace: 'shop', uid: 'u-1' },
  spec: { containers: [{ name: 'main', image: 'img:1', ...c }], ...spec },
});
const ctx = { memoryCapacityBytes: 8 * GiB, cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 };

describe('quantities', () => {
  it.each([
    ['100m', 0.1],
    ['1', 1],
    ['0.5', 0.5],
    ['64Mi', 64 * 2 ** 20],
    ['1G', 1e9],
    ['1e3', 1000],
    ['1.5Gi', 1.5 * GiB],
    ['12x', undefined],
    ['', undefined],
  ])('%s', (q, v) => expect(parseQuantity(q)).toBe(v));
  it('rounds like upstream', () => {
    expect([milliCpu('0.0001'), milliCpu('250m'), milliCpu('2')]).toEqual([1, 250, 2000]);
    expect(bytes('1.5')).toBe(2);
  });
});

describe('Linux resources', () => {
  it('shares and quota follow upstream', () => {
    expect([milliCpuToShares(0), milliCpuToShares(1), milliCpuToShares(250), milliCpuToShares(1e6)]).toEqual([
      2, 2, 256, 262144,
    ]);
    expect([milliCpuToQuota(0, 100_000), milliCpuToQuota(5, 100_000), milliCpuToQuota(500, 100_000)]).toEqual([
      0, 1000, 50_000,
    ]);
  });
  it.each([
    ['BestEffort', {}, { cpu_shares: 2, oom_score_adj: 1000, cpu_period: 100_000 }],
    [
      'Guaranteed',
      { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
      { cpu_shares: 1024, oom_score_adj: -997, memory_limit_in_bytes: GiB, cpu_period: 100_000, cpu_quota: 100_000 },
    ],
    [
      'limit only → request = limit',
      { limits: { cpu: '500m' } },
      { cpu_shares: 512, oom_score_adj: 999, cpu_period: 100_000, cpu_quota: 50_000 },
    ],
  ])('%s', (_n, resources, want) => {
    const p = pod({}, { resources });
    expect(linuxContainerResources(p, p.spec.containers[0], ctx)).toEqual(want);
  });
  it('no CFS quota when disabled', () => {
    const p = pod({}, { resources: { limits: { cpu: '1' } } });
    expect(linuxContainerResources(p, p.spec.containers[0], { ...ctx, cpuCFSQuota: false }).cpu_quota).toBeUndefined();
  });
  it("no CFS quota (-1) for a container with exclusive CPUs, nor for its pod; the pod's other containers keep theirs", () => {
    const cpu = { requests: { cpu: '2', memory: '1Gi' }, limits: { cpu: '2', memory: '1Gi' } };
    const p = pod({}, { resources: cpu });
    p.spec.containers.push({ name: 'side', image: 'img:1', resources: { limits: { cpu: '500m', memory: '1Gi' } } });
    const exclusive = (uid: string, name?: string) => uid === 'u-1' && (name === undefined || name === 'main');
    const withExclusive = { ...ctx, exclusiveCpus: exclusive };
    expect(linuxContainerResources(p, p.spec.containers[0], withExclusive)).toMatchObject({
      cpu_period: 100_000,
      cpu_quota: -1,
    });
    expect(linuxContainerResources(p, p.spec.containers[1], withExclusive).cpu_quota).toBe(50_000);
    expect(linuxContainerResources(p, p.spec.containers[0], ctx).cpu_quota).toBe(200_000);
    const sandboxQuota = (resources: typeof ctx) => {
      const r = generateSandboxConfig(p, 0, {
        podLogsDir: '/var/log/pods',
        dns: { clusterDNS: [], clusterDomain: 'cluster.local', resolvConf: '' },
        cgroups: { cgroupsPerQOS: true, cgroupRoot: '/', cgroupDriver: 'cgroupfs' },
        resources,
      });
      return r.ok ? r.config.linux?.resources?.cpu_quota : r.message;
    };
    expect(sandboxQuota(withExclusive)).toBe(-1);
    expect(sandboxQuota(ctx)).toBe(250_000);
  });
  it('each container is one OOM kill group where the node says so (cgroup v2 without singleProcessOOMKill)', () => {
    const p = pod({}, { resources: { limits: { memory: '64Mi' } } });
    expect(linuxContainerResources(p, p.spec.containers[0], { ...ctx, oomKillGroup: true }).unified).toEqual({
      'memory.oom.group': '1',
    });
    expect(linuxContainerResources(p, p.spec.containers[0], ctx).unified).toBeUndefined();
  });
  it("huge page limits as upstream's GetHugepageLimitsFromResources: every size the machine has, 0 unless the container's limits give it", () => {
    const p = pod(
      {},
      {
        resources: {
          limits: { memory: '1Gi', 'hugepages-2Mi': '64Mi' },
          requests: { memory: '1Gi', 'hugepages-2Mi': '64Mi' },
        },
      },
    );
    const sizes = { ...ctx, hugePageSizesKb: [2048, 1048576] };
    expect(linuxContainerResources(p, p.spec.containers[0], sizes).hugepage_limits).toEqual([
      { page_size: '2MB', limit: 64 * 2 ** 20 },
      { page_size: '1GB', limit: 0 },
    ]);
    const plain = pod();
    expect(linuxContainerResources(plain, plain.spec.containers[0], sizes).hugepage_limits).toEqual([
      { page_size: '2MB', limit: 0 },
      { page_size: '1GB', limit: 0 },
    ]);
    expect(linuxContainerResources(plain, plain.spec.containers[0], ctx).hugepage_limits).toBeUndefined();
    expect(hugePageUnitSize(64)).toBe('64KB');
  });
  it('cgroup parents per QoS class and driver', () => {
    const c = { cgroupsPerQOS: true, cgroupRoot: '', cgroupDriver: 'cgroupfs' as const };
    expect(podCgroupParent(pod(), c)).toBe('/kubepods/besteffort/podu-1');
    expect(podCgroupParent(pod({}, { resources: { requests: { cpu: '1' } } }), c)).toBe('/kubepods/burstable/podu-1');
    expect(podCgroupParent(pod({}, { resources: { limits: { cpu: '1', memory: '1Gi' } } }), c)).toBe(
      '/kubepods/podu-1',
    );
    expect(podCgroupParent(pod(), { ...c, cgroupDriver: 'systemd' })).toBe('kubepods-besteffort-podu_1.slice');
    expect(podCgroupParent(pod(), { ...c, cgroupRoot: '/custom' })).toBe('/custom/kubepods/besteffort/podu-1');
    expect(podCgroupParent(pod(), { ...c, cgroupsPerQOS: false })).toBe('/');
  });
});

describe('DNS config', () => {
  const host =
    'nameserver 10.0.0.2\nnameserver 10.0.0.3 # second\n; comment\nsearch corp.example lab.example.\noptions rotate timeout:2\n';
  const node = { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local', resolvConf: host };
  it('parses resolv.conf', () =>
    expect(parseResolvConf(host)).toEqual({
      servers: ['10.0.0.2', '10.0.0.3'],
      searches: ['corp.example', 'lab.example'],
      options: ['rotate', 'timeout:2'],
    }));
  it.each([
    [
      'ClusterFirst',
      {},
      {
        servers: ['10.96.0.10'],
        searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'lab.example'],
        options: ['ndots:5'],
      },
    ],
    [
      'ClusterFirst + hostNetwork → Default',
      { hostNetwork: true },
      {
        servers: ['10.0.0.2', '10.0.0.3'],
        searches: ['corp.example', 'lab.example'],
        options: ['rotate', 'timeout:2'],
      },
    ],
    [
      'ClusterFirstWithHostNet',
      { hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' },
      {
        servers: ['10.96.0.10'],
        searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'lab.example'],
        options: ['ndots:5'],
      },
    ],
    [
      'Default',
      { dnsPolicy: 'Default' },
      {
        servers: ['10.0.0.2', '10.0.0.3'],
        searches: ['corp.example', 'lab.example'],
        options: ['rotate', 'timeout:2'],
      },
    ],
    [
      'None + dnsConfig',
      {
        dnsPolicy: 'None',
        dnsConfig: {
          nameservers: ['1.1.1.1'],
          searches: ['a.b'],
          options: [{ name: 'ndots', value: '1' }, { name: 'edns0' }],
        },
      },
      { servers: ['1.1.1.1'], searches: ['a.b'], options: ['ndots:1', 'edns0'] },
    ],
    [
      'ClusterFirst + dnsConfig merges',
      { dnsConfig: { nameservers: ['10.96.0.10', '8.8.8.8'], options: [{ name: 'ndots', value: '2' }] } },
      {
        servers: ['10.96.0.10', '8.8.8.8'],
        searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'lab.example'],
        options: ['ndots:2'],
      },
    ],
  ])('%s', (_n, spec, want) => expect(podDnsConfig(pod(spec as Partial<Pod['spec']>), node)).toEqual(want));
  it('ClusterFirst without clusterDNS falls back to the node; at most 3 nameservers', () => {
    expect(podDnsConfig(pod(), { ...node, clusterDNS: [] }).servers).toEqual(['10.0.0.2', '10.0.0.3']);
    expect(
      podDnsConfig(
        pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1', '2.2.2.2', '3.3.3.3', '4.4.4.4'] } }),
        node,
      ).servers,
    ).toHaveLength(3);
  });
});

describe('pod host name and domain (upstream GeneratePodHostNameAndDomain, GetNodenameForKernel)', () => {
  const named = (spec: Record<string, unknown>, name = 'web') => ({
    ...pod(spec as Partial<Pod['spec']>),
    metadata: { name, namespace: 'shop', uid: 'u' },
  });
  it('spec.hostname, else the name cut to 63 characters without a trailing "-" or "."; a subdomain gives <sub>.<ns>.svc.<domain>', () => {
    expect(podHostNameAndDomain(named({}), 'cluster.local')).toEqual({ ok: true, hostname: 'web', domain: '' });
    expect(podHostNameAndDomain(named({ hostname: 'db-0', subdomain: 'db' }), 'cluster.local')).toEqual({
      ok: true,
      hostname: 'db-0',
      domain: 'db.shop.svc.cluster.local',
    });
    expect(podHostNameAndDomain(named({}, `${'a'.repeat(62)}-.b`), 'c')).toEqual({
      ok: true,
      hostname: 'a'.repeat(62),
      domain: '',
    });
  });
  it("an invalid hostname or subdomain is upstream's error", () => {
    expect(podHostNameAndDomain(named({ hostname: 'Web_1' }), '')).toEqual({
      ok: false,
      message:
        "pod Hostname \"Web_1\" is not a valid DNS label: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    });
    expect(podHostNameAndDomain(named({ subdomain: 'a.b' }), '')).toEqual({
      ok: false,
      message: 'pod Subdomain "a.b" is not a valid DNS label: must not contain dots',
    });
    expect(dns1123LabelErrors('x'.repeat(64))).toEqual(['must be no more than 63 characters']);
  });
  it("the sandbox gets the FQDN with setHostnameAsFQDN and a subdomain (at most 64 characters), the node's name with hostNetwork", () => {
    expect(sandboxHostname(named({ subdomain: 'grp', setHostnameAsFQDN: true }), 'cluster.local')).toEqual({
      ok: true,
      hostname: 'web.grp.shop.svc.cluster.local',
    });
    expect(sandboxHostname(named({ setHostnameAsFQDN: true }), 'cluster.local')).toEqual({ ok: true, hostname: 'web' });
    expect(sandboxHostname(named({ subdomain: 'grp' }), 'cluster.local')).toEqual({ ok: true, hostname: 'web' });
    expect(
      sandboxHostname(named({ subdomain: 'grp', setHostnameAsFQDN: true, hostNetwork: true }), 'cluster.local'),
    ).toEqual({ ok: true, hostname: '' });
    const long = named({ hostname: 'h'.repeat(40), subdomain: 'grp', setHostnameAsFQDN: true });
    const fqdn = `${'h'.repeat(40)}.grp.shop.svc.cluster.local`;
    const refused = {
      ok: false,
      message: `failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (64 characters is the max, ${fqdn.length} characters requested)`,
    };
    expect(sandboxHostname(long, 'cluster.local')).toEqual(refused);
    const dns = { clusterDNS: [], clusterDomain: 'cluster.local', resolvConf: '' };
    expect(
      generateSandboxConfig(long, 0, {
        podLogsDir: '/l',
        dns,
        cgroups: { cgroupsPerQOS: false, cgroupRoot: '', cgroupDriver: 'cgroupfs' },
        resources: { cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 },
      }),
    ).toEqual(refused);
  });
});

describe('spec.hostnameOverride (HostnameOverride)', () => {
  const named = (spec: Record<string, unknown>) => ({
    ...pod(spec as Partial<Pod['spec']>),
    metadata: { name: 'web', namespace: 'shop', uid: 'u' },
  });
  it('is the whole host name: hostname and subdomain do not apply, and there is no domain', () => {
    expect(
      podHostNameAndDomain(named({ hostnameOverride: 'db.example', hostname: 'h', subdomain: 's' }), 'cluster.local'),
    ).toEqual({ ok: true, hostname: 'db.example', domain: '' });
    expect(sandboxHostname(named({ hostnameOverride: 'db.example', subdomain: 's' }), 'cluster.local')).toEqual({
      ok: true,
      hostname: 'db.example',
    });
  });
  it('is refused when it is not a DNS subdomain; cut to 63 characters otherwise', () => {
    const refused = podHostNameAndDomain(named({ hostnameOverride: 'Not_Valid' }), '');
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.message).toMatch(/^pod HostnameOverride "Not_Valid" is not a valid DNS subdomain: /);
    expect(podHostNameAndDomain(named({ hostnameOverride: `${'a'.repeat(62)}.b.c` }), '')).toEqual({
      ok: true,
      hostname: 'a'.repeat(62),
      domain: '',
    });
  });
});

describe('managed /etc/hosts', () => {
  it('pod network: localhost block, the pod entry (FQDN with a subdomain), aliases', () => {
    const text = hostsFileContent(pod({ subdomain: 'grp', hostAliases: [{ ip: '10.1.1.1', hostnames: ['a', 'b'] }] }), {
      podIPs: ['10.88.0.5'],
      hostname: 'web',
      domain: 'grp.shop.svc.cluster.local',
    });
    expect(text).toBe(
      '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n10.88.0.5\tweb.grp.shop.svc.cluster.local\tweb\n\n# Entries added by HostAliases.\n10.1.1.1\ta\tb\n',
    );
  });
  it('host network: the node file', () => {
    expect(
      hostsFileContent(pod({ hostNetwork: true }), {
        podIPs: ['192.0.2.1'],
        hostname: 'n',
        domain: '',
        nodeHostsFile: '127.0.0.1 localhost',
      }),
    ).toBe('# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n');
  });
});

describe('env', () => {
  const envCtx = { podIPs: ['10.0.0.9'], hostIPs: ['192.0.2.1'], nodeName: 'n1' };
  it('expands $(VAR), keeps unknown references and $$', () => {
    const look = (n: string) => (({ A: 'x' }) as Record<string, string>)[n];
    expect([expand('$(A)-$(B)-$$(A)-$', look), expand('$(A', look)]).toEqual(['x-$(B)-$(A)-$', '$(A']);
  });
  it('fieldRef and resourceFieldRef; API refs are config errors', () => {
    const p = pod(
      {},
      {
        resources: { limits: { cpu: '1500m', memory: '128Mi' } },
        env: [
          { name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
          { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
          { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
          { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
          { name: 'URL', value: 'http://$(IP):80' },
        ],
      },
    );
    expect(containerEnv(p, p.spec.containers[0], envCtx)).toEqual({
      ok: true,
      env: [
        { key: 'NAME', value: 'web' },
        { key: 'IP', value: '10.0.0.9' },
        { key: 'NODE', value: 'n1' },
        { key: 'CPU', value: '2' },
        { key: 'MEM', value: '128' },
        { key: 'URL', value: 'http://10.0.0.9:80' },
      ],
    });
    const bad = pod({}, { env: [{ name: 'S', valueFrom: { secretKeyRef: { name: 'db', key: 'pw' } } }] });
    expect(containerEnv(bad, bad.spec.containers[0], envCtx)).toEqual({
      ok: false,
      message: "couldn't get secret shop/db: no apiserver configured",
    });
  });
});

describe('container config', () => {
  const base = { podIPs: ['10.0.0.9'], hostIPs: ['192.0.2.1'], nodeName: 'n1', resources: ctx, image: null };
  it('runAsNonRoot as upstream', () => {
    const nr = (sc: Record<string, unknown>, image: { uid?: { value: number } | null; username?: string } | null) => {
      const p = pod({ securityContext: { runAsNonRoot: true } }, { securityContext: sc });
      return verifyRunAsNonRoot(p, p.spec.containers[0], image as never);
    };
    expect(nr({}, { uid: { value: 1000 } })).toBeUndefined();
    expect(nr({ runAsUser: 5 }, { uid: { value: 0 } })).toBeUndefined();
    expect(nr({ runAsUser: 0 }, null)).toBe(
      'container\'s runAsUser breaks non-root policy (pod: "web_shop(u-1)", container: main)',
    );
    expect(nr({}, { uid: null, username: '' })).toBe(
      'container has runAsNonRoot and image will run as root (pod: "web_shop(u-1)", container: main)',
    );
    expect(nr({}, { uid: null, username: 'app' })).toMatch(/image has non-numeric user \(app\)/);
  });
  it("the image's user without one in the spec, as upstream: its uid, else its user name", () => {
    const user = (c: Partial<Container>, image: { uid?: { value: number } | null; username?: string }) => {
      const p = pod({}, c);
      const r = generateContainerConfig(p, p.spec.containers[0], 0, 'x', { ...base, image: image as never });
      const sc = r.ok ? r.config.linux!.security_context! : undefined;
      return [sc?.run_as_user ?? null, sc?.run_as_username ?? ''];
    };
    expect(user({}, { uid: { value: 1000 }, username: '' })).toEqual([{ value: 1000 }, '']);
    expect(user({}, { uid: null, username: 'app' })).toEqual([null, 'app']);
    expect(user({ securityContext: { runAsUser: 7 } }, { uid: null, username: 'app' })).toEqual([{ value: 7 }, '']);
    expect(user({}, { uid: null, username: '' })).toEqual([null, '']);
  });
  it('mounts the hosts file unless the container mounts /etc/hosts itself; termination log at its path', () => {
    const p = pod({}, { terminationMessagePath: '/dev/termination-log' });
    const r = generateContainerConfig(p, p.spec.containers[0], 2, 'sha256:abc', {
      ...base,
      hostsFile: '/k/pods/u-1/etc-hosts',
      terminationLogFile: '/k/pods/u-1/containers/main/ab12',
    });
    expect(r.ok && r.config.mounts).toEqual([
      { container_path: '/etc/hosts', host_path: '/k/pods/u-1/etc-hosts', readonly: false },
      { container_path: '/dev/termination-log', host_path: '/k/pods/u-1/containers/main/ab12', readonly: false },
    ]);
    expect(r.ok && [r.config.log_path, r.config.metadata.attempt]).toEqual(['main/2.log', 2]);
    const own = pod({}, { volumeMounts: [{ name: 'h', mountPath: '/etc/hosts' }] });
    const r2 = generateContainerConfig(own, own.spec.containers[0], 0, 'x', {
      ...base,
      hostsFile: '/h',
      volumes: new Map([['h', { path: '/v/h', readOnly: false, plugin: 'kubernetes.io~host-path' }]]),
    });
    expect(r2.ok && r2.config.mounts).toEqual([
      {
        container_path: '/etc/hosts',
        host_path: '/v/h',
        readonly: false,
        selinux_relabel: false,
        propagation: 'PROPAGATION_PRIVATE',
      },
    ]);
    const missing = generateContainerConfig(own, own.spec.containers[0], 0, 'x', { ...base, hostsFile: '/h' });
    expect(missing).toEqual({ ok: false, message: 'cannot find volume "h" to mount into container "main"' });
  });
  it('passes lifecycle.stopSignal to the runtime in CRI spelling with the ContainerStopSignals gate on, never with it off', () => {
    const signalOf = (stopSignal: string | undefined, gate: boolean) => {
      const p = pod({}, stopSignal ? { lifecycle: { stopSignal } } : {});
      const r = generateContainerConfig(p, p.spec.containers[0], 0, 'x', { ...base, containerStopSignals: gate });
      return r.ok ? r.config.stop_signal : r.message;
    };
    expect(signalOf('SIGRTMIN+3', true)).toBe('SIGRTMINPLUS3');
    expect(signalOf('SIGUSR1', true)).toBe('SIGUSR1');
    expect(signalOf(undefined, true)).toBeUndefined();
    expect(signalOf('SIGUSR1', false)).toBeUndefined();
  });
  it('passes the pod supplementalGroupsPolicy to the runtime for the sandbox and each container (Merge by default)', () => {
    const policyOf = (p: Pod) => {
      const r = generateContainerConfig(p, p.spec.containers[0], 0, 'x', base);
      return r.ok ? r.config.linux!.security_context!.supplemental_groups_policy : r.message;
    };
    expect(policyOf(pod({ securityContext: { supplementalGroupsPolicy: 'Strict' } }))).toBe('Strict');
    expect(policyOf(pod({}))).toBe('Merge');
    const dns = { clusterDNS: [], clusterDomain: 'cluster.local', resolvConf: '' };
    const sandbox = generateSandboxConfig(pod({ securityContext: { supplementalGroupsPolicy: 'Strict' } }), 0, {
      podLogsDir: '/l',
      dns,
      cgroups: { cgroupsPerQOS: false, cgroupRoot: '', cgroupDriver: 'cgroupfs' },
      resources: { cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 },
    });
    expect(sandbox.ok && sandbox.config.linux?.security_context?.supplemental_groups_policy).toBe('Strict');
  });
  it("privileged and procMount Unmasked containers get no masked or read-only paths; others get upstream's defaults", () => {
    const paths = (p: Pod) => {
      const r = generateContainerConfig(p, p.spec.containers[0], 0, 'x', base);
      return r.ok
        ? [r.config.linux!.security_context!.masked_paths, r.config.linux!.security_context!.readonly_paths]
        : r.message;
    };
    expect(paths(pod({}, { securityContext: { privileged: true } }))).toEqual([[], []]);
    expect(paths(pod({}, { securityContext: { procMount: 'Unmasked' } }))).toEqual([[], []]);
    const [masked, readonly] = paths(pod({}, { securityContext: { procMount: 'Default' } })) as string[][];
    expect(masked).toContain('/proc/kcore');
    expect(masked).toContain('/sys/devices/virtual/powercap');
    expect(readonly).toContain('/proc/sys');
  });
  it("SELinux labels: the container's seLinuxOptions, else the pod's, on the container; the pod's on the sandbox; none when unset", () => {
    const dns = { clusterDNS: [], clusterDomain: '', resolvConf: '' };
    const labels = (p: Pod) => {
      const sb = generateSandboxConfig(p, 0, {
        podLogsDir: '/l',
        dns,
        cgroups: { cgroupsPerQOS: false, cgroupRoot: '', cgroupDriver: 'cgroupfs' },
        resources: { cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 },
      });
      const c = generateContainerConfig(p, p.spec.containers[0], 0, 'x', base);
      return [
        sb.ok && sb.config.linux!.security_context!.selinux_options,
        c.ok && c.config.linux!.security_context!.selinux_options,
      ];
    };
    expect(labels(pod())).toEqual([undefined, undefined]);
    const podLevel = { user: '', role: '', type: 'spc_t', level: 's0:c1,c2' };
    const p = pod({ securityContext: { seLinuxOptions: { type: 'spc_t', level: 's0:c1,c2' } } });
    expect(labels(p)).toEqual([podLevel, podLevel]);
    const own = pod(
      { securityContext: { seLinuxOptions: { level: 's0:c1,c2' } } },
      { securityContext: { seLinuxOptions: { user: 'system_u', level: 's0:c3' } } },
    );
    expect(labels(own)).toEqual([
      { user: '', role: '', type: '', level: 's0:c1,c2' },
      { user: 'system_u', role: '', type: '', level: 's0:c3' },
    ]);
  });
  it("namespaces: the pod's own, the node's with hostNetwork / hostPID / hostIPC, one PID namespace with shareProcessNamespace (hostPID wins), alike for sandbox and containers", () => {
    const dns = { clusterDNS: [], clusterDomain: '', resolvConf: '' };
    const both = (p: Pod) => {
      const sb = generateSandboxConfig(p, 0, {
        podLogsDir: '/l',
        dns,
        cgroups: { cgroupsPerQOS: false, cgroupRoot: '', cgroupDriver: 'cgroupfs' },
        resources: { cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 },
      });
      const c = generateContainerConfig(p, p.spec.containers[0], 0, 'x', base);
      const ns = sb.ok && sb.config.linux!.security_context!.namespace_options;
      expect(c.ok && c.config.linux!.security_context!.namespace_options).toEqual(ns);
      return ns;
    };
    expect(both(pod())).toEqual({ network: 'POD', pid: 'CONTAINER', ipc: 'POD' });
    expect(both(pod({ shareProcessNamespace: true }))).toEqual({ network: 'POD', pid: 'POD', ipc: 'POD' });
    expect(both(pod({ shareProcessNamespace: true, hostPID: true, hostIPC: true, hostNetwork: true }))).toEqual({
      network: 'NODE',
      pid: 'NODE',
      ipc: 'NODE',
    });
  });
  it("namespaces with UserNamespacesSupport: the node's user namespace named for sandbox and containers, as the Go kubelet v1.36 sends it", () => {
    const fixture = JSON.parse(
      readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'go-kubelet-1.36', 'cri-containers.json'), 'utf8'),
    ) as { CRI: { config?: { linux?: { security_context?: { namespace_options?: unknown } } } } }[];
    const sent = fixture.flatMap((x) => x.CRI.config?.linux?.security_context?.namespace_options ?? []);
    // The Go kubelet's JSON dump has the enum as its number: NODE is 2.
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.every((o) => (o as { userns_options?: { mode: number } }).userns_options?.mode === 2)).toBe(true);
    const options = (p: Pod, userNamespacesSupport: boolean) => {
      const sb = generateSandboxConfig(p, 0, {
        podLogsDir: '/l',
        dns: { clusterDNS: [], clusterDomain: '', resolvConf: '' },
        cgroups: { cgroupsPerQOS: false, cgroupRoot: '', cgroupDriver: 'cgroupfs' },
        resources: { cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 },
        userNamespacesSupport,
      });
      const c = generateContainerConfig(p, p.spec.containers[0], 0, 'x', { ...base, userNamespacesSupport });
      const ns = sb.ok && sb.config.linux!.security_context!.namespace_options;
      expect(c.ok && c.config.linux!.security_context!.namespace_options).toEqual(ns);
      return ns;
    };
    expect(options(pod(), true)).toEqual({
      network: 'POD',
      pid: 'CONTAINER',
      ipc: 'POD',
      userns_options: { mode: 'NODE' },
    });
    expect(options(pod({ hostUsers: true, hostNetwork: true }), true)).toMatchObject({
      userns_options: { mode: 'NODE' },
    });
    expect(options(pod(), false)).not.toHaveProperty('userns_options');
  });
  it('seccomp: the container field, else the pod field, else RuntimeDefault with seccompDefault, else Unconfined; sandboxes RuntimeDefault always', () => {
    const security = { seccompDefault: false, seccompProfileRoot: '/var/lib/kubelet/seccomp' };
    const seccomp = (p: Pod, sec = security) => {
      const r = generateContainerConfig(p, p.spec.containers[0], 0, 'x', { ...base, security: sec });
      return r.ok ? r.config.linux!.security_context!.seccomp : r.message;
    };
    expect(seccomp(pod())).toEqual({ profile_type: 'Unconfined' });
    expect(seccomp(pod(), { ...security, seccompDefault: true })).toEqual({ profile_type: 'RuntimeDefault' });
    const podLevel = pod({ securityContext: { seccompProfile: { type: 'RuntimeDefault' } } });
    expect(seccomp(podLevel)).toEqual({ profile_type: 'RuntimeDefault' });
    const both = pod(
      { securityContext: { seccompProfile: { type: 'RuntimeDefault' } } },
      { securityContext: { seccompProfile: { type: 'Unconfined' } } },
    );
    expect(seccomp(both, { ...security, seccompDefault: true })).toEqual({ profile_type: 'Unconfined' });
    const local = pod(
      {},
      { securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/audit.json' } } },
    );
    expect(seccomp(local)).toEqual({
      profile_type: 'Localhost',
      localhost_ref: '/var/lib/kubelet/seccomp/profiles/audit.json',
    });
    const unnamed = pod({}, { securityContext: { seccompProfile: { type: 'Localhost' } } });
    expect(seccomp(unnamed)).toBe('localhostProfile must be set if seccompProfile type is Localhost.');
    const dns = { clusterDNS: [], clusterDomain: '', resolvConf: '' };
    const sandbox = (p: Pod) => {
      const r = generateSandboxConfig(p, 0, {
        podLogsDir: '/l',
        dns,
        cgroups: { cgroupsPerQOS: false, cgroupRoot: '', cgroupDriver: 'cgroupfs' },
        resources: { cpuCFSQuota: true, cpuCFSQuotaPeriodUs: 100_000 },
      });
      return r.ok ? r.config.linux!.security_context!.seccomp : r.message;
    };
    // As upstream forces it (kubernetes/kubernetes#84623): a pod's own profile is its containers', not the pause's.
    for (const p of [podLevel, both, local, unnamed, pod()])
      expect(sandbox(p)).toEqual({ profile_type: 'RuntimeDefault' });
  });
  it('AppArmor: the container field, else the beta annotation, else the pod field; nothing when none asks', () => {
    const apparmor = (p: Pod) => {
      const r = generateContainerConfig(p, p.spec.containers[0], 0, 'x', base);
      if (!r.ok) return r.message;
      const sc = r.config.linux!.security_context!;
      return [sc.apparmor, sc.apparmor_profile];
    };
    expect(apparmor(pod())).toEqual([undefined, undefined]);
    const podLevel = pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } });
    expect(apparmor(podLevel)).toEqual([{ profile_type: 'RuntimeDefault' }, 'runtime/default']);
    const annotated: Pod = {
      ...podLevel,
      metadata: {
        ...podLevel.metadata,
        annotations: { 'container.apparmor.security.beta.kubernetes.io/main': 'localhost/k8s-nginx' },
      },
    };
    expect(apparmor(annotated)).toEqual([
      { profile_type: 'Localhost', localhost_ref: 'k8s-nginx' },
      'localhost/k8s-nginx',
    ]);
    const own = pod(
      { securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } },
      { securityContext: { appArmorProfile: { type: 'Unconfined' } } },
    );
    expect(apparmor(own)).toEqual([{ profile_type: 'Unconfined' }, 'unconfined']);
    expect(apparmor(pod({}, { securityContext: { appArmorProfile: { type: 'Localhost' } } }))).toBe(
      'missing localhost apparmor profile name',
    );
  });
});

describe('termination message source and runtime conditions', () => {
  const status = (o: Record<string, unknown>) =>
    ({
      id: 'c',
      state: 'CONTAINER_EXITED',
      exit_code: 1,
      reason: 'Error',
      annotations: {
        'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
        'io.kubernetes.container.terminationMessagePolicy': 'FallbackToLogsOnError',
      },
      mounts: [{ container_path: '/dev/termination-log', host_path: '/h/f' }],
      ...o,
    }) as never;
  it('finds the host file through the mounts; logs only for a non-zero exit with FallbackToLogsOnError', () => {
    expect(terminationMessageSource(status({}))).toEqual({ file: '/h/f', fallbackToLogs: true });
    expect(terminationMessageSource(status({ exit_code: 0 }))).toEqual({ file: '/h/f', fallbackToLogs: false });
    expect(terminationMessageSource(status({ reason: 'ContainerCannotRun' })).fallbackToLogs).toBe(false);
    expect(terminationMessageSource(status({ mounts: [] })).file).toBeUndefined();
  });
  it('formats runtime conditions as upstream', () => {
    expect(
      runtimeErrors({
        conditions: [
          { type: 'RuntimeReady', status: true },
          {
            type: 'NetworkReady',
            status: false,
            reason: 'NetworkPluginNotReady',
            message: 'cni plugin not initialized',
          },
        ],
      }),
    ).toEqual({
      runtime: undefined,
      network:
        'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized',
    });
    expect(runtimeErrors({ conditions: [] }).runtime).toBe('container runtime not ready: RuntimeReady missing');
  });
  it('reads the runtime handlers of a Status answer as the node status names them, by name, none before containerd 2', () => {
    expect(
      runtimeHandlers({
        runtime_handlers: [
          { name: 'runc', features: { recursive_read_only_mounts: true, user_namespaces: true } },
          { name: '', features: { recursive_read_only_mounts: true } },
          { name: 'kata', features: null },
        ],
      }),
    ).toEqual([
      // Sorted as v1.36 sorts them (kubernetes/kubernetes#135358): a runtime that lists them from a map changes its
      // order between answers, and each new order would be a Node update.
      { name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: false } },
      { name: 'kata', features: { recursiveReadOnlyMounts: false, userNamespaces: false } },
      { name: 'runc', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
    ]);
    expect(runtimeHandlers({})).toEqual([]);
  });
});
