/**
 * The CRI runtime manager against a REAL containerd (Debian's containerd + runc + CNI plugins),
 * driven through the real tskubelet CLI: a private containerd with its own socket, CNI bridge and
 * locally built busybox images (test/fixtures/containerd.ts). A machine without containerd fails
 * here; it is never skipped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import https from 'node:https';
import { createServer } from 'node:net';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { createCriClient } from '../../src/cri/client.js';
import type { CriRuntime } from '../../src/cri/services.js';
import { cgroupDriverFromRuntime } from '../../src/agent/cgroups/cgroup-driver.js';
import { silentLogger } from '../../src/lib/logger.js';
import { startContainerd, TEST_IMAGES, type Containerd } from '../fixtures/containerd.js';
import {
  countProcesses,
  freeKubeletPorts,
  freePort,
  httpGet,
  kubeletArgs,
  runKubelet,
  startKubelet,
  until,
  untilServing,
  type Kubelet,
  type KubeletPorts,
} from '../e2e/helpers.js';
import { droppedSpdy, droppedWebSocket, spdyExec, wsSession, type ClientPki } from '../e2e/streaming-helpers.js';
import { startKubectlApiserver } from '../fixtures/kubectl-apiserver.js';
import { createCa, issueCert } from '../../src/server/pki.js';
import {
  bareId,
  teardown,
  cgroupValue,
  cstatus,
  kubeletRequest,
  podCgroupDir,
  pods,
  removePod,
  run,
  waitPod,
  writePod,
} from './containerd-helpers.js';

const node = 'ctrd-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-ctrd-it-'));
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
let ctrd: Containerd;
let cri: CriRuntime;
let ports: KubeletPorts;
let kubelet: Kubelet;
let pki: ClientPki;
const podName = (n: string) => `${n}-${node}`;
/** Whether a path exists as itself (a dangling link too). */
const lexists = (p: string) => !!lstatSync(p, { throwIfNoEntry: false });
const sh = (script: string) => ({ command: ['sh', '-c', script] });
const bb = TEST_IMAGES.busybox;
const kubeletFlags = () =>
  kubeletArgs({
    dir,
    ports,
    node,
    manifests,
    extra: [
      ...ctrd.kubeletFlags,
      ...[
        '--file-check-frequency',
        '1s',
        '--sync-frequency',
        '10s',
        '--pod-max-pids',
        '1024',
        '--cluster-domain',
        'cluster.local',
      ],
      // enforceNodeAllocatable system-reserved on a cgroup of the test's own (made below).
      ...[
        '--enforce-node-allocatable',
        'pods,system-reserved',
        '--system-reserved-cgroup',
        reservedCgroup,
        '--system-reserved',
        'cpu=200m,memory=64Mi,pid=10000',
      ],
    ],
  });
const logs = async (pod: string, q = '', c = 'main') =>
  kubeletRequest(ports.port, `/containerLogs/default/${podName(pod)}/${c}${q}`, pki);
const criContainersOf = async (uid: string) =>
  cri.runtime.listContainers({ label_selector: { 'io.kubernetes.pod.uid': uid } });

/**
 * The test's system-reserved cgroup, in each hierarchy it is capped in (v1: cpu, memory, pids; v2: the unified one).
 */
const reservedCgroup = `/tsk-sysres-${process.pid}`;
const cgroupV2 = existsSync('/sys/fs/cgroup/cgroup.controllers');
const reservedDirs = cgroupV2
  ? [`/sys/fs/cgroup${reservedCgroup}`]
  : ['cpu', 'memory', 'pids'].map((c) => `/sys/fs/cgroup/${c}${reservedCgroup}`);
/** Removes a cgroup tree under every hierarchy (leaves first). */
const removeCgroupTree = (name: string) =>
  execFileSync('sh', [
    '-c',
    `for d in /sys/fs/cgroup${name} /sys/fs/cgroup/*${name}; do [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \\; ; done; true`,
  ]);

beforeAll(async () => {
  for (const d of reservedDirs) mkdirSync(d, { recursive: true });
  ctrd = await startContainerd();
  cri = createCriClient(ctrd.endpoint);
  ports = await freeKubeletPorts();
  kubelet = startKubelet(kubeletFlags());
  pki = {
    ca: join(dir, 'root', 'pki', 'ca.crt'),
    cert: join(dir, 'root', 'pki', 'admin.crt'),
    key: join(dir, 'root', 'pki', 'admin.key'),
  };
  await untilServing(ports, kubelet);
}, 60_000);

afterAll(async () => {
  await teardown({ kubelet, cri, ctrd, dir });
  removeCgroupTree(reservedCgroup);
}, 60_000);

