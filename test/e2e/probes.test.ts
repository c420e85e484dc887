/**
 * Probes end to end on the embedded runtime, the real CLI joined to the fake apiserver: exec
 * readiness flips Ready both ways in the API; a failing exec liveness probe restarts the container
 * (restartCount grows, Unhealthy and Killing events with upstream's messages); a healthy httpGet
 * liveness probe never restarts; tcpSocket readiness; a startup probe holds `started` and
 * readiness back; a readiness gate holds Ready False until its condition is True; completed init
 * containers are ready.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundPod, kubectl, startCluster, type Cluster } from './cluster-helpers.js';
import https from 'node:https';
import { issueCert } from '../../src/server/pki.js';
import { freePort, httpGet, until } from './helpers.js';

const node = 'probe-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-probes-'));
let c: Cluster;
type Obj = Record<string, any>;
const pod = (name: string) => c.api.store.get('pods', 'default', name) as Obj | undefined;
const cond = (name: string, type: string) => pod(name)?.status?.conditions?.find((x: Obj) => x.type === type);
const cs = (name: string) => pod(name)?.status?.containerStatuses?.[0];
const events = (name: string) => c.api.store.list('events', (e: Obj) => e.involvedObject?.name === name) as Obj[];

beforeAll(async () => {
  c = await startCluster({ dir, node });
  await until(() => c.api.store.get('nodes', '', node), 20_000, 'node registered');
}, 30_000);
afterAll(async () => {
  await c?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('probes on the process runtime', () => {
  it('exec readiness drives Ready and containerStatuses[].ready both ways', async () => {
    const flag = join(dir, 'ready-flag');
    c.api.store.create(
      'pods',
      boundPod('ready', node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            readinessProbe: { exec: { command: ['test', '-f', flag] }, periodSeconds: 1, failureThreshold: 1 },
          },
        ],
      }),
    );
    await until(() => cs('ready')?.state?.running, 20_000, 'running');
    await new Promise((r) => setTimeout(r, 2500));
    expect(cs('ready').ready).toBe(false);
    expect(cond('ready', 'Ready')).toMatchObject({ status: 'False', reason: 'ContainersNotReady' });
    writeFileSync(flag, '');
    await until(() => cond('ready', 'Ready')?.status === 'True', 15_000, 'Ready True');
    expect(cs('ready')).toMatchObject({ ready: true, started: true });
    expect(cond('ready', 'Ready').reason).toBeUndefined();
    unlinkSync(flag);
    await until(() => cond('ready', 'Ready')?.status === 'False', 15_000, 'Ready False again');
    expect(cond('ready', 'ContainersReady')).toMatchObject({
      status: 'False',
      reason: 'ContainersNotReady',
      message: 'containers with unready status: [main]',
    });
    expect(
      events('ready').some((e) => e.reason === 'Unhealthy' && e.message.startsWith('Readiness probe failed')),
    ).toBe(true);
  }, 60_000);

  it('a pod being deleted turns unready while its container stops (readiness still probed), and its liveness probe no longer runs (upstream container_probe.go)', async () => {
    const ready = join(dir, 'stopping-ready');
    const live = join(dir, 'stopping-live');
    writeFileSync(ready, '');
    writeFileSync(live, '');
    c.api.store.create(
      'pods',
      boundPod('stopping', node, {
        terminationGracePeriodSeconds: 30,
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: [
              'sh',
              '-c',
              `trap 'rm -f ${ready} ${live}; sleep 8; exit 0' TERM; while true; do sleep 0.1; done`,
              'stopping-marker-4e1',
            ],
            readinessProbe: { exec: { command: ['test', '-f', ready] }, periodSeconds: 1, failureThreshold: 1 },
            livenessProbe: { exec: { command: ['test', '-f', live] }, periodSeconds: 1, failureThreshold: 1 },
          },
        ],
      }),
    );
    await until(() => cond('stopping', 'Ready')?.status === 'True', 20_000, 'Ready');
    await kubectl(c, ['delete', 'pod', 'stopping', '--wait=false']);
    const t = Date.now();
    await until(() => cond('stopping', 'Ready')?.status === 'False', 6_000, 'unready while stopping');
    // Still stopping: its process runs out the trap's 8 s.
    expect(Date.now() - t).toBeLessThan(7_000);
    expect(pod('stopping')!.metadata.deletionTimestamp).toBeDefined();
    expect(cs('stopping').state.running).toBeDefined();
    await until(() => !pod('stopping'), 30_000, 'pod gone');
    expect(
      events('stopping').filter((e) => e.reason === 'Unhealthy' && e.message.startsWith('Liveness probe failed')),
    ).toEqual([]);
  }, 60_000);

  it('a failing liveness probe restarts the container with upstream events', async () => {
    c.api.store.create(
      'pods',
      boundPod('live', node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            livenessProbe: {
              exec: { command: ['sh', '-c', 'echo sick; exit 1'] },
              periodSeconds: 1,
              failureThreshold: 2,
            },
          },
        ],
      }),
    );
    await until(() => (cs('live')?.restartCount ?? 0) >= 1, 30_000, 'restarted');
    const evs = events('live');
    expect(evs.find((e) => e.reason === 'Unhealthy')).toMatchObject({
      type: 'Warning',
      message: 'Liveness probe failed: sick',
    });
    expect(evs.find((e) => e.reason === 'Killing')).toMatchObject({
      type: 'Normal',
      message: 'Container main failed liveness probe, will be restarted',
    });
  }, 60_000);

  it('a healthy httpGet liveness probe and a tcpSocket readiness probe: ready, never restarted', async () => {
    const port = await freePort();
    c.api.store.create(
      'pods',
      boundPod('http', node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['python3', '-m', 'http.server', String(port), '--bind', '127.0.0.1'],
            ports: [{ name: 'web', containerPort: port }],
            livenessProbe: {
              httpGet: { path: '/', port: 'web' },
              initialDelaySeconds: 2,
              periodSeconds: 1,
              failureThreshold: 3,
            },
            readinessProbe: { tcpSocket: { port }, periodSeconds: 1 },
          },
        ],
      }),
    );
    await until(() => cs('http')?.ready, 20_000, 'ready');
    // Probes may fail while python starts (and say so); once the server answers, none fails again.
    const unhealthy = () =>
      events('http')
        .filter((e) => e.reason === 'Unhealthy')
        .reduce((n, e) => n + (e.count ?? 1), 0);
    const before = unhealthy();
    await new Promise((r) => setTimeout(r, 5000));
    expect(cs('http')).toMatchObject({ ready: true, restartCount: 0 });
    expect(unhealthy()).toBe(before);
    expect(events('http').filter((e) => e.reason === 'Killing')).toEqual([]);
    // /metrics/probes: successful probes' durations (upstream's prober_probe_duration_seconds), gone with the pod.
    const probes = async () => (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics/probes`)).body;
    const count = (text: string, type: string) =>
      Number(
        new RegExp(
          `^prober_probe_duration_seconds_count\\{container="main",namespace="default",pod="http",probe_type="${type}"\\} (\\d+)$`,
          'm',
        ).exec(text)?.[1],
      );
    const text = await probes();
    expect(count(text, 'Liveness')).toBeGreaterThan(0);
    expect(count(text, 'Readiness')).toBeGreaterThan(0);
    expect(text).toContain('# TYPE prober_probe_duration_seconds histogram');
    c.api.store.remove('pods', 'default', 'http', {});
    await until(async () => !(await probes()).includes('pod="http"'), 20_000, "the pod's probe series gone");
  }, 60_000);

  it('a startup probe holds started and ready back; liveness is not run until it passes', async () => {
    const flag = join(dir, 'started-flag');
    c.api.store.create(
      'pods',
      boundPod('startup', node, {
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            startupProbe: { exec: { command: ['test', '-f', flag] }, periodSeconds: 1, failureThreshold: 60 },
            livenessProbe: { exec: { command: ['false'] }, periodSeconds: 1, failureThreshold: 1 },
          },
        ],
      }),
    );
    await until(() => cs('startup')?.state?.running, 20_000, 'running');
    await new Promise((r) => setTimeout(r, 3000));
    expect(cs('startup')).toMatchObject({ started: false, ready: false, restartCount: 0 });
    expect(events('startup').some((e) => e.message?.startsWith('Liveness'))).toBe(false);
    writeFileSync(flag, '');
    await until(() => (cs('startup')?.restartCount ?? 0) >= 1, 30_000, 'liveness ran after startup and restarted it');
  }, 60_000);

  it('a readiness gate holds Ready False until its condition is set True; completed init containers are ready', async () => {
    c.api.store.create(
      'pods',
      boundPod('gated', node, {
        readinessGates: [{ conditionType: 'example.com/lb' }],
        initContainers: [{ name: 'init', image: 'busybox', command: ['true'] }],
        containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }],
      }),
    );
    await until(() => cond('gated', 'ContainersReady')?.status === 'True', 20_000, 'containers ready');
    expect(cond('gated', 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ReadinessGatesNotReady',
      message: 'corresponding condition of pod readiness gate "example.com/lb" does not exist.',
    });
    expect(pod('gated')!.status.initContainerStatuses[0]).toMatchObject({
      ready: true,
      state: { terminated: { exitCode: 0 } },
    });
    const cur = pod('gated')!;
    c.api.store.update('pods', {
      ...cur,
      status: { ...cur.status, conditions: [...cur.status.conditions, { type: 'example.com/lb', status: 'True' }] },
    });
    await until(() => cond('gated', 'Ready')?.status === 'True', 20_000, 'Ready after the gate');
    expect(cond('gated', 'example.com/lb')).toMatchObject({ status: 'True' });
  }, 60_000);
});

const hostAppArmor = () => {
  try {
    return readFileSync('/sys/module/apparmor/parameters/enabled', 'utf8').trim() === 'Y';
  } catch {
    return false;
  }
};

describe('pod-level rules', () => {
  it('activeDeadlineSeconds shortened on a running pod fails it with DeadlineExceeded', async () => {
    c.api.store.create('pods', boundPod('deadline', node, { activeDeadlineSeconds: 600 }));
    await until(() => cs('deadline')?.state?.running, 20_000, 'running');
    const cur = pod('deadline')!;
    c.api.store.update('pods', { ...cur, spec: { ...cur.spec, activeDeadlineSeconds: 1 } });
    const st = await until(
      () => pod('deadline')?.status?.phase === 'Failed' && pod('deadline')!.status,
      20_000,
      'Failed',
    );
    expect(st).toMatchObject({
      reason: 'DeadlineExceeded',
      message: 'Pod was active on the node longer than the specified deadline',
    });
    expect(events('deadline').some((e) => e.reason === 'DeadlineExceeded')).toBe(true);
    await until(() => !cs('deadline')?.state?.running, 20_000, 'container stopped');
  }, 40_000);

  it('PodOS and unsafe sysctls are rejected with upstream reasons; resourceFieldRef limits default to the node allocatable', async () => {
    c.api.store.create('pods', boundPod('win', node, { os: { name: 'windows' } }));
    c.api.store.create(
      'pods',
      boundPod('sysctl', node, { securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '65536' }] } }),
    );
    c.api.store.create(
      'pods',
      boundPod('apparmor', node, { securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }),
    );
    c.api.store.create(
      'pods',
      boundPod('limits', node, {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sh', '-c', 'echo "cpu=$CPU mem=$MEM"'],
            env: [
              { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
              { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
            ],
          },
        ],
      }),
    );
    expect(
      await until(() => pod('win')?.status?.phase === 'Failed' && pod('win')!.status, 20_000, 'win rejected'),
    ).toMatchObject({
      reason: 'PodOSNotSupported',
      message: "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS",
    });
    expect(
      await until(() => pod('sysctl')?.status?.phase === 'Failed' && pod('sysctl')!.status, 20_000, 'sysctl rejected'),
    ).toMatchObject({
      reason: 'SysctlForbidden',
      message: 'Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted',
    });
    // Each rejection counted by its reason (upstream's kubelet_admission_rejections_total).
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    expect(metrics).toContain('kubelet_admission_rejections_total{reason="PodOSNotSupported"} 1\n');
    expect(metrics).toContain('kubelet_admission_rejections_total{reason="SysctlForbidden"} 1\n');
    // A host whose kernel enforces no AppArmor refuses a pod that asks for a profile (this one runs where it does).
    if (!hostAppArmor())
      expect(
        await until(
          () => pod('apparmor')?.status?.phase === 'Failed' && pod('apparmor')!.status,
          20_000,
          'apparmor rejected',
        ),
      ).toMatchObject({
        reason: 'AppArmor',
        message: 'Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host',
      });
    else await until(() => pod('apparmor')?.status?.phase === 'Running', 20_000, 'apparmor running');
    await until(() => pod('limits')?.status?.phase === 'Succeeded', 20_000, 'limits done');
    const alloc = c.api.store.get('nodes', '', node)!.status.allocatable;
    const p = pod('limits')!;
    const logDir = join(dir, 'logs', `default_limits_${p.metadata.uid}`, 'main');
    const log = (await import('node:fs')).readFileSync(join(logDir, '0.log'), 'utf8');
    const cpu = Math.ceil(Number(String(alloc.cpu).replace(/m$/, '')) / (String(alloc.cpu).endsWith('m') ? 1000 : 1));
    expect(log).toContain(`cpu=${cpu} `);
    expect(log).toMatch(/mem=[1-9]\d+/);
  }, 40_000);

  // The embedded runtime makes user namespaces as root (process-runtime/user-namespace.ts).
  it.runIf(process.getuid?.() === 0)(
    "hostUsers: false runs in a user namespace of its own: root inside, a host ID of the pod's range outside, in upstream's file",
    async () => {
      c.api.store.create(
        'pods',
        boundPod('userns', node, {
          hostUsers: false,
          containers: [
            {
              name: 'main',
              image: 'busybox',
              // ($$ would be the kubelet's escape of a $: the shell's own PID comes from /proc/self/stat.)
              command: [
                'sh',
                '-c',
                'read -r p _ < /proc/self/stat; echo "pid=$p uid=$(id -u)"; cat /proc/self/uid_map; exec sleep 3600',
              ],
              // The probe runs through the container's namespace too: inside a user namespace, uid_map is not the
              // whole ID space.
              readinessProbe: {
                exec: { command: ['sh', '-c', 'test "$(id -u)" = 0 && ! grep -q 4294967295 /proc/self/uid_map'] },
                periodSeconds: 1,
              },
            },
          ],
        }),
      );
      await until(() => cs('userns')?.ready === true, 20_000, 'userns ready');
      const uid = pod('userns')!.metadata.uid as string;
      const log = readFileSync(join(dir, 'logs', `default_userns_${uid}`, 'main', '0.log'), 'utf8');
      const hostId = Number(/ 0\s+(\d+)\s+65536\n/.exec(log)?.[1]);
      expect(hostId % 65536).toBe(0);
      expect(hostId).toBeGreaterThanOrEqual(65536);
      expect(log).toMatch(/uid=0\n/);
      // On the host the container's root is the first ID of the pod's range.
      const pid = /pid=(\d+)/.exec(log)?.[1];
      expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(new RegExp(`\nUid:\\s+${hostId}\\s`));
      // The range is kept as upstream's kubelet keeps it, so a restart (or a Go kubelet) finds it.
      expect(readFileSync(join(dir, 'root', 'pods', uid, 'userns'), 'utf8')).toBe(
        `{"uidMappings":[{"hostId":${hostId},"containerId":0,"length":65536}],"gidMappings":[{"hostId":${hostId},"containerId":0,"length":65536}]}`,
      );
      // Upstream counts each sandbox made for a user-namespaced pod.
      const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
      expect(Number(/^kubelet_started_user_namespaced_pods_total (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(
        1,
      );
      expect(metrics).toContain('\nkubelet_started_user_namespaced_pods_errors_total 0\n');
      // Housekeeping releases the range with the pod: the next such pod gets it again.
      c.api.store.remove('pods', 'default', 'userns', {});
      await until(() => !existsSync(join(dir, 'root', 'pods', uid)), 30_000, "the pod's directory removed");
      c.api.store.create(
        'pods',
        boundPod('userns-again', node, {
          hostUsers: false,
          containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }],
        }),
      );
      await until(() => cs('userns-again')?.state?.running, 20_000, 'userns-again running');
      const again = pod('userns-again')!.metadata.uid as string;
      expect(JSON.parse(readFileSync(join(dir, 'root', 'pods', again, 'userns'), 'utf8')).uidMappings[0].hostId).toBe(
        hostId,
      );
    },
    60_000,
  );
});

describe('sidecars (init containers with restartPolicy Always)', () => {
  const trapLoop = (log: string, name: string) =>
    `echo "${name} start" >> ${log}; trap 'echo "${name} term" >> ${log}; exit 0' TERM; while true; do sleep 0.1; done`;

  it('start in order (each started before the next init container), are restarted whatever the policy, and stop after the regular containers in reverse order', async () => {
    const log = join(dir, 'sidecar-order.log');
    const flag = join(dir, 'sidecar-started');
    c.api.store.create(
      'pods',
      boundPod('sidecars', node, {
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 5,
        initContainers: [
          {
            name: 's1',
            image: 'busybox',
            restartPolicy: 'Always',
            command: ['sh', '-c', trapLoop(log, 's1')],
            startupProbe: { exec: { command: ['test', '-f', flag] }, periodSeconds: 1, failureThreshold: 30 },
          },
          { name: 'setup', image: 'busybox', command: ['sh', '-c', `echo "setup" >> ${log}`] },
          { name: 's2', image: 'busybox', restartPolicy: 'Always', command: ['sh', '-c', trapLoop(log, 's2')] },
          { name: 'flaky', image: 'busybox', restartPolicy: 'Always', command: ['sh', '-c', 'sleep 1; exit 1'] },
        ],
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', trapLoop(log, 'main')] }],
      }),
    );
    await until(() => existsSync(log) && readFileSync(log, 'utf8').includes('s1 start'), 20_000, 's1 started');
    await new Promise((r) => setTimeout(r, 1500));
    expect(readFileSync(log, 'utf8')).toBe('s1 start\n');
    writeFileSync(flag, '');
    await until(() => readFileSync(log, 'utf8').includes('main start'), 20_000, 'main started');
    expect(readFileSync(log, 'utf8')).toBe('s1 start\nsetup\ns2 start\nmain start\n');
    const flaky = () => pod('sidecars')?.status?.initContainerStatuses?.find((x: Obj) => x.name === 'flaky');
    await until(() => (flaky()?.restartCount ?? 0) >= 1, 30_000, 'flaky sidecar restarted under restartPolicy Never');
    expect(pod('sidecars')!.status.phase).toBe('Running');
    c.api.store.remove('pods', 'default', 'sidecars', {});
    await until(() => (readFileSync(log, 'utf8').match(/term/g) ?? []).length === 3, 30_000, 'all stopped');
    expect(
      readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l.endsWith('term')),
    ).toEqual(['main term', 's2 term', 's1 term']);
  }, 60_000);

  it('a pod whose regular containers completed finishes although its sidecar was running', async () => {
    c.api.store.create(
      'pods',
      boundPod('job', node, {
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 10,
        initContainers: [
          {
            name: 'proxy',
            image: 'busybox',
            restartPolicy: 'Always',
            // A proxy that takes two seconds to drain when told to stop.
            command: ['sh', '-c', "trap 'sleep 2; exit 0' TERM; while true; do sleep 0.1; done"],
          },
        ],
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'sleep 1'] }],
      }),
    );
    const st = await until(
      () => pod('job')?.status?.phase === 'Succeeded' && pod('job')!.status,
      30_000,
      'job Succeeded',
    );

    expect(st.containerStatuses[0].state.terminated.exitCode).toBe(0);
    // Succeeded only once the sidecar stopped, as upstream's getPhase counts a running sidecar as running: the first
    // Succeeded status the apiserver has shows it terminated.
    expect(st.initContainerStatuses[0].state.terminated).toBeDefined();
  }, 40_000);
});

describe('ephemeral containers', () => {
  it('kubectl debug adds one through the subresource: it runs in the pod, reports status, is never restarted, and /run reaches it', async () => {
    c.api.store.create('pods', boundPod('debugme', node, {}));
    await until(() => cs('debugme')?.state?.running, 20_000, 'running');
    const out = await kubectl(c, [
      'debug',
      'debugme',
      '--image=busybox',
      '--target=main',
      '-c',
      'debugger',
      '--',
      'sh',
      '-c',
      'echo debug-ok; sleep 2; exit 3',
    ]);
    expect(out.code, out.stderr).toBe(0);
    expect(pod('debugme')!.spec.ephemeralContainers[0]).toMatchObject({
      name: 'debugger',
      targetContainerName: 'main',
    });
    const eph = () => pod('debugme')?.status?.ephemeralContainerStatuses?.[0];
    await until(() => eph()?.state?.running, 20_000, 'ephemeral container running');
    expect(eph()).toMatchObject({ name: 'debugger', ready: false, restartCount: 0 });
    const client = await issueCert(c.ca, { cn: 'debug-user', org: 'system:masters' });
    const run = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port: c.ports.port,
          method: 'POST',
          path: '/run/default/debugme/debugger?cmd=echo%20inside',
          rejectUnauthorized: false,
          cert: client.cert,
          key: client.key,
        },
        (res) => {
          let b = '';
          res.on('data', (d) => {
            b += d;
          });
          res.on('end', () => resolve({ status: res.statusCode!, body: b }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(run).toEqual({ status: 200, body: 'inside\n' });
    await until(() => eph()?.state?.terminated, 20_000, 'ephemeral container exited');
    await new Promise((r) => setTimeout(r, 3000));
    expect(eph()).toMatchObject({ restartCount: 0, state: { terminated: { exitCode: 3 } } });
    expect(cs('debugme')).toMatchObject({ restartCount: 0 });
    expect(pod('debugme')!.status.phase).toBe('Running');
  }, 60_000);
});
