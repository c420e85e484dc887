import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseFlags, FlagError } from '../../src/config/flags.js';
import { loadConfig, ConfigError } from '../../src/config/load.js';
import { parseDuration, formatDuration } from '../../src/lib/duration.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-cfg-'));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

describe('flags', () => {
  it('parses Go kubelet flag syntax', () => {
    const p = parseFlags([
      '--pod-manifest-path=/m',
      '--port',
      '1234',
      '--read-only-port=0',
      '--hostname-override',
      'N1',
      '--v=3',
      '--manifest-url-header',
      'A:1,B:2',
      '--cgroup-driver=systemd',
      '--fail-swap-on=false',
      '--kernel-memcg-notification',
      '--kube-reserved=cpu=1,memory=1Gi',
      '--eviction-hard=memory.available<200Mi',
      '--register-with-taints=a=b:NoSchedule,c:NoExecute',
      '--node-labels=x=1,y=2',
      '--seccomp-default',
      '--runtime-cgroups=/system.slice/containerd.service',
      '--kubelet-cgroups',
      '/system.slice/kubelet.service',
      '--system-cgroups=/system.slice',
    ]);
    expect(p.config).toEqual({
      staticPodPath: '/m',
      port: 1234,
      readOnlyPort: 0,
      staticPodURLHeader: { A: ['1'], B: ['2'] },
      cgroupDriver: 'systemd',
      kubeletCgroups: '/system.slice/kubelet.service',
      systemCgroups: '/system.slice',
      kubeReserved: { cpu: '1', memory: '1Gi' },
      evictionHard: { 'memory.available': '200Mi' },
      registerWithTaints: [
        { key: 'a', value: 'b', effect: 'NoSchedule' },
        { key: 'c', effect: 'NoExecute' },
      ],
      seccompDefault: true,
      failSwapOn: false,
    });
    expect(p.flags).toMatchObject({
      hostnameOverride: 'N1',
      v: 3,
      nodeLabels: { x: '1', y: '2' },
      runtimeCgroups: '/system.slice/containerd.service',
    });
    expect(p.unimplemented).toEqual(['kernel-memcg-notification']);
    expect(() => parseFlags(['--register-with-taints=a=b:Sometimes'])).toThrow(/want key\[=value\]:Effect/);
    expect(() => parseFlags(['--kube-reserved=cpu'])).toThrow(/key=value/);
  });
  it('rejects unknown flags and bad values', () => {
    expect(() => parseFlags(['--no-such-flag'])).toThrow(FlagError);
    expect(() => parseFlags(['--port=abc'])).toThrow(/invalid argument "abc" for "--port"/);
    expect(() => parseFlags(['--port'])).toThrow(/needs an argument/);
  });
  it("accepts every flag of the Go kubelet's command-line reference (unimplemented ones with a warning), so an existing node's command line starts", () => {
    const upstream =
      'address allowed-unsafe-sysctls anonymous-auth authentication-token-webhook authentication-token-webhook-cache-ttl authorization-mode authorization-webhook-cache-authorized-ttl authorization-webhook-cache-unauthorized-ttl bootstrap-kubeconfig cert-dir cgroup-driver cgroup-root cgroups-per-qos client-ca-file cloud-provider cluster-dns cluster-domain config config-dir container-log-max-files container-log-max-size container-runtime-endpoint contention-profiling cpu-cfs-quota cpu-cfs-quota-period cpu-manager-policy cpu-manager-policy-options cpu-manager-reconcile-period enable-controller-attach-detach enable-debugging-handlers enable-server enforce-node-allocatable event-burst event-qps eviction-hard eviction-max-pod-grace-period eviction-minimum-reclaim eviction-pressure-transition-period eviction-soft eviction-soft-grace-period exit-on-lock-contention experimental-allocatable-ignore-eviction experimental-mounter-path fail-cgroupv1 fail-swap-on feature-gates file-check-frequency hairpin-mode healthz-bind-address healthz-port hostname-override http-check-frequency image-credential-provider-bin-dir image-credential-provider-config image-gc-high-threshold image-gc-low-threshold image-service-endpoint kernel-memcg-notification kube-api-burst kube-api-content-type kube-api-qps kube-reserved kube-reserved-cgroup kubeconfig kubelet-cgroups local-storage-capacity-isolation lock-file log-flush-frequency log-text-info-buffer-size log-text-split-stream logging-format make-iptables-util-chains manifest-url manifest-url-header max-open-files max-pods maximum-dead-containers maximum-dead-containers-per-container memory-manager-policy minimum-container-ttl-duration minimum-image-ttl-duration node-ip node-labels node-status-max-images node-status-update-frequency oom-score-adj pod-cidr pod-manifest-path pod-max-pids pods-per-core port protect-kernel-defaults provider-id qos-reserved read-only-port register-node register-with-taints registry-burst registry-qps reserved-cpus reserved-memory resolv-conf root-dir rotate-certificates rotate-server-certificates runonce runtime-cgroups runtime-request-timeout seccomp-default serialize-image-pulls streaming-connection-idle-timeout sync-frequency system-cgroups system-reserved system-reserved-cgroup tls-cert-file tls-cipher-suites tls-min-version tls-private-key-file topology-manager-policy topology-manager-policy-options topology-manager-scope v version vmodule volume-plugin-dir volume-stats-agg-period';
    const unknown = upstream.split(' ').filter((n) => {
      try {
        parseFlags([`--${n}=x`]);
        return false;
      } catch (err) {
        return /unknown flag/.test((err as Error).message);
      }
    });
    expect(unknown).toEqual([]);
    expect(
      parseFlags(['--kernel-memcg-notification', '--enable-controller-attach-detach', '--qos-reserved', 'memory=50%'])
        .unimplemented,
    ).toEqual(['kernel-memcg-notification', 'enable-controller-attach-detach', 'qos-reserved']);
  });
  it("notes each deprecated flag given as pflag does: the config-file flags with upstream's reason, the container GC ones with theirs", () => {
    const parsed = parseFlags([
      '--kubeconfig=/k',
      '--max-pods=10',
      '--hairpin-mode',
      'none',
      '--maximum-dead-containers=5',
      '--max-pods=11',
      '--v=2',
    ]);
    const viaFile =
      "This parameter should be set via the config file specified by the Kubelet's --config flag. See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information.";
    expect(parsed.deprecations).toEqual([
      `Flag --max-pods has been deprecated, ${viaFile}`,
      `Flag --hairpin-mode has been deprecated, ${viaFile}`,
      'Flag --maximum-dead-containers has been deprecated, Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.',
      `Flag --max-pods has been deprecated, ${viaFile}`,
    ]);
  });
  it('refuses the flags v1.36 removed with the unknown-flag error', () => {
    for (const name of ['cloud-config', 'register-schedulable', 'pod-infra-container-image'])
      expect(() => parseFlags([`--${name}=x`]), name).toThrow(`unknown flag: --${name}`);
  });

  it('refuses flags earlier releases removed (--keep-terminated-pod-volumes in v1.31, --seccomp-profile-root in v1.23) and the apiserver-only --tls-sni-cert-key', () => {
    for (const name of ['keep-terminated-pod-volumes', 'seccomp-profile-root', 'tls-sni-cert-key'])
      expect(() => parseFlags([`--${name}=x`]), name).toThrow(`unknown flag: --${name}`);
  });

  it('refuses --profiling, which other components have but the kubelet never had (its handler is a config field)', () => {
    expect(() => parseFlags(['--profiling'])).toThrow('unknown flag: --profiling');
  });
});