describe('pods as real containers', () => {
  it.concurrent(
    'a CNI pod: Running with a pod IP from the bridge, resources in its cgroups, managed /etc/hosts, DNS, user and env',
    async () => {
      writePod(manifests, 'probe', {
        hostAliases: [{ ip: '10.1.2.3', hostnames: ['foo.local', 'bar.local'] }],
        dnsPolicy: 'None',
        dnsConfig: { nameservers: ['1.2.3.4'], searches: ['team.example'], options: [{ name: 'ndots', value: '2' }] },
        securityContext: { runAsUser: 1234, runAsGroup: 2345 },
        containers: [
          {
            name: 'main',
            image: bb,
            command: ['sleep', '3600'],
            env: [
              { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              { name: 'GREETING', value: 'hi $(POD_IP)' },
            ],
            resources: { requests: { cpu: '250m', memory: '32Mi' }, limits: { cpu: '500m', memory: '64Mi' } },
          },
        ],
      });
      const p = await waitPod(
        ports.ro,
        podName('probe'),
        (x) => x.status?.phase === 'Running' && !!x.status.podIP,
        40_000,
        'Running',
      );
      const prefix = ctrd.subnet.split('.').slice(0, 3).join('.');
      expect(p.status!.podIP!.startsWith(`${prefix}.`)).toBe(true);
      expect(p.status!.qosClass).toBe('Burstable');
      const st = cstatus(p)!;
      expect(st.containerID).toMatch(/^containerd:\/\/[0-9a-f]{64}$/);
      expect(st.imageID).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(st.state.running).toBeDefined();
      // Resources → cgroups (cgroupfs, /kubepods/burstable/pod<uid>/<container>).
      const cdir = (ctrl: string) =>
        join(podCgroupDir(ctrd.cgroupRoot, ctrl, 'burstable', p.metadata.uid!), bareId(st.containerID));
      expect(cgroupValue(join(cdir('memory'), 'memory.limit_in_bytes'))).toBe(String(64 << 20));
      expect(cgroupValue(join(cdir('cpu'), 'cpu.cfs_quota_us'))).toBe('50000');
      expect(cgroupValue(join(cdir('cpu'), 'cpu.cfs_period_us'))).toBe('100000');
      expect(cgroupValue(join(cdir('cpu'), 'cpu.shares'))).toBe('256');
      // The pod level (the kubelet's own, made before the sandbox): the same limits for the whole pod, and
      // podPidsLimit.
      const pdir = (ctrl: string) => podCgroupDir(ctrd.cgroupRoot, ctrl, 'burstable', p.metadata.uid!);
      expect(cgroupValue(join(pdir('memory'), 'memory.limit_in_bytes'))).toBe(String(64 << 20));
      expect(cgroupValue(join(pdir('cpu'), 'cpu.cfs_quota_us'))).toBe('50000');
      expect(cgroupValue(join(pdir('cpu'), 'cpu.shares'))).toBe('256');
      expect(cgroupValue(join(pdir('pids'), 'pids.max'))).toBe('1024');
      // Inside the container.
      const hosts = await run(ports.port, pki, podName('probe'), 'cat /etc/hosts');
      expect(hosts).toContain('# Kubernetes-managed hosts file.');
      expect(hosts).toContain(`${p.status!.podIP}\t${podName('probe')}`);
      expect(hosts).toContain('# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local');
      const resolv = await run(ports.port, pki, podName('probe'), 'cat /etc/resolv.conf');
      expect(resolv).toMatch(/nameserver 1\.2\.3\.4/);
      expect(resolv).toMatch(/search team\.example/);
      expect(resolv).toMatch(/options ndots:2/);
      expect(await run(ports.port, pki, podName('probe'), 'id -u')).toBe('1234\n');
      expect(await run(ports.port, pki, podName('probe'), 'id -g')).toBe('2345\n');
      const env = (await run(ports.port, pki, podName('probe'), 'env')).split('\n');
      expect(env).toContain(`POD_IP=${p.status!.podIP}`);
      expect(env).toContain(`GREETING=hi ${p.status!.podIP}`);
      expect(await run(ports.port, pki, podName('probe'), 'hostname')).toBe(`${podName('probe')}\n`);
      // The pod cgroup was the cgroup manager's work: kubelet_cgroup_manager_duration_seconds counts it, as upstream's.
      const metrics = (await httpGet(`http://127.0.0.1:${ports.ro}/metrics`)).body;
      expect(
        Number(/^kubelet_cgroup_manager_duration_seconds_count\{operation_type="create"\} (\d+)$/m.exec(metrics)?.[1]),
      ).toBeGreaterThan(0);
      expect(
        Number(/^kubelet_cgroup_manager_duration_seconds_count\{operation_type="update"\} (\d+)$/m.exec(metrics)?.[1]),
      ).toBeGreaterThan(0);
    },
  );

  it.concurrent(
    'shareProcessNamespace: one PID namespace for the pod (else one per container); setHostnameAsFQDN: the FQDN as host name',
    async () => {
      const two = {
        containers: ['3600', '3601'].map((t, i) => ({ name: i ? 'side' : 'main', image: bb, command: ['sleep', t] })),
      };
      writePod(manifests, 'sharepid', {
        ...two,
        shareProcessNamespace: true,
        hostname: 'fq',
        subdomain: 'grp',
        setHostnameAsFQDN: true,
      });
      writePod(manifests, 'ownpid', two);
      const p = await waitPod(
        ports.ro,
        podName('sharepid'),
        (x) => x.status?.phase === 'Running' && !!x.status.podIP,
        40_000,
        'Running',
      );
      await waitPod(ports.ro, podName('ownpid'), (x) => x.status?.phase === 'Running', 40_000, 'Running');
      const ps = (pod: string, c: string) => run(ports.port, pki, podName(pod), 'ps -o args', c);
      expect(await ps('sharepid', 'main')).toContain('sleep 3601');
      expect(await ps('sharepid', 'side')).toContain('sleep 3600');
      expect(await ps('ownpid', 'main')).not.toContain('sleep 3601');
      expect(await ps('ownpid', 'side')).not.toContain('sleep 3600');
      expect(await run(ports.port, pki, podName('sharepid'), 'hostname')).toBe('fq.grp.default.svc.cluster.local\n');
      expect(await run(ports.port, pki, podName('sharepid'), 'cat /etc/hosts')).toContain(
        `${p.status!.podIP}\tfq.grp.default.svc.cluster.local\tfq\n`,
      );
      expect(await run(ports.port, pki, podName('ownpid'), 'hostname')).toBe(`${podName('ownpid')}\n`);
    },
  );

  it.concurrent("a hostNetwork pod: the node IP as pod IP, the node's hosts file plus aliases", async () => {
    writePod(manifests, 'hostnet', {
      hostNetwork: true,
      hostAliases: [{ ip: '10.9.9.9', hostnames: ['alias.local'] }],
      containers: [{ name: 'main', image: bb, command: ['sleep', '3600'] }],
    });
    const p = await waitPod(ports.ro, podName('hostnet'), (x) => x.status?.phase === 'Running');
    expect(p.status!.podIP).toBe(p.status!.hostIP);
    const hosts = await run(ports.port, pki, podName('hostnet'), 'cat /etc/hosts');
    expect(hosts).toMatch(/^# Kubernetes-managed hosts file \(host network\)\./);
    expect(hosts).toContain('10.9.9.9\talias.local');
  });

  it.concurrent('command and args against the image entrypoint and cmd', async () => {
    writePod(manifests, 'entry', {
      restartPolicy: 'Never',
      containers: [
        { name: 'main', image: TEST_IMAGES.echo },
        { name: 'args', image: TEST_IMAGES.echo, args: ['from-args'] },
        { name: 'cmd', image: TEST_IMAGES.echo, command: ['/bin/echo', 'from-command'] },
      ],
    });
    await waitPod(ports.ro, podName('entry'), (x) => x.status?.phase === 'Succeeded');
    expect((await logs('entry')).body).toBe('entrypoint default-arg\n');
    expect((await logs('entry', '', 'args')).body).toBe('entrypoint from-args\n');
    expect((await logs('entry', '', 'cmd')).body).toBe('from-command\n');
  });

  it.concurrent(
    'exit codes and restart policies: Never → Failed with the code, OnFailure exit 0 → Succeeded/Completed',
    async () => {
      writePod(manifests, 'never', {
        restartPolicy: 'Never',
        containers: [{ name: 'main', image: bb, ...sh('exit 3') }],
      });
      writePod(manifests, 'onfail', {
        restartPolicy: 'OnFailure',
        containers: [{ name: 'main', image: bb, ...sh('exit 0') }],
      });
      const f = await waitPod(ports.ro, podName('never'), (x) => x.status?.phase === 'Failed');
      expect(cstatus(f)!.state.terminated).toMatchObject({ exitCode: 3, reason: 'Error' });
      expect(cstatus(f)!.restartCount).toBe(0);
      const s = await waitPod(ports.ro, podName('onfail'), (x) => x.status?.phase === 'Succeeded');
      expect(cstatus(s)!.state.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
    },
  );

  it.concurrent(
    'CrashLoopBackOff: restarts with backoff, last state kept, previous logs, dead instances collected',
    async () => {
      writePod(manifests, 'crash', {
        containers: [{ name: 'main', image: bb, ...sh('echo "crash in $(hostname)"; exit 1') }],
      });
      const p = await waitPod(
        ports.ro,
        podName('crash'),
        (x) => cstatus(x)?.state.waiting?.reason === 'CrashLoopBackOff' && cstatus(x)!.restartCount >= 1,
        40_000,
        'CrashLoopBackOff',
      );
      const st = cstatus(p)!;
      // The first restart is at once, each later one waits twice as long as the one before, from 10 s: a poll that
      // comes late (a loaded machine) sees a later restart's back-off, which must still fit its restart count.
      const backOffSeconds = Math.min(10 * 2 ** (st.restartCount - 1), 300);
      expect(st.state.waiting!.message).toMatch(
        new RegExp(`^back-off ${backOffSeconds}s restarting failed container=main pod=crash-ctrd-node_default\\(`),
      );
      expect(st.lastState.terminated).toMatchObject({ exitCode: 1, reason: 'Error' });
      expect(p.status!.phase).toBe('Running');
      const prev = await logs('crash', '?previous=true');
      expect(prev.status).toBe(200);
      expect(prev.body).toBe(`crash in ${podName('crash')}\n`);
      // Each instance's log is linked in the containers dir as upstream names it, to that instance's log.
      const linkOf = (id: string) => join(dir, 'containers', `${podName('crash')}_default_main-${bareId(id)}.log`);
      const firstLog = readlinkSync(linkOf(st.containerID!));
      expect(firstLog).toMatch(
        new RegExp(`^${join(dir, 'logs', `default_${podName('crash')}_${p.metadata.uid}`, 'main')}/\\d+\\.log$`),
      );
      expect(readFileSync(linkOf(st.containerID!), 'utf8')).toContain(`crash in ${podName('crash')}`);
      await waitPod(ports.ro, podName('crash'), (x) => cstatus(x)!.restartCount >= 2, 40_000, 'second restart');
      expect((await criContainersOf(p.metadata.uid!)).length).toBeLessThanOrEqual(2);
      // A collected dead instance takes its log and its link along; the kept ones keep theirs.
      await until(
        () => !existsSync(linkOf(st.containerID!)) && !existsSync(firstLog),
        10_000,
        'first instance log and link removed',
      );
      // The links first, then the instances: one restarted in between adds an instance, not a link read here, and one
      // collected in between takes its link along.
      const links = readdirSync(join(dir, 'containers'))
        .filter((n) => n.startsWith(`${podName('crash')}_`))
        .map((n) => join(dir, 'containers', n));
      const kept = new Set((await criContainersOf(p.metadata.uid!)).map((c) => linkOf(c.id)));
      for (const l of links) expect(kept.has(l) || !existsSync(l), l).toBe(true);
      expect(links.some((l) => kept.has(l))).toBe(true);
    },
  );

  it.concurrent(
    'init containers run in order before the app; a failed one with restartPolicy Never fails the pod',
    async () => {
      writePod(manifests, 'init', {
        initContainers: [
          { name: 'one', image: bb, ...sh('echo one') },
          { name: 'two', image: bb, ...sh('echo two') },
        ],
        containers: [{ name: 'main', image: bb, command: ['sleep', '3600'] }],
      });
      writePod(manifests, 'initfail', {
        restartPolicy: 'Never',
        initContainers: [{ name: 'one', image: bb, ...sh('exit 5') }],
        containers: [{ name: 'main', image: bb, command: ['sleep', '3600'] }],
      });
      const p = await waitPod(ports.ro, podName('init'), (x) => x.status?.phase === 'Running');
      for (const n of ['one', 'two'])
        expect(cstatus(p, n, true)!.state.terminated).toMatchObject({ exitCode: 0, reason: 'Completed' });
      expect(new Date(cstatus(p, 'two', true)!.state.terminated!.startedAt!).getTime()).toBeGreaterThanOrEqual(
        new Date(cstatus(p, 'one', true)!.state.terminated!.finishedAt!).getTime(),
      );
      expect((await logs('init', '', 'two')).body).toBe('two\n');
      const f = await waitPod(ports.ro, podName('initfail'), (x) => x.status?.phase === 'Failed');
      expect(cstatus(f, 'one', true)!.state.terminated).toMatchObject({ exitCode: 5, reason: 'Error' });
      expect(cstatus(f)!.state.waiting?.reason).toBe('PodInitializing');
    },
  );

  it.concurrent('OOMKilled with a small memory limit', async () => {
    writePod(manifests, 'oom', {
      restartPolicy: 'Never',
      containers: [
        { name: 'main', image: bb, command: ['tail', '/dev/zero'], resources: { limits: { memory: '16Mi' } } },
      ],
    });
    const p = await waitPod(ports.ro, podName('oom'), (x) => x.status?.phase === 'Failed', 40_000);
    expect(cstatus(p)!.state.terminated).toMatchObject({ exitCode: 137, reason: 'OOMKilled' });
  });

  it.concurrent('termination message from the file, and from the logs with FallbackToLogsOnError', async () => {
    writePod(manifests, 'msg', {
      restartPolicy: 'Never',
      containers: [
        { name: 'main', image: bb, ...sh('printf "bye from file" > /dev/termination-log; exit 2') },
        {
          name: 'custom',
          image: bb,
          terminationMessagePath: '/tmp/why',
          ...sh('printf "custom path" > /tmp/why; exit 0'),
        },
        {
          name: 'logs',
          image: bb,
          terminationMessagePolicy: 'FallbackToLogsOnError',
          ...sh('echo first; echo "fatal: boom"; exit 4'),
        },
        {
          name: 'quiet',
          image: bb,
          terminationMessagePolicy: 'FallbackToLogsOnError',
          ...sh('echo not-a-message; exit 0'),
        },
      ],
    });
    const p = await waitPod(ports.ro, podName('msg'), (x) => x.status?.phase === 'Failed');
    expect(cstatus(p, 'main')!.state.terminated).toMatchObject({ exitCode: 2, message: 'bye from file' });
    expect(cstatus(p, 'custom')!.state.terminated).toMatchObject({ exitCode: 0, message: 'custom path' });
    expect(cstatus(p, 'logs')!.state.terminated).toMatchObject({ exitCode: 4, message: 'first\nfatal: boom\n' });
    expect(cstatus(p, 'quiet')!.state.terminated!.message).toBeUndefined();
  });

  it.concurrent('readOnlyRootFilesystem and runAsNonRoot', async () => {
    writePod(manifests, 'secure', {
      restartPolicy: 'Never',
      containers: [
        {
          name: 'main',
          image: bb,
          securityContext: { readOnlyRootFilesystem: true },
          ...sh('touch /x 2>/dev/null && exit 0; exit 9'),
        },
        { name: 'writable', image: bb, ...sh('touch /x && exit 0; exit 9') },
      ],
    });
    writePod(manifests, 'nonroot', {
      securityContext: { runAsNonRoot: true },
      containers: [
        { name: 'main', image: bb, command: ['sleep', '3600'] },
        { name: 'ok', image: TEST_IMAGES.nonroot, command: ['sleep', '3600'] },
      ],
    });
    const p = await waitPod(ports.ro, podName('secure'), (x) => x.status?.phase === 'Failed');
    expect(cstatus(p)!.state.terminated!.exitCode).toBe(9);
    expect(cstatus(p, 'writable')!.state.terminated!.exitCode).toBe(0);
    const n = await waitPod(
      ports.ro,
      podName('nonroot'),
      (x) => !!cstatus(x)?.state.waiting?.message && !!cstatus(x, 'ok')?.state.running,
    );
    expect(cstatus(n)!.state.waiting).toEqual({
      reason: 'CreateContainerConfigError',
      message: `container has runAsNonRoot and image will run as root (pod: "${podName('nonroot')}_default(${n.metadata.uid})", container: main)`,
    });
    expect(await run(ports.port, pki, podName('nonroot'), 'id -u', 'ok')).toBe('1000\n');
  });

  it.concurrent(
    'pod and QoS cgroups as upstream: Guaranteed, BestEffort and a Burstable pod without limits; kubepods capped at the allocatable',
    async () => {
      const limits = { cpu: '100m', memory: '100Mi' };
      writePod(manifests, 'cg-guaranteed', {
        containers: [{ name: 'main', image: bb, command: ['sleep', '3600'], resources: { requests: limits, limits } }],
      });
      writePod(manifests, 'cg-besteffort', { containers: [{ name: 'main', image: bb, command: ['sleep', '3600'] }] });
      writePod(manifests, 'cg-burstable', {
        containers: [
          {
            name: 'main',
            image: bb,
            command: ['sleep', '3600'],
            resources: { requests: { cpu: '200m', memory: '10Mi' } },
          },
        ],
      });
      const running = (n: string) =>
        waitPod(ports.ro, podName(n), (x) => x.status?.phase === 'Running', 40_000, 'Running');
      const [g, be, bu] = await Promise.all([
        running('cg-guaranteed'),
        running('cg-besteffort'),
        running('cg-burstable'),
      ]);
      const gdir = (ctrl: string) => podCgroupDir(ctrd.cgroupRoot, ctrl, '', g.metadata.uid!);
      expect(cgroupValue(join(gdir('cpu'), 'cpu.shares'))).toBe('102');
      expect(cgroupValue(join(gdir('cpu'), 'cpu.cfs_quota_us'))).toBe('10000');
      expect(cgroupValue(join(gdir('memory'), 'memory.limit_in_bytes'))).toBe(String(100 << 20));
      expect(cgroupValue(join(gdir('pids'), 'pids.max'))).toBe('1024');
      const bedir = (ctrl: string) => podCgroupDir(ctrd.cgroupRoot, ctrl, 'besteffort', be.metadata.uid!);
      expect(cgroupValue(join(bedir('cpu'), 'cpu.shares'))).toBe('2');
      expect(cgroupValue(join(bedir('cpu'), 'cpu.cfs_quota_us'))).toBe('-1');
      expect(Number(cgroupValue(join(bedir('memory'), 'memory.limit_in_bytes')))).toBeGreaterThan(2 ** 60);
      // Burstable without limits: shares from the requests, no quota, no memory limit.
      const budir = (ctrl: string) => podCgroupDir(ctrd.cgroupRoot, ctrl, 'burstable', bu.metadata.uid!);
      expect(cgroupValue(join(budir('cpu'), 'cpu.shares'))).toBe('204');
      expect(cgroupValue(join(budir('cpu'), 'cpu.cfs_quota_us'))).toBe('-1');
      expect(Number(cgroupValue(join(budir('memory'), 'memory.limit_in_bytes')))).toBeGreaterThan(2 ** 60);
      // The QoS level: BestEffort with the minimum shares; kubepods at the node's allocatable (capacity − the
      // system-reserved 200m / 64Mi).
      expect(cgroupValue(join('/sys/fs/cgroup/cpu', ctrd.cgroupRoot, 'kubepods/besteffort/cpu.shares'))).toBe('2');
      expect(cgroupValue(join('/sys/fs/cgroup/cpu', ctrd.cgroupRoot, 'kubepods/cpu.shares'))).toBe(
        String(Math.floor(((cpus().length * 1000 - 200) * 1024) / 1000)),
      );
      expect(cgroupValue(join('/sys/fs/cgroup/memory', ctrd.cgroupRoot, 'kubepods/memory.limit_in_bytes'))).toBe(
        String(totalmem() - 64 * 2 ** 20),
      );
    },
  );

  it.concurrent(
    'seccomp profiles reach runc: none → unconfined, RuntimeDefault, and a Localhost profile from <root-dir>/seccomp',
    async () => {
      mkdirSync(join(dir, 'root', 'seccomp', 'test'), { recursive: true });
      writeFileSync(
        join(dir, 'root', 'seccomp', 'test', 'no-mkdir.json'),
        JSON.stringify({
          defaultAction: 'SCMP_ACT_ALLOW',
          syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO' }],
        }),
      );
      const mode = sh("grep '^Seccomp:' /proc/self/status");
      writePod(manifests, 'seccomp', {
        restartPolicy: 'Never',
        securityContext: { seccompProfile: { type: 'RuntimeDefault' } },
        containers: [
          { name: 'main', image: bb, ...mode },
          { name: 'unconfined', image: bb, securityContext: { seccompProfile: { type: 'Unconfined' } }, ...mode },
          {
            name: 'local',
            image: bb,
            securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'test/no-mkdir.json' } },
            ...sh('mkdir /tmp/x && exit 0; exit 7'),
          },
          { name: 'unfiltered', image: bb, ...sh('mkdir /tmp/x && exit 0; exit 7') },
        ],
      });
      const p = await waitPod(ports.ro, podName('seccomp'), (x) => x.status?.phase === 'Failed', 40_000, 'Failed');
      expect((await logs('seccomp')).body).toMatch(/^Seccomp:\s+2\n$/);
      expect((await logs('seccomp', '', 'unconfined')).body).toMatch(/^Seccomp:\s+0\n$/);
      expect(cstatus(p, 'local')!.state.terminated!.exitCode).toBe(7);
      expect(cstatus(p, 'unfiltered')!.state.terminated!.exitCode).toBe(0);
    },
  );

  it.concurrent('image pull policies: Never, IfNotPresent and Always against a node without a registry', async () => {
    writePod(manifests, 'images', {
      containers: [
        { name: 'never', image: 'tskubelet.test/absent:1', imagePullPolicy: 'Never' },
        { name: 'absent', image: 'tskubelet.test/absent:1', imagePullPolicy: 'IfNotPresent' },
        { name: 'always', image: bb, imagePullPolicy: 'Always', command: ['sleep', '3600'] },
        { name: 'present', image: bb, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] },
      ],
    });
    const p = await waitPod(
      ports.ro,
      podName('images'),
      (x) => ['absent', 'always'].every((c) => cstatus(x, c)?.state.waiting?.reason === 'ImagePullBackOff'),
      40_000,
      'ImagePullBackOff',
    );
    expect(cstatus(p, 'never')!.state.waiting).toEqual({
      reason: 'ErrImageNeverPull',
      message: 'Container image "tskubelet.test/absent:1" is not present with pull policy of Never',
    });
    // Upstream's back-off message carries the last pull's error, as grpc-go prints containerd's.
    expect(cstatus(p, 'absent')!.state.waiting!.message).toMatch(
      /^Back-off pulling image "tskubelet\.test\/absent:1": ErrImagePull: rpc error: code = \w+ desc = failed to pull and unpack image /,
    );
    expect(cstatus(p, 'present')!.state.running).toBeDefined();
    // The failed step in the log: containerd's error for the image it could not pull.
    expect(kubelet.output()).toMatch(
      /rpc error: code = \w+ desc = failed to pull and unpack image \\"tskubelet\.test\/busybox:1\\"/,
    );
    // A container whose image fails keeps no termination-log file (it is made alongside the image check).
    const files = (c: string) =>
      readdirSync(join(dir, 'root', 'pods', p.metadata.uid!, 'containers', c), { withFileTypes: true }).filter((e) =>
        e.isFile(),
      );
    expect(files('present')).toHaveLength(1);
    expect(
      ['never', 'absent', 'always'].map((c) =>
        lexists(join(dir, 'root', 'pods', p.metadata.uid!, 'containers', c)) ? files(c).length : 0,
      ),
    ).toEqual([0, 0, 0]);
  });

  it.concurrent(
    "graceful stop: SIGTERM reaches the container, then the pod's containers, sandbox, logs, dirs and cgroups go",
    async () => {
      let got = '';
      const srv = createServer((s) =>
        s.on('data', (d) => {
          got += d;
        }),
      );
      await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
      const port = (srv.address() as { port: number }).port;
      writePod(manifests, 'graceful', {
        hostNetwork: true,
        terminationGracePeriodSeconds: 20,
        containers: [
          {
            name: 'main',
            image: bb,
            ...sh(`trap 'echo term | nc 127.0.0.1 ${port}; exit 0' TERM; echo ready; while true; do sleep 0.2; done`),
          },
        ],
      });
      const p = await waitPod(ports.ro, podName('graceful'), (x) => x.status?.phase === 'Running');
      const uid = p.metadata.uid!;
      await until(async () => (await logs('graceful')).body.includes('ready'), 10_000, 'trap installed');
      expect(existsSync(podCgroupDir(ctrd.cgroupRoot, 'memory', 'besteffort', uid))).toBe(true);
      const logDir = join(dir, 'logs', `default_${podName('graceful')}_${uid}`);
      expect(existsSync(logDir)).toBe(true);
      const link = join(
        dir,
        'containers',
        `${podName('graceful')}_default_main-${bareId(cstatus(p)!.containerID!)}.log`,
      );
      expect(readlinkSync(link)).toBe(join(logDir, 'main', '0.log'));
      removePod(manifests, 'graceful');
      await until(() => got.includes('term'), 20_000, 'SIGTERM handler ran');
      await until(async () => !(await pods(ports.ro)).some((x) => x.metadata.uid === uid), 20_000, 'pod gone');
      await until(
        async () =>
          (await criContainersOf(uid)).length === 0 &&
          (await cri.runtime.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': uid } })).length === 0,
        20_000,
        'runtime objects removed',
      );
      await until(
        () =>
          !existsSync(logDir) &&
          !existsSync(join(dir, 'root', 'pods', uid)) &&
          !existsSync(podCgroupDir(ctrd.cgroupRoot, 'memory', 'besteffort', uid)) &&
          !lexists(link),
        10_000,
        'log dir, pod dir, cgroups and log link removed',
      );
      srv.close();
    },
  );
});

describe('enforceNodeAllocatable system-reserved', () => {
  it('caps the existing system-reserved cgroup at the reserved amounts at start, with the Node event', () => {
    const read = (file: string) =>
      cgroupValue(`${cgroupV2 ? reservedDirs[0] : `/sys/fs/cgroup/${file.split('.')[0]}${reservedCgroup}`}/${file}`);
    if (cgroupV2)
      expect([read('cpu.weight'), read('memory.max'), read('pids.max')]).toEqual(['8', String(64 * 2 ** 20), '10000']);
    else
      expect([read('cpu.shares'), read('memory.limit_in_bytes'), read('pids.max')]).toEqual([
        '204',
        String(64 * 2 ** 20),
        '10000',
      ]);
  });

  it("a system-reserved cgroup that does not exist stops the start (exit 1) with upstream's message", async () => {
    const failRoot = `/tsk-fail-${process.pid}`;
    try {
      const r = await runKubelet(
        kubeletArgs({
          dir: join(dir, 'reserved-fail'),
          ports: await freeKubeletPorts(),
          node: 'reserved-fail',
          extra: [
            ...ctrd.kubeletFlags,
            ...[
              '--cgroup-root',
              failRoot,
              '--enforce-node-allocatable',
              'pods,system-reserved',
              '--system-reserved',
              'cpu=100m',
            ],
            ...['--system-reserved-cgroup', `/tsk-missing-${process.pid}`],
          ],
        }),
      );
      expect(r.code).toBe(1);
      expect(r.output).toContain(
        `Failed to enforce System Reserved Cgroup Limits on \\"/tsk-missing-${process.pid}\\": \\"/tsk-missing-${process.pid}\\" cgroup does not exist`,
      );
    } finally {
      removeCgroupTree(failRoot);
    }
  });
});

describe('the cgroup driver from the runtime (KubeletCgroupDriverFromCRI)', () => {
  it("containerd 1.6 answers RuntimeConfig with UNIMPLEMENTED: the kubelet keeps its configured driver, as upstream's fallback", async () => {
    await expect(cri.runtime.runtimeConfig!()).rejects.toMatchObject({ code: 'NotImplemented' });
    expect(await cgroupDriverFromRuntime(cri.runtime, { logger: silentLogger, retryDelayMs: 1 })).toEqual({
      fellBack: true,
    });
    const z = JSON.parse((await kubeletRequest(ports.port, '/configz', pki)).body) as {
      kubeletconfig: { cgroupDriver: string };
    };
    expect(z.kubeletconfig.cgroupDriver).toBe('cgroupfs');
    // Upstream's warning to operators: this runtime is no longer supported from v1.37.
    const metrics = (await kubeletRequest(ports.port, '/metrics', pki)).body;
    expect(metrics).toContain('kubelet_cri_losing_support{version="1.37.0"} 1');
  });
});

describe('streaming and logs through 10250, proxied to containerd', () => {
  beforeAll(async () => {
    writePod(manifests, 'shell', {
      containers: [
        { name: 'main', image: bb, ...sh('i=0; while true; do i=$((i+1)); echo "line $i"; sleep 0.2; done') },
      ],
    });
    await waitPod(ports.ro, podName('shell'), (x) => x.status?.phase === 'Running');
  }, 60_000);

  const exec = (cmd: string[], q: string) =>
    `wss://127.0.0.1:${ports.port}/exec/default/${podName('shell')}/main?${cmd.map((x) => `command=${encodeURIComponent(x)}`).join('&')}&${q}`;

  it('POST /checkpoint reaches containerd, whose 1.6 cannot checkpoint: 500 naming the container and the runtime answer', async () => {
    const r = await kubeletRequest(ports.port, `/checkpoint/default/${podName('shell')}/main`, pki, 'POST');
    expect(r.status).toBe(500);
    expect(JSON.parse(r.body).message).toMatch(
      new RegExp(
        `^checkpointing of default/${podName('shell')}/main failed \\(.*(not implemented|Unimplemented|unknown method).*\\)$`,
        'i',
      ),
    );
  });

  // containerd 1.6 keeps an exec whose stream has gone as long as the command runs (it waits for
  // its exit; the Go kubelet relays the same way): the commands here end by themselves.
  it('exec sessions dropped at random points while the container prints: the kubelet stays up and serves on (regression)', async () => {
    const marker = `ctrd-drop-${process.pid}`;
    const base = `wss://127.0.0.1:${ports.port}`;
    // A pod of its own, which stays: the tests after this one read the shell pod's log. Attach
    // sessions are dropped on the embedded runtime only (dropped-sessions.test.ts): containerd 1.6
    // was seen to stop a container's log, and its stop to hang, after attach clients vanished.
    writePod(manifests, 'chatty', {
      containers: [{ name: 'main', image: bb, ...sh('while true; do echo chatty; sleep 0.01; done') }],
    });
    await waitPod(ports.ro, podName('chatty'), (x) => x.status?.phase === 'Running');
    const execPath = `/exec/default/${podName('chatty')}/main?command=sh&command=-c&command=${encodeURIComponent(`timeout 5 yes ${marker}`)}&output=1&error=1&input=1`;
    for (let round = 0; round < 3; round++) {
      const sessions: Promise<void>[] = [];
      for (let i = 0; i < 10; i++) {
        sessions.push(droppedWebSocket(base + execPath, pki, 'v4.channel.k8s.io', 1000));
        sessions.push(droppedSpdy(ports.port, pki, execPath, ['error', 'stdin', 'stdout', 'stderr'], 1000));
      }
      await Promise.all(sessions);
      expect(kubelet.proc.exitCode).toBeNull();
    }
    await until(() => countProcesses(marker) === 0, 20_000, 'exec processes gone');
    const r = await wsSession(exec(['echo', 'still-here'], 'output=1'), ['v4.channel.k8s.io'], pki);
    expect(r.channels.get(1)!.toString()).toBe('still-here\n');
  }, 90_000);

  it('exec with a WebSocket client (v4 and base64), stdin included', async () => {
    const r = await wsSession(
      exec(['sh', '-c', 'echo out; echo err >&2; exit 3'], 'output=1&error=1'),
      ['v4.channel.k8s.io'],
      pki,
    );
    expect(r.protocol).toBe('v4.channel.k8s.io');
    expect(r.channels.get(1)!.toString()).toBe('out\n');
    expect(r.channels.get(2)!.toString()).toBe('err\n');
    expect(JSON.parse(r.channels.get(3)!.toString())).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
    const b = await wsSession(exec(['hostname'], 'output=1'), ['v4.base64.channel.k8s.io'], pki);
    expect(b.channels.get(1)!.toString()).toBe(`${podName('shell')}\n`);
  });

  it('exec with a WebSocket v5 client: served over SPDY to containerd 1.6, stdin closed by CLOSE, exit code in the status', async () => {
    // containerd 1.6 answers a v5 WebSocket upgrade with 403; the kubelet translates (ExtendWebSocketsToKubelet).
    const r = await wsSession(exec(['cat'], 'input=1&output=1&error=1'), ['v5.channel.k8s.io'], pki, {
      input: [
        [0, 'through v5\n'],
        [255, Buffer.from([0])],
      ],
    });
    expect(r.protocol).toBe('v5.channel.k8s.io');
    expect(r.channels.get(1)!.toString()).toBe('through v5\n');
    expect(JSON.parse(r.channels.get(3)!.toString())).toMatchObject({ status: 'Success' });
    const failed = await wsSession(
      exec(['sh', '-c', 'echo out; echo err >&2; exit 3'], 'output=1&error=1'),
      ['v5.channel.k8s.io'],
      pki,
    );
    expect([failed.channels.get(1)!.toString(), failed.channels.get(2)!.toString()]).toEqual(['out\n', 'err\n']);
    expect(JSON.parse(failed.channels.get(3)!.toString())).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
  });

  it('exec with a WebSocket v5 client that stops reading for 2 s: all the output, then the status', async () => {
    // Translated to SPDY (containerd 1.6 stops at v4): the output that was still on its way when containerd sent the
    // status was cut after a second, and the status overtook what the kubelet still held — a slow kubectl lost the
    // end of `cat`'s output, told Success.
    const n = 4 << 20;
    let paused = false;
    const r = await wsSession(
      exec(['head', '-c', String(n), '/dev/zero'], 'output=1&error=1'),
      ['v5.channel.k8s.io'],
      pki,
      {
        onMessage: (ch, data, ws) => {
          if (ch !== 1 || !data.length || paused) return;
          paused = true;
          ws.pause();
          setTimeout(() => ws.resume(), 2000);
        },
      },
    );
    expect(r.channels.get(1)?.length).toBe(n);
    expect(JSON.parse(r.channels.get(3)!.toString())).toMatchObject({ status: 'Success' });
  }, 30_000);

  it("exec with a WebSocket v5 client: 8 MiB of stdin reach the command whole, then stdin's CLOSE (kubectl cp's upload)", async () => {
    const data = randomBytes(8 << 20);
    const frames: [number, Buffer][] = [];
    for (let at = 0; at < data.length; at += 256 * 1024) frames.push([0, data.subarray(at, at + 256 * 1024)]);
    frames.push([255, Buffer.from([0])]);
    const r = await wsSession(exec(['sha256sum'], 'input=1&output=1&error=1'), ['v5.channel.k8s.io'], pki, {
      input: frames,
    });
    expect(r.channels.get(1)!.toString().split(' ')[0]).toBe(createHash('sha256').update(data).digest('hex'));
    expect(JSON.parse(r.channels.get(3)!.toString())).toMatchObject({ status: 'Success' });
  }, 30_000);

  it('exec with a SPDY client, stdin to stdout', async () => {
    const path = `/exec/default/${podName('shell')}/main?command=cat&input=1&output=1&error=1`;
    const r = await spdyExec('127.0.0.1', ports.port, path, pki, {
      protocols: ['v4.channel.k8s.io'],
      streams: ['error', 'stdin', 'stdout', 'stderr'],
      stdin: 'through containerd\n',
    });
    expect(r.status).toBe(101);
    expect(r.out.stdout).toBe('through containerd\n');
    expect(JSON.parse(r.out.error)).toMatchObject({ status: 'Success' });
  });

  it('exec with a SPDY client: all of a large output and the status arrive, every time', async () => {
    // containerd's server ends with the status, RST_STREAM, GOAWAY and a close; through the relay
    // the end of the output used to be lost (our client's WINDOW_UPDATEs, unread by spdystream,
    // turned containerd's close into a reset) or the session never ended.
    const n = 8 << 20;
    const path = `/exec/default/${podName('shell')}/main?command=head&command=-c&command=${n}&command=/dev/zero&output=1`;
    for (let i = 0; i < 3; i++) {
      let bytes = 0;
      let status = '';
      const r = await spdyExec('127.0.0.1', ports.port, path, pki, {
        protocols: ['v4.channel.k8s.io'],
        streams: ['error', 'stdout'],
        onData: (stream, d) => (stream === 'stdout' ? (bytes += d.length) : (status += d.toString())),
      });
      expect(r.status).toBe(101);
      expect([bytes, JSON.parse(status).status]).toEqual([n, 'Success']);
    }
  });

  it('logs: tail, limitBytes and follow', async () => {
    await until(async () => (await logs('shell')).body.split('\n').length > 5, 10_000, 'some lines');
    const tail = (await logs('shell', '?tailLines=2')).body.trim().split('\n');
    expect(tail.length).toBe(2);
    const [a, b] = tail.map((l) => Number(l.split(' ')[1]));
    expect(b).toBe(a + 1);
    expect((await logs('shell', '?limitBytes=7')).body).toBe('line 1\n');
    const seen = await new Promise<string>((resolve, reject) => {
      let buf = '';
      const req = https.get(
        {
          host: '127.0.0.1',
          port: ports.port,
          path: `/containerLogs/default/${podName('shell')}/main?follow=true&tailLines=1`,
          ca: readFileSync(pki.ca),
          cert: readFileSync(pki.cert),
          key: readFileSync(pki.key),
        },
        (res) => {
          res.on('data', (d) => {
            buf += d;
            if (buf.split('\n').length > 4) {
              req.destroy();
              resolve(buf);
            }
          });
        },
      );
      req.on('error', (e) => (buf ? resolve(buf) : reject(e)));
    });
    const nums = seen
      .trim()
      .split('\n')
      .slice(0, 4)
      .map((l) => Number(l.split(' ')[1]));
    expect(nums).toEqual([nums[0], nums[0] + 1, nums[0] + 2, nums[0] + 3]);
  });
});

describe('kubectl port-forward over WebSocket (the SPDY tunnel) to containerd', () => {
  it('serves the tunnel over SPDY to containerd, which has no WebSocket tunnel of its own', async () => {
    writePod(manifests, 'web', {
      containers: [
        {
          name: 'main',
          image: bb,
          ...sh('mkdir -p /www && echo hello-through-the-tunnel > /www/index.html && exec httpd -f -p 8080 -h /www'),
        },
      ],
    });
    await waitPod(ports.ro, podName('web'), (x) => x.status?.phase === 'Running');
    const apiCa = await createCa('apiserver-ca');
    const api = await startKubectlApiserver({
      serving: await issueCert(apiCa, {
        cn: 'apiserver',
        server: true,
        sans: { dns: ['localhost'], ips: ['127.0.0.1'] },
      }),
      kubelet: { port: ports.port, ca: readFileSync(pki.ca), cert: readFileSync(pki.cert), key: readFileSync(pki.key) },
      readOnlyUrl: `http://127.0.0.1:${ports.ro}/pods`,
    });
    const kubeconfig = join(dir, 'kubectl-kubeconfig');
    writeFileSync(
      kubeconfig,
      `apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters: [{name: t, cluster: {server: "${api.url}", certificate-authority-data: ${Buffer.from(apiCa.cert).toString('base64')}}}]\nusers: [{name: t, user: {token: test}}]\ncontexts: [{name: t, context: {cluster: t, user: t, namespace: default}}]\n`,
    );
    const local = await freePort();
    const pf = spawn('kubectl', ['port-forward', `pod/${podName('web')}`, `${local}:8080`], {
      env: { ...process.env, KUBECONFIG: kubeconfig, KUBECTL_PORT_FORWARD_WEBSOCKETS: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    pf.stdout.on('data', (x) => (out += x));
    pf.stderr.on('data', (x) => (out += x));
    try {
      await until(
        () => out.includes(`Forwarding from 127.0.0.1:${local} -> 8080`),
        15_000,
        `port-forward ready\n${out}`,
      );
      for (let i = 0; i < 3; i++)
        expect((await httpGet(`http://127.0.0.1:${local}/index.html`)).body).toBe('hello-through-the-tunnel\n');
      // Through the tunnel itself: kubectl falls back to plain SPDY when the tunnel is refused.
      expect(api.upgrades.some((u) => u.startsWith('websocket /portForward/'))).toBe(true);
      expect(api.upgrades.filter((u) => u.startsWith('SPDY/3.1 '))).toEqual([]);
      expect(out).not.toMatch(/error|unable/i);
    } finally {
      pf.kill('SIGTERM');
      await api.close();
    }
  }, 60_000);
});

describe('restarts', () => {
  it('a kubelet restart with pods running recreates no container', async () => {
    const before = await pods(ports.ro);
    // Pods that run steadily: the crash-looping pod is running for a moment at each restart, and a kubelet restart
    // forgets its back-off (in memory, as upstream's), so it would be started again at once with a new container.
    const running = before.filter(
      (p) => p.status?.phase === 'Running' && cstatus(p)?.state.running && cstatus(p)!.restartCount === 0,
    );
    expect(running.length).toBeGreaterThanOrEqual(3);
    const ids = new Map(running.map((p) => [p.metadata.uid!, cstatus(p)!.containerID]));
    await kubelet.stop();
    kubelet = startKubelet(kubeletFlags());
    for (const [uid, id] of ids) {
      const name = running.find((p) => p.metadata.uid === uid)!.metadata.name!;
      const p = await waitPod(ports.ro, name, (x) => !!cstatus(x)?.state.running, 30_000, 'running after restart');
      // What the kubelet did, if it did recreate one.
      const said = () => `${name}: ${JSON.stringify(cstatus(p))}; kubelet output: ${kubelet.output().slice(-4000)}`;
      expect(cstatus(p)!.containerID, said()).toBe(id);
    }
  }, 60_000);

  it('an init container removed while the kubelet was down: Completed, the pod Running, not Init:0/1 (kubernetes#131317)', async () => {
    writePod(manifests, 'inited', {
      initContainers: [{ name: 'init', image: bb, ...sh('true') }],
      containers: [{ name: 'main', image: bb, command: ['sleep', '3600'] }],
    });
    const p = await waitPod(ports.ro, podName('inited'), (x) => !!cstatus(x)?.state.running, 40_000, 'inited running');
    const main = cstatus(p)!.containerID;
    await kubelet.stop();
    // What the container GC or an operator may do to a static pod's finished init container while no kubelet runs.
    const [init] = (await criContainersOf(p.metadata.uid!)).filter((c) => c.metadata?.name === 'init');
    await cri.runtime.removeContainer(init.id);
    kubelet = startKubelet(kubeletFlags());
    const after = await waitPod(
      ports.ro,
      podName('inited'),
      (x) => !!cstatus(x, 'init', true)?.state.terminated,
      40_000,
      'init container reported',
    );
    expect(cstatus(after, 'init', true)).toMatchObject({
      state: {
        terminated: {
          exitCode: 0,
          reason: 'Completed',
          message:
            'Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally',
        },
      },
      ready: true,
    });
    expect(after.status?.phase).toBe('Running');
    // Not run again: the main container is the one from before the restart.
    expect(cstatus(after)!.containerID).toBe(main);
    expect((await criContainersOf(p.metadata.uid!)).filter((c) => c.metadata?.name === 'init')).toEqual([]);
  }, 90_000);

  it('a pod whose manifest went while the kubelet was down is removed from containerd and counted in kubelet_orphaned_runtime_pods_total', async () => {
    writePod(manifests, 'gone', { containers: [{ name: 'main', image: bb, command: ['sleep', '3600'] }] });
    const p = await waitPod(ports.ro, podName('gone'), (x) => !!cstatus(x)?.state.running, 40_000, 'gone running');
    const uid = p.metadata.uid!;
    await kubelet.stop();
    rmSync(join(manifests, 'gone.yaml'));
    kubelet = startKubelet(kubeletFlags());
    await untilServing(ports, kubelet);
    await until(
      async () => (await cri.runtime.listPodSandbox({ label_selector: { 'io.kubernetes.pod.uid': uid } })).length === 0,
      40_000,
      'orphan removed',
    );
    expect((await httpGet(`http://127.0.0.1:${ports.ro}/metrics`)).body).toMatch(
      /^kubelet_orphaned_runtime_pods_total 1$/m,
    );
  }, 90_000);

  it('a containerd restart: containers keep running, the kubelet recovers and starts new pods', async () => {
    const p = await waitPod(ports.ro, podName('shell'), (x) => !!cstatus(x)?.state.running);
    await ctrd.down();
    const hz = await until(
      async () => {
        const r = await httpGet(`http://127.0.0.1:${ports.hz}/healthz?verbose`);
        return r.status === 500 ? r.body : undefined;
      },
      20_000,
      'healthz failing',
    );
    expect(hz).toMatch(/\[-\]runtime failed/);
    await ctrd.up();
    await until(
      async () => (await httpGet(`http://127.0.0.1:${ports.hz}/healthz`)).body === 'ok',
      30_000,
      'healthz ok after containerd restart',
    );
    writePod(manifests, 'after', { containers: [{ name: 'main', image: bb, command: ['sleep', '3600'] }] });
    await waitPod(ports.ro, podName('after'), (x) => x.status?.phase === 'Running', 40_000);
    const again = await waitPod(ports.ro, podName('shell'), (x) => !!cstatus(x)?.state.running);
    expect(cstatus(again)!.containerID).toBe(cstatus(p)!.containerID);
    expect(await run(ports.port, pki, podName('shell'), 'echo alive')).toBe('alive\n');
    expect(kubelet.proc.exitCode).toBeNull();
  }, 90_000);
});