describe('loadConfig', () => {
  it('uses upstream defaults; flags override the file', async () => {
    const f = file(
      'a.yaml',
      'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nport: 11000\nsyncFrequency: 30s\nstaticPodPath: manifests\n',
    );
    const c = await loadConfig(
      parseFlags(['--config', f, '--port=12000', '--kubeconfig', '/etc/kubernetes/kubelet.conf']),
    );
    expect(c.kubeconfig).toBe('/etc/kubernetes/kubelet.conf');
    expect(c.kc.authentication).toEqual({
      x509: {},
      webhook: { enabled: true, cacheTTL: '2m0s' },
      anonymous: { enabled: false },
    });
    expect(c.kc.authorization).toEqual({
      mode: 'Webhook',
      webhook: { cacheAuthorizedTTL: '5m0s', cacheUnauthorizedTTL: '30s' },
    });
    expect(c.kc.port).toBe(12000);
    expect(c.syncFrequencyMs).toBe(30_000);
    expect(c.fileCheckFrequencyMs).toBe(20_000);
    expect(c.kc.healthzPort).toBe(10248);
    expect(c.kc.readOnlyPort).toBe(0);
    expect(c.kc.staticPodPath).toBe(join(dir, 'manifests'));
  });
  it("uses the flags' legacy defaults without a config file, except anonymous auth (never on by default)", async () => {
    const c = await loadConfig(parseFlags([]));
    expect(c.kc.readOnlyPort).toBe(10255);
    expect(c.kc.authentication.webhook.enabled).toBe(false);
    expect(c.kc.authentication.anonymous.enabled).toBe(false);
    expect(c.kc.authorization.mode).toBe('AlwaysAllow');
  });
  it('links container logs in /var/log/containers (as root), or where --container-logs-dir says', async () => {
    if (process.getuid?.() === 0)
      expect((await loadConfig(parseFlags([]))).containerLogsDir).toBe('/var/log/containers');
    expect((await loadConfig(parseFlags(['--container-logs-dir', 'rel/links']))).containerLogsDir).toBe(
      join(process.cwd(), 'rel/links'),
    );
  });
  it('checks the eviction thresholds: known signals, and a grace period for each soft one', async () => {
    await expect(loadConfig(parseFlags(['--eviction-hard', 'memory.free<1Gi']))).rejects.toThrow(
      /invalid configuration: evictionHard: unknown signal "memory.free"/,
    );
    await expect(loadConfig(parseFlags(['--eviction-soft', 'memory.available<1Gi']))).rejects.toThrow(
      /grace period must be specified for the soft eviction threshold memory.available/,
    );
    const c = await loadConfig(
      parseFlags([
        '--eviction-soft',
        'memory.available<1Gi',
        '--eviction-soft-grace-period',
        'memory.available=1m30s',
        '--eviction-max-pod-grace-period',
        '20',
      ]),
    );
    expect([c.kc.evictionSoft, c.kc.evictionSoftGracePeriod, c.kc.evictionMaxPodGracePeriod]).toEqual([
      { 'memory.available': '1Gi' },
      { 'memory.available': '1m30s' },
      20,
    ]);
    const r = await loadConfig(
      parseFlags(['--eviction-minimum-reclaim', 'memory.available=0Mi,nodefs.available=500Mi']),
    );
    expect(r.kc.evictionMinimumReclaim).toEqual({ 'memory.available': '0Mi', 'nodefs.available': '500Mi' });
    await expect(loadConfig(parseFlags(['--eviction-minimum-reclaim', 'memory.free=1Mi']))).rejects.toThrow(
      /evictionMinimumReclaim: unknown signal/,
    );
  });
  it('maps the auth and TLS flags onto the configuration', async () => {
    const c = await loadConfig(
      parseFlags([
        '--kubeconfig=/k',
        '--anonymous-auth',
        '--authentication-token-webhook',
        '--authentication-token-webhook-cache-ttl=1m',
        '--authorization-mode=Webhook',
        '--authorization-webhook-cache-authorized-ttl=10s',
        '--authorization-webhook-cache-unauthorized-ttl=5s',
        '--client-ca-file=/ca.crt',
        '--tls-min-version=VersionTLS13',
        '--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256',
      ]),
    );
    expect(c.kc.authentication).toEqual({
      x509: { clientCAFile: '/ca.crt' },
      webhook: { enabled: true, cacheTTL: '1m' },
      anonymous: { enabled: true },
    });
    expect(c.kc.authorization).toEqual({
      mode: 'Webhook',
      webhook: { cacheAuthorizedTTL: '10s', cacheUnauthorizedTTL: '5s' },
    });
    expect([c.kc.tlsMinVersion, c.kc.tlsCipherSuites]).toEqual([
      'VersionTLS13',
      ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'TLS_AES_128_GCM_SHA256'],
    ]);
  });
  it('stops when a webhook mode has no apiserver, naming the fields and the way out', async () => {
    await expect(loadConfig(parseFlags(['--config', file('nokube.yaml', 'port: 10250\n')]))).rejects.toThrow(
      /authentication.webhook.enabled=true and authorization.mode=Webhook need an apiserver: pass --kubeconfig/,
    );
    await expect(loadConfig(parseFlags(['--authorization-mode=Webhook']))).rejects.toThrow(
      /authorization.mode=Webhook need an apiserver/,
    );
  });
  it('accepts known upstream fields it does not implement, with a warning', async () => {
    const c = await loadConfig(
      parseFlags([
        '--config',
        file(
          'b.yaml',
          'enableContentionProfiling: true\nsystemReserved: {cpu: 100m}\nclusterDNS: [10.0.0.10]\nauthentication: {webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n',
        ),
      ]),
    );
    expect(c.warnings.join('\n')).toMatch(/"enableContentionProfiling" is accepted but not implemented/);
    expect(c.kc.systemReserved).toEqual({ cpu: '100m' });
    expect(c.kc).toMatchObject({
      nodeStatusUpdateFrequency: '10s',
      nodeStatusReportFrequency: '5m0s',
      nodeLeaseDurationSeconds: 40,
      registerNode: true,
      eventRecordQPS: 50,
      eventBurst: 100,
    });
    expect(c.kc.evictionHard).toEqual({
      'memory.available': '100Mi',
      'nodefs.available': '10%',
      'nodefs.inodesFree': '5%',
      'imagefs.available': '15%',
    });
    expect(c.kc.clusterDNS).toEqual(['10.0.0.10']);
  });
  it('checks enforceNodeAllocatable as upstream: a reserved key needs its cgroup, none stands alone, a key and its -compressible twin exclude each other', async () => {
    const load = (yaml: string) => loadConfig(parseFlags(['--kubeconfig=/k', '--config', file('ena.yaml', yaml)]));
    await expect(load('enforceNodeAllocatable: [pods, system-reserved, kube-reserved-compressible]\n')).rejects.toThrow(
      'invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified when "system-reserved" contained in enforceNodeAllocatable (--enforce-node-allocatable), invalid configuration: kubeReservedCgroup (--kube-reserved-cgroup) must be specified when "kube-reserved-compressible" contained in enforceNodeAllocatable (--enforce-node-allocatable)',
    );
    await expect(load('enforceNodeAllocatable: [none, pods]\n')).rejects.toThrow(
      'may not contain additional enforcements when "none" is specified',
    );
    await expect(
      load('enforceNodeAllocatable: [system-reserved, system-reserved-compressible]\nsystemReservedCgroup: /s\n'),
    ).rejects.toThrow('may not contain both "system-reserved" and "system-reserved-compressible"');
    const ok = await loadConfig(
      parseFlags([
        '--kubeconfig=/k',
        '--enforce-node-allocatable',
        'pods,system-reserved',
        '--system-reserved-cgroup',
        '/system.slice',
      ]),
    );
    expect([ok.kc.enforceNodeAllocatable, ok.kc.systemReservedCgroup, ok.warnings]).toEqual([
      ['pods', 'system-reserved'],
      '/system.slice',
      [],
    ]);
  });
  it('turns the node log query on with the log handler (NodeLogQuery, GA and on in v1.36), with upstream messages', async () => {
    const load = (yaml: string, ...flags: string[]) =>
      loadConfig(parseFlags(['--kubeconfig=/k', '--config', file('nlq.yaml', yaml), ...flags]));
    // The gate is on by default in v1.36: a config that only asks for the query starts, as on a Go kubelet v1.36.
    const byDefault = await load('enableSystemLogQuery: true\n');
    expect([byDefault.kc.enableSystemLogQuery, byDefault.warnings]).toEqual([true, []]);
    await expect(load('enableSystemLogQuery: true\n', '--feature-gates=NodeLogQuery=false')).rejects.toThrow(
      'invalid configuration: NodeLogQuery feature gate is required for enableSystemLogHandler',
    );
    await expect(
      load('enableSystemLogQuery: true\nenableSystemLogHandler: false\nfeatureGates: {NodeLogQuery: true}\n'),
    ).rejects.toThrow('invalid configuration: enableSystemLogHandler is required for enableSystemLogQuery');
    const on = await load('enableSystemLogQuery: true\n', '--feature-gates=NodeLogQuery=true');
    expect([on.kc.enableSystemLogQuery, on.warnings]).toEqual([true, []]);
    expect((await load('{}\n')).kc.enableSystemLogQuery).toBe(false);
  });
  it('takes the container log workers and monitor interval from the file or the flags, checked as upstream', async () => {
    const load = (yaml: string, ...flags: string[]) =>
      loadConfig(parseFlags(['--kubeconfig=/k', '--config', file('logs.yaml', yaml), ...flags]));
    await expect(load('containerLogMaxWorkers: 0\ncontainerLogMonitorInterval: 1s\n')).rejects.toThrow(
      'invalid configuration: containerLogMaxWorkers must be greater than or equal to 1, invalid configuration: containerLogMonitorInterval must be a positive time duration greater than or equal to 3s',
    );
    const ok = await load('containerLogMaxWorkers: 4\n', '--container-log-monitor-interval=5s');
    expect([ok.kc.containerLogMaxWorkers, ok.kc.containerLogMonitorInterval, ok.warnings]).toEqual([4, '5s', []]);
    expect((await load('{}\n', '--container-log-max-workers=2')).kc.containerLogMaxWorkers).toBe(2);
  });
  it('applies --config-dir drop-ins over the file in lexical order as JSON merge patches; flags still win', async () => {
    const d = join(dir, 'conf.d');
    mkdirSync(join(d, '30-sub'), { recursive: true });
    file('conf.d/20-dns.conf', 'clusterDNS: [10.0.0.10, 10.0.0.11]\nauthentication: {webhook: {cacheTTL: 1m0s}}\n');
    file(
      'conf.d/10-base.conf',
      'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 50\nclusterDNS: [10.9.9.9]\n',
    );
    file('conf.d/30-sub/x.conf', '{"registryPullQPS": 9, "clusterDomain": null}');
    file('conf.d/99-ignored.yaml', 'maxPods: 7\n');
    const base = file(
      'base.yaml',
      'maxPods: 20\nclusterDomain: cluster.local\nregistryPullQPS: 1\nauthentication: {x509: {clientCAFile: /ca.crt}}\n',
    );
    const c = await loadConfig(
      parseFlags(['--kubeconfig=/k', '--config', base, '--config-dir', d, '--registry-qps', '3']),
    );
    // The list replaced (not appended); nested objects merged; null removed (the default is back); the .yaml file
    // ignored.
    expect([c.kc.maxPods, c.kc.clusterDNS, c.kc.clusterDomain, c.kc.registryPullQPS]).toEqual([
      50,
      ['10.0.0.10', '10.0.0.11'],
      '',
      3,
    ]);
    expect([c.kc.authentication.x509.clientCAFile, c.kc.authentication.webhook.cacheTTL]).toEqual(['/ca.crt', '1m0s']);
    // Without --config the drop-ins go over the flags' legacy defaults.
    const legacy = await loadConfig(parseFlags(['--config-dir', d]));
    expect([legacy.kc.readOnlyPort, legacy.kc.maxPods]).toEqual([10255, 50]);
    file('conf.d/40-bad.conf', 'maxPods: [1\n');
    await expect(loadConfig(parseFlags(['--kubeconfig=/k', '--config', base, '--config-dir', d]))).rejects.toThrow(
      `failed to load kubelet dropin file, path: ${join(d, '40-bad.conf')}, error:`,
    );
    file('conf.d/40-bad.conf', 'kind: Pod\n');
    await expect(loadConfig(parseFlags(['--kubeconfig=/k', '--config', base, '--config-dir', d]))).rejects.toThrow(
      'unknown kind "Pod"',
    );
    // A field no KubeletConfiguration has is left out, as upstream's lenient decoding leaves it; the rest applies.
    file('conf.d/40-bad.conf', 'bogusField: 1\nmaxPods: 60\n');
    const lenient = await loadConfig(parseFlags(['--kubeconfig=/k', '--config', base, '--config-dir', d]));
    expect([lenient.kc.maxPods, lenient.strictDecodingError]).toEqual([
      60,
      'strict decoding error: unknown field "bogusField"',
    ]);
    await expect(loadConfig(parseFlags(['--config-dir', join(dir, 'nope.d')]))).rejects.toThrow(
      'failed to read the kubelet drop-in directory',
    );
  });
  it('reads featureGates from the file and --feature-gates (the flag wins per gate), warning once per gate it does not read', async () => {
    const none = await loadConfig(parseFlags(['--kubeconfig=/k', '--config', file('nogates.yaml', 'port: 10250\n')]));
    expect(none.kc.featureGates).toBeUndefined();
    const c = await loadConfig(
      parseFlags([
        '--kubeconfig=/k',
        '--config',
        file('gates.yaml', 'featureGates: {NodeLogQuery: true, SidecarContainers: true, EventedPLEG: true}\n'),
        '--feature-gates',
        'NodeLogQuery=false,InPlacePodVerticalScaling=T',
      ]),
    );
    expect(c.kc.featureGates).toEqual({
      NodeLogQuery: false,
      SidecarContainers: true,
      EventedPLEG: true,
      InPlacePodVerticalScaling: true,
    });
    // InPlacePodVerticalScaling is GA and locked on in v1.36: set to its value, it changes nothing.
    expect(c.warnings).toEqual([
      'feature gate "SidecarContainers" is accepted but not implemented yet; it has no effect',
      'feature gate "EventedPLEG" is accepted but not implemented yet; it has no effect',
    ]);
    // The gates tskubelet reads get no warning; a gate whose default it follows, none at that default only.
    const read = await loadConfig(
      parseFlags([
        '--kubeconfig=/k',
        '--feature-gates',
        'UserNamespacesSupport=true,GracefulNodeShutdown=true,GracefulNodeShutdownBasedOnPodPriority=true,' +
          'NodeDeclaredFeatures=true,ExtendWebSocketsToKubelet=true,RestartAllContainersOnContainerExits=false,' +
          'PLEGOnDemandRelist=true,PodAndContainerStatsFromCRI=true',
      ]),
    );
    expect(read.warnings).toEqual([
      'feature gate "RestartAllContainersOnContainerExits" is accepted but not implemented yet; it has no effect',
      'feature gate "PodAndContainerStatsFromCRI" is accepted but not implemented yet; it has no effect',
    ]);
    // v1.36's beta gates at the defaults tskubelet follows, as kubeadm or an operator may spell them out: no warning.
    const atDefaults = await loadConfig(
      parseFlags([
        '--kubeconfig=/k',
        '--feature-gates',
        'HostnameOverride=true,EnvFiles=true,ContainerRestartRules=true,PodLevelResources=true,' +
          'PodCertificateRequest=false,MemoryQoS=false,HostnameOverride=false',
      ]),
    );
    expect(atDefaults.warnings).toEqual([
      'feature gate "HostnameOverride" is accepted but not implemented yet; it has no effect',
    ]);
    // A locked gate (GA in v1.36) set against its lock stops the start, with upstream's message.
    await expect(
      loadConfig(
        parseFlags([
          '--kubeconfig=/k',
          '--config',
          file('locked.yaml', 'featureGates: {NodeSwap: false, KubeletCgroupDriverFromCRI: false}\n'),
        ]),
      ),
    ).rejects.toThrow(
      'failed to set feature gates from initial flags-based config: cannot set feature gate KubeletCgroupDriverFromCRI to false, feature is locked to true',
    );
    // User namespaces: GA and locked on in v1.36 (the website's feature-gate page for 1.36: stable, locked).
    await expect(
      loadConfig(parseFlags(['--kubeconfig=/k', '--feature-gates', 'UserNamespacesSupport=false'])),
    ).rejects.toThrow('cannot set feature gate UserNamespacesSupport to false, feature is locked to true');
    await expect(
      loadConfig(parseFlags(['--kubeconfig=/k', '--feature-gates', 'PodObservedGenerationTracking=false'])),
    ).rejects.toThrow(
      'failed to set feature gates from initial flags-based config: cannot set feature gate PodObservedGenerationTracking to false, feature is locked to true',
    );
    // Gates locked in v1.34–v1.35 and still registered in v1.36, one locked off among them.
    await expect(
      loadConfig(parseFlags(['--kubeconfig=/k', '--feature-gates', 'SupplementalGroupsPolicy=false'])),
    ).rejects.toThrow('cannot set feature gate SupplementalGroupsPolicy to false, feature is locked to true');
    await expect(
      loadConfig(
        parseFlags(['--kubeconfig=/k', '--feature-gates', 'AllowOverwriteTerminationGracePeriodSeconds=true']),
      ),
    ).rejects.toThrow(
      'cannot set feature gate AllowOverwriteTerminationGracePeriodSeconds to true, feature is locked to false',
    );
    // The gitRepo volume plugin cannot be turned back on from v1.36 (kubernetes/kubernetes#136400).
    await expect(
      loadConfig(parseFlags(['--kubeconfig=/k', '--feature-gates', 'GitRepoVolumeDriver=true'])),
    ).rejects.toThrow('cannot set feature gate GitRepoVolumeDriver to true, feature is locked to false');
    // Locked on in v1.36 (kubernetes/kubernetes#136673).
    await expect(
      loadConfig(parseFlags(['--kubeconfig=/k', '--feature-gates', 'DisableNodeKubeProxyVersion=false'])),
    ).rejects.toThrow('cannot set feature gate DisableNodeKubeProxyVersion to false, feature is locked to true');
    // GA and locked on in v1.36 (kubernetes/kubernetes#136230).
    await expect(
      loadConfig(parseFlags(['--kubeconfig=/k', '--feature-gates', 'MutableCSINodeAllocatableCount=false'])),
    ).rejects.toThrow('cannot set feature gate MutableCSINodeAllocatableCount to false, feature is locked to true');
    expect(
      (await loadConfig(parseFlags(['--kubeconfig=/k', '--feature-gates', 'SystemdWatchdog=true']))).warnings,
    ).toEqual([]);
    expect(() => parseFlags(['--feature-gates', 'KubeletCgroupDriverFromCRI=maybe'])).toThrow(
      'invalid argument "KubeletCgroupDriverFromCRI=maybe" for "--feature-gates" flag: want "Gate=true|false" pairs separated by commas',
    );
    await expect(
      loadConfig(parseFlags(['--config', file('badgate.yaml', 'featureGates: {A: "yes"}\n')])),
    ).rejects.toThrow('invalid value for field "featureGates.A"');
  });
  it('reads the runtime-facing settings with upstream defaults and checks the image GC thresholds', async () => {
    const d = await loadConfig(
      parseFlags([
        '--config',
        file('d.yaml', 'authentication: {webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n'),
      ]),
    );
    expect([
      d.kc.cgroupsPerQOS,
      d.kc.cgroupDriver,
      d.kc.resolvConf,
      d.kc.serializeImagePulls,
      d.kc.imageGCHighThresholdPercent,
      d.kc.imageGCLowThresholdPercent,
      d.kc.imageMinimumGCAge,
      d.kc.cpuCFSQuotaPeriod,
    ]).toEqual([true, 'cgroupfs', '/etc/resolv.conf', true, 85, 80, '2m0s', '100ms']);
    expect(d.containerGc).toEqual({ minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 });
    const f = await loadConfig(
      parseFlags([
        '--cluster-dns=10.0.0.10,10.0.0.11',
        '--cluster-domain=cluster.local',
        '--maximum-dead-containers=5',
        '--minimum-container-ttl-duration=1m',
        '--serialize-image-pulls=false',
      ]),
    );
    expect([f.kc.clusterDNS, f.kc.clusterDomain, f.containerGc, f.kc.serializeImagePulls]).toEqual([
      ['10.0.0.10', '10.0.0.11'],
      'cluster.local',
      { minAgeMs: 60_000, maxPerPodContainer: 1, maxContainers: 5 },
      false,
    ]);
    await expect(
      loadConfig(parseFlags(['--image-gc-high-threshold=50', '--image-gc-low-threshold=60'])),
    ).rejects.toThrow(
      /imageGCLowThresholdPercent \(--image-gc-low-threshold\) 60 must be less than imageGCHighThresholdPercent/,
    );
  });
  it('reads the image, API, node and process settings with upstream defaults, flags over the file', async () => {
    const d = await loadConfig(parseFlags([]));
    expect([
      d.kc.registryPullQPS,
      d.kc.registryBurst,
      d.kc.maxParallelImagePulls,
      d.kc.imageMaximumGCAge,
      d.kc.nodeStatusMaxImages,
      d.kc.podsPerCore,
      d.kc.kubeAPIQPS,
      d.kc.kubeAPIBurst,
      d.kc.oomScoreAdj,
      d.kc.enableServer,
      d.kc.shutdownGracePeriodCriticalPods,
      d.kc.seccompDefault,
      d.kc.imageServiceEndpoint,
    ]).toEqual([5, 10, undefined, '0s', 50, 0, 50, 100, -999, true, '0s', false, '']);
    const f = file(
      'limits.yaml',
      'registryPullQPS: 1\nkubeAPIQPS: 2.5\nnodeStatusMaxImages: -1\nenableServer: false\nimageServiceEndpoint: unix:///img.sock\n',
    );
    const c = await loadConfig(
      parseFlags([
        '--config',
        f,
        '--registry-qps=3',
        '--registry-burst=4',
        '--serialize-image-pulls=false',
        '--max-parallel-image-pulls=2',
        '--pods-per-core=10',
        '--kube-api-burst=7',
        '--oom-score-adj=-500',
        '--volume-stats-agg-period=30s',
        '--kubeconfig=/etc/kubernetes/kubelet.conf',
      ]),
    );
    expect([
      c.kc.registryPullQPS,
      c.kc.registryBurst,
      c.kc.maxParallelImagePulls,
      c.kc.podsPerCore,
      c.kc.kubeAPIQPS,
      c.kc.kubeAPIBurst,
    ]).toEqual([3, 4, 2, 10, 2.5, 7]);
    expect([
      c.kc.nodeStatusMaxImages,
      c.kc.enableServer,
      c.kc.imageServiceEndpoint,
      c.kc.oomScoreAdj,
      c.kc.volumeStatsAggPeriod,
    ]).toEqual([-1, false, 'unix:///img.sock', -500, '30s']);
    const pids = await loadConfig(
      parseFlags([
        '--pod-max-pids=100',
        '--enforce-node-allocatable=pods,kube-reserved',
        '--kube-reserved-cgroup=/kube.slice',
      ]),
    );
    expect([
      pids.kc.podPidsLimit,
      pids.kc.enforceNodeAllocatable,
      d.kc.podPidsLimit,
      d.kc.enforceNodeAllocatable,
    ]).toEqual([100, ['pods', 'kube-reserved'], -1, ['pods']]);
    expect([pids.kc.kubeReservedCgroup, pids.warnings]).toEqual(['/kube.slice', []]);
    const ext = await loadConfig(parseFlags(['--cloud-provider=external', '--node-ip=10.0.0.9']));
    expect([ext.externalCloudProvider, ext.nodeIPSpecified, d.externalCloudProvider, d.nodeIPSpecified]).toEqual([
      true,
      true,
      false,
      false,
    ]);
    await expect(loadConfig(parseFlags(['--cloud-provider=aws']))).rejects.toThrow(
      '--cloud-provider="aws" is not supported',
    );
    const dual = await loadConfig(parseFlags(['--node-ip=10.0.0.9,fd00::9']));
    expect([dual.nodeIP, dual.secondaryNodeIP, dual.nodeIPSpecified]).toEqual(['10.0.0.9', 'fd00::9', true]);
    const unspecified = await loadConfig(parseFlags(['--node-ip=0.0.0.0']));
    expect([unspecified.nodeIPSpecified, unspecified.nodeIP === '0.0.0.0']).toEqual([false, false]);
    for (const [v, why] of [
      ['10.0.0.300', '"10.0.0.300" is not an IP address'],
      ['10.0.0.1,10.0.0.2', 'a dual-stack pair needs one IPv4 and one IPv6 address'],
      ['1.1.1.1,::1,2.2.2.2', 'at most two addresses'],
    ])
      await expect(loadConfig(parseFlags([`--node-ip=${v}`]))).rejects.toThrow(
        `could not parse --node-ip "${v}": ${why}`,
      );
    const cred = await loadConfig(
      parseFlags(['--image-credential-provider-config=cp.yaml', '--image-credential-provider-bin-dir=/usr/libexec/cp']),
    );
    expect(cred.imageCredentialProvider).toEqual({
      configPath: join(process.cwd(), 'cp.yaml'),
      binDir: '/usr/libexec/cp',
    });
    await expect(loadConfig(parseFlags(['--image-credential-provider-config=cp.yaml']))).rejects.toThrow(
      '--image-credential-provider-bin-dir is required with --image-credential-provider-config',
    );
    expect(() => parseFlags(['--kube-api-qps=fast'])).toThrow(
      /invalid argument "fast" for "--kube-api-qps" flag: must be a number/,
    );
  });
  const invalid: [string[], string][] = [
    [
      ['--max-parallel-image-pulls=3'],
      'maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false',
    ],
    [
      ['--serialize-image-pulls=false', '--max-parallel-image-pulls=0'],
      'maxParallelImagePulls 0 must be a positive number',
    ],
    [['--registry-qps=-1'], 'registryPullQPS (--registry-qps) -1 must not be a negative number'],
    [['--registry-burst=-1'], 'registryBurst (--registry-burst) -1 must not be a negative number'],
    [['--kube-api-qps=-1'], 'kubeAPIQPS (--kube-api-qps) -1 must not be a negative number'],
    [['--kube-api-burst=-2'], 'kubeAPIBurst (--kube-api-burst) -2 must not be a negative number'],
    [['--node-status-max-images=-2'], 'nodeStatusMaxImages (--node-status-max-images) -2 must be -1 or greater'],
    [['--pods-per-core=-1'], 'podsPerCore (--pods-per-core) -1 must not be a negative number'],
    [['--oom-score-adj=1001'], 'oomScoreAdj (--oom-score-adj) 1001 must be between -1000 and 1000, inclusive'],
    [['--shutdown-grace-period=500ms'], 'shutdownGracePeriod 500ms must be either zero or otherwise >= 1 sec'],
    [
      [
        '--shutdown-grace-period=10s',
        `--config=${file('byprio.yaml', 'shutdownGracePeriodByPodPriority: [{priority: 0, shutdownGracePeriodSeconds: 5}]\nauthentication: {webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n')}`,
      ],
      'Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time',
    ],
  ];
  for (const [flags, message] of invalid) {
    it(`refuses ${flags.join(' ')} with upstream's message`, async () => {
      await expect(loadConfig(parseFlags(flags))).rejects.toThrow(`invalid configuration: ${message}`);
    });
  }
  it('refuses an imageMaximumGCAge not above imageMinimumGCAge, and critical-pod grace above the whole', async () => {
    const f = file(
      'ages.yaml',
      'imageMinimumGCAge: 2m0s\nimageMaximumGCAge: 1m0s\nshutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n',
    );
    const err = await loadConfig(parseFlags(['--config', f, '--kubeconfig=/k.conf'])).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(ConfigError);
    // Every broken rule at once, as upstream.
    expect((err as Error).message).toBe(
      'failed to validate kubelet configuration, error: [invalid configuration: imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s, invalid configuration: shutdownGracePeriodCriticalPods 20s must be <= shutdownGracePeriod 10s]',
    );
  });
  it('refuses negative image GC ages (the minimum too, from v1.36), in Go duration words', async () => {
    const f = file('negative-ages.yaml', 'imageMinimumGCAge: -1m\nimageMaximumGCAge: -90s\n');
    const err = await loadConfig(parseFlags(['--config', f, '--kubeconfig=/k.conf'])).catch((e: unknown) => e as Error);
    expect((err as Error).message).toBe(
      'failed to validate kubelet configuration, error: [invalid configuration: imageMinimumGCAge -1m0s must not be negative, invalid configuration: imageMaximumGCAge -1m30s must not be negative]',
    );
  });
  it('reads a kubeadm-written config as upstream: zero values mean the defaults, and its no-op fields start quietly', async () => {
    const c = await loadConfig(
      parseFlags(['--config', file('kubeadm.yaml', KUBEADM_CONFIG), '--kubeconfig=/etc/kubernetes/kubelet.conf']),
    );
    expect(c.warnings).toEqual([]);
    expect(c.kc).toMatchObject({
      syncFrequency: '1m0s',
      fileCheckFrequency: '20s',
      httpCheckFrequency: '20s',
      runtimeRequestTimeout: '2m0s',
      streamingConnectionIdleTimeout: '4h0m0s',
      nodeStatusUpdateFrequency: '10s',
      nodeStatusReportFrequency: '5m0s',
      imageMinimumGCAge: '2m0s',
      imageMaximumGCAge: '0s',
      volumeStatsAggPeriod: '1m0s',
      evictionPressureTransitionPeriod: '5m0s',
      shutdownGracePeriod: '0s',
      cgroupDriver: 'systemd',
      containerRuntimeEndpoint: '',
      authentication: {
        webhook: { enabled: true, cacheTTL: '2m0s' },
        x509: { clientCAFile: '/etc/kubernetes/pki/ca.crt' },
      },
      authorization: { mode: 'Webhook', webhook: { cacheAuthorizedTTL: '5m0s', cacheUnauthorizedTTL: '30s' } },
    });
    expect([c.syncFrequencyMs, c.fileCheckFrequencyMs, c.verbosity]).toEqual([60_000, 20_000, 3]);
    // An explicit nodeStatusUpdateFrequency carries over to an unset report frequency; --v beats logging.verbosity.
    const d = await loadConfig(
      parseFlags([
        '--config',
        file('upd.yaml', 'nodeStatusUpdateFrequency: 20s\nport: 0\nmaxPods: 0\nlogging: {verbosity: 4}\n'),
        '--kubeconfig=/k',
        '--v=1',
      ]),
    );
    expect([d.kc.nodeStatusReportFrequency, d.kc.port, d.kc.maxPods, d.verbosity]).toEqual(['20s', 10250, 110, 1]);
    // logging.format: klog's text unless the file or --logging-format says json (the flag wins); others stop the start,
    // as upstream.
    expect(d.loggingFormat).toBe('text');
    const json = file('json.yaml', 'logging: {format: json}\n');
    expect((await loadConfig(parseFlags(['--config', json, '--kubeconfig=/k']))).loggingFormat).toBe('json');
    expect(
      (await loadConfig(parseFlags(['--config', json, '--kubeconfig=/k', '--logging-format=text']))).loggingFormat,
    ).toBe('text');
    await expect(loadConfig(parseFlags(['--logging-format=logfmt']))).rejects.toThrow(
      'logging.format: Unsupported value: "logfmt": supported values: "json", "text"',
    );
    // Values that ask for something tskubelet does not do still warn.
    const e = await loadConfig(
      parseFlags([
        '--config',
        file('static.yaml', 'enableContentionProfiling: true\nrunOnce: true\nlogging: {format: text}\n'),
        '--kubeconfig=/k',
      ]),
    );
    expect(e.warnings).toEqual([
      'config field "enableContentionProfiling" is accepted but not implemented yet; it has no effect',
    ]);
    // runOnce is read (agent/run-once.ts), from the file or from --runonce.
    expect(e.kc.runOnce).toBe(true);
    expect((await loadConfig(parseFlags(['--runonce']))).kc.runOnce).toBe(true);
    expect((await loadConfig(parseFlags([]))).kc.runOnce).toBe(false);
    // The memory manager's settings are read (memorymanager/): file fields, the flag over them, upstream's checks.
    const memory = await loadConfig(
      parseFlags([
        '--config',
        file('memory.yaml', 'memoryManagerPolicy: Static\nreservedMemory: [{numaNode: 0, limits: {memory: 1100Mi}}]\n'),
        '--kubeconfig=/k',
      ]),
    );
    expect(memory.warnings).toEqual([]);
    expect(memory.kc).toMatchObject({
      memoryManagerPolicy: 'Static',
      reservedMemory: [{ numaNode: 0, limits: { memory: '1100Mi' } }],
    });
    const flagged = await loadConfig(
      parseFlags(['--memory-manager-policy=Static', '--reserved-memory=0:memory=1Gi;1:memory=0', '--kubeconfig=/k']),
    ).catch((err: unknown) => err as Error);
    expect((flagged as Error).message).toContain(
      'invalid configuration: reserved memory may not be zero for NUMA node 1 and resource "memory"',
    );
    // The CPU manager's settings are read (cpumanager/): file fields, flags, upstream's defaults and checks.
    const cpu = await loadConfig(
      parseFlags([
        '--config',
        file('cpu.yaml', 'cpuManagerPolicy: static\ncpuManagerReconcilePeriod: 0s\nkubeReserved: {cpu: 500m}\n'),
        '--kubeconfig=/k',
      ]),
    );
    expect([
      cpu.kc.cpuManagerPolicy,
      cpu.kc.cpuManagerReconcilePeriod,
      cpu.kc.reservedSystemCPUs,
      cpu.warnings,
    ]).toEqual(['static', '10s', undefined, []]);
    const flags = await loadConfig(
      parseFlags([
        '--cpu-manager-policy=static',
        '--cpu-manager-reconcile-period=2s',
        '--reserved-cpus=0-1',
        '--kubeconfig=/k',
      ]),
    );
    expect([
      flags.kc.cpuManagerPolicy,
      flags.kc.cpuManagerReconcilePeriod,
      flags.kc.reservedSystemCPUs,
      flags.warnings,
    ]).toEqual(['static', '2s', '0-1', []]);
    await expect(loadConfig(parseFlags(['--cpu-manager-policy=dynamic', '--kubeconfig=/k']))).rejects.toThrow(
      'cpuManagerPolicy',
    );
    // The static policy's options: read, every v1.36 one implemented (no warning).
    const opts = await loadConfig(
      parseFlags([
        '--cpu-manager-policy-options=full-pcpus-only=true,prefer-align-cpus-by-uncorecache=true,distribute-cpus-across-cores=false',
        '--kubeconfig=/k',
      ]),
    );
    expect([opts.kc.cpuManagerPolicyOptions, opts.warnings]).toEqual([
      {
        'full-pcpus-only': 'true',
        'prefer-align-cpus-by-uncorecache': 'true',
        'distribute-cpus-across-cores': 'false',
      },
      [],
    ]);
    // The topology manager's policy and scope: read, with upstream's checks.
    const topo = await loadConfig(
      parseFlags([
        '--topology-manager-policy=single-numa-node',
        '--topology-manager-scope=pod',
        '--topology-manager-policy-options=prefer-closest-numa-nodes=true,max-allowable-numa-nodes=16',
        '--kubeconfig=/k',
      ]),
    );
    expect([
      topo.kc.topologyManagerPolicy,
      topo.kc.topologyManagerScope,
      topo.kc.topologyManagerPolicyOptions,
      topo.warnings,
    ]).toEqual([
      'single-numa-node',
      'pod',
      { 'prefer-closest-numa-nodes': 'true', 'max-allowable-numa-nodes': '16' },
      [],
    ]);
    await expect(loadConfig(parseFlags(['--topology-manager-policy=strict', '--kubeconfig=/k']))).rejects.toThrow(
      'invalid configuration: topologyManagerPolicy (--topology-manager-policy) "strict" must be one of: ["none" "best-effort" "restricted" "single-numa-node"]',
    );
    await expect(loadConfig(parseFlags(['--topology-manager-scope=node', '--kubeconfig=/k']))).rejects.toThrow(
      'invalid configuration: topologyManagerScope (--topology-manager-scope) "node" must be one of: "container", or "pod"',
    );
    // memorySwap.swapBehavior (runtime/swap.ts): read, with upstream's check.
    const swap = await loadConfig(
      parseFlags([
        '--config',
        file('swap-ls.yaml', 'failSwapOn: false\nmemorySwap: {swapBehavior: LimitedSwap}\n'),
        '--kubeconfig=/k',
      ]),
    );
    expect([swap.kc.memorySwap, swap.warnings]).toEqual([{ swapBehavior: 'LimitedSwap' }, []]);
    await expect(
      loadConfig(
        parseFlags([
          '--config',
          file('swap-bad.yaml', 'memorySwap: {swapBehavior: UnlimitedSwap}\n'),
          '--kubeconfig=/k',
        ]),
      ),
    ).rejects.toThrow(
      'invalid configuration: memorySwap.swapBehavior "UnlimitedSwap" must be one of: "", "LimitedSwap" or "NoSwap"',
    );
    await expect(loadConfig(parseFlags(['--reserved-cpus=0-x', '--kubeconfig=/k']))).rejects.toThrow(
      'invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) 0-x, error: strconv.Atoi: parsing "x": invalid syntax',
    );
    await expect(
      loadConfig(parseFlags(['--reserved-cpus=0', '--kube-reserved-cgroup=/kube', '--kubeconfig=/k'])),
    ).rejects.toThrow(
      "can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)",
    );
    // failSwapOn: upstream's default (true) unless the file or the flag says otherwise.
    expect(c.kc.failSwapOn).toBe(true);
    const g = await loadConfig(parseFlags(['--config', file('swap.yaml', 'failSwapOn: false\n'), '--kubeconfig=/k']));
    expect([g.kc.failSwapOn, g.warnings]).toEqual([false, []]);
    const h = await loadConfig(
      parseFlags(['--config', file('swap2.yaml', 'failSwapOn: false\n'), '--kubeconfig=/k', '--fail-swap-on']),
    );
    expect(h.kc.failSwapOn).toBe(true);
    // maxParallelImagePulls in the file turns serializeImagePulls' default off, as upstream.
    const f = await loadConfig(
      parseFlags(['--config', file('par.yaml', 'maxParallelImagePulls: 4\n'), '--kubeconfig=/k']),
    );
    expect([f.kc.serializeImagePulls, f.kc.maxParallelImagePulls]).toEqual([false, 4]);
  });
  it('starts on a file with fields no v1beta1 KubeletConfiguration has, leaving them out as upstream decodes leniently (a config a newer kubeadm wrote during an upgrade)', async () => {
    const c = await loadConfig(
      parseFlags([
        '--kubeconfig=/k',
        '--config',
        file(
          'newer.yaml',
          'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfieldOfV137: true\nmaxPods: 70\n' +
            'authentication: {x509: {clientCAFile: /ca.crt, nope: 1}}\n' +
            'reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}, newField: x}]\nsystemReserved: {memory: 1Gi}\n' +
            'evictionHard: {memory.available: 100Mi}\n',
        ),
      ]),
    );
    expect(c.strictDecodingError).toBe(
      'strict decoding error: unknown field "fieldOfV137", unknown field "authentication.x509.nope", unknown field "reservedMemory[0].newField"',
    );
    expect([c.kc.maxPods, c.kc.authentication.x509.clientCAFile, c.kc.reservedMemory]).toEqual([
      70,
      '/ca.crt',
      [{ numaNode: 0, limits: { memory: '1Gi' } }],
    ]);
    const clean = await loadConfig(parseFlags(['--kubeconfig=/k', '--config', file('clean.yaml', 'maxPods: 70\n')]));
    expect(clean.strictDecodingError).toBeUndefined();
  });
  it("fails the start on a missing or empty file with upstream's words (what the journal shows before kubeadm join)", async () => {
    const missing = join(dir, 'absent', 'config.yaml');
    await expect(loadConfig(parseFlags(['--config', missing]))).rejects.toThrow(
      `failed to load kubelet config file, path: ${missing}, error: failed to load Kubelet config file ${missing}, error failed to read kubelet config file "${missing}", error: open ${missing}: no such file or directory`,
    );
    const empty = file('empty.yaml', '');
    await expect(loadConfig(parseFlags(['--config', empty]))).rejects.toThrow(
      `failed to load kubelet config file, path: ${empty}, error: failed to load Kubelet config file ${empty}, error kubelet config file "${empty}" was empty`,
    );
  });
  const bad: [string, RegExp][] = [
    ['port: 99999\n', /invalid value for field "port"/],
    ['syncFrequency: soon\n', /invalid value for field "syncFrequency": must be a Go duration/],
    ['authentication: {x509: {clientCAFile: 3}}\n', /authentication.x509.clientCAFile/],
    ['port: [\n', /failed to decode/],
    [
      'tlsCipherSuites: [TLS_FAKE_WITH_NOTHING]\n',
      /invalid value for field "tlsCipherSuites": unknown cipher suite "TLS_FAKE_WITH_NOTHING"/,
    ],
    ['tlsMinVersion: VersionSSL3\n', /invalid value for field "tlsMinVersion": unknown TLS version "VersionSSL3"/],
    ['authorization: {mode: RBAC}\n', /invalid value for field "authorization.mode"/],
  ];
  for (const [text, re] of bad) {
    it(`rejects ${JSON.stringify(text.trim())}`, async () => {
      await expect(loadConfig(parseFlags(['--config', file(`bad-${Math.random()}.yaml`, text)]))).rejects.toThrow(re);
      await expect(
        loadConfig(parseFlags(['--config', file(`bad-${Math.random()}.yaml`, text)])),
      ).rejects.toBeInstanceOf(ConfigError);
    });
  }
});

describe('durations', () => {
  it('parses and formats Go durations', () => {
    expect(parseDuration('1m30s')).toBe(90_000);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('1h')).toBe(3_600_000);
    expect(parseDuration('10')).toBeUndefined();
    expect(formatDuration(10_000)).toBe('10s');
    expect(formatDuration(80_000)).toBe('1m20s');
    expect(formatDuration(300_000)).toBe('5m0s');
  });
});

/** The KubeletConfiguration kubeadm v1.32 writes to /var/lib/kubelet/config.yaml (with verbosity 3). */
const KUBEADM_CONFIG = `apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: /etc/kubernetes/pki/ca.crt
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
containerRuntimeEndpoint: ""
cpuManagerReconcilePeriod: 0s
crashLoopBackOff: {}
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
kind: KubeletConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 3
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: /etc/kubernetes/manifests
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
`;

describe('mergeDefaultEvictionSettings (v1.34+)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsk-merge-eviction-'));
  const load = (yaml: string) => {
    const path = join(dir, `c${Math.random()}.yaml`);
    writeFileSync(path, yaml);
    return loadConfig(parseFlags(['--kubeconfig=/k', '--config', path]));
  };
  it('keeps the default hard thresholds of the signals a given evictionHard leaves out', async () => {
    const merged = await load('evictionHard: {memory.available: 500Mi}\nmergeDefaultEvictionSettings: true\n');
    expect(merged.kc.evictionHard).toEqual({
      'memory.available': '500Mi',
      'nodefs.available': '10%',
      'nodefs.inodesFree': '5%',
      'imagefs.available': '15%',
    });
    expect(merged.warnings).toEqual([]);
    // Without it, as before: the given map replaces the defaults.
    expect((await load('evictionHard: {memory.available: 500Mi}\n')).kc.evictionHard).toEqual({
      'memory.available': '500Mi',
    });
  });
});
