/**
 * The real CLI while the node's wall clock is stepped back an hour (NTP correcting a clock that ran ahead, `date -s`,
 * a hardware clock kept in local time). libfaketime (Debian's faketime) steps the kubelet's wall clock alone, through
 * a file it reads at every call, and leaves its monotonic clock and timers as they are, as a real step does. A
 * container that crashes and one that fails its liveness probe must go on being restarted, with the crash-loop
 * back-off's 1 s cap: before, every wait the kubelet measured on the wall clock (the sync queue, the probe schedule,
 * the back-off since the exit) was held back by the hour.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod, PodList } from '../../src/api/types.js';
import { freeKubeletPorts, httpGet, kubeletArgs, startKubelet, until, untilServing, type Kubelet } from './helpers.js';
import { boundPod, startCluster, type Cluster } from './cluster-helpers.js';

/** Where Debian's libfaketime (package libfaketime, from faketime) puts its multi-threaded library. */
const LIBFAKETIME = ['x86_64-linux-gnu', 'aarch64-linux-gnu']
  .map((arch) => `/usr/lib/${arch}/faketime/libfaketimeMT.so.1`)
  .find((path) => existsSync(path));

const dir = mkdtempSync(join(tmpdir(), 'tsk-clock-step-'));
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
const offsetFile = join(dir, 'faketime');
const node = 'clock-step';
const HOUR = 3_600_000;
let kubelet: Kubelet;
let readOnlyPort: number;
let healthzPort: number;

/** The environment that has libfaketime step a process's wall clock alone, to the offset in `file`. */
const fakeWallClock = (file: string): Record<string, string> => ({
  LD_PRELOAD: LIBFAKETIME!,
  FAKETIME_TIMESTAMP_FILE: file,
  // Read the file at every call: the step happens while the kubelet runs.
  FAKETIME_NO_CACHE: '1',
  FAKETIME_DONT_FAKE_MONOTONIC: '1',
});

const pods = async () =>
  (JSON.parse((await httpGet(`http://127.0.0.1:${readOnlyPort}/pods`)).body) as PodList).items as Pod[];
const restarts = async (name: string) =>
  (await pods()).find((p) => p.metadata.name === `${name}-${node}`)?.status?.containerStatuses?.[0]?.restartCount ?? 0;

beforeAll(async () => {
  if (!LIBFAKETIME) throw new Error('libfaketime is required (Debian package faketime): .ci/run installs it');
  writeFileSync(offsetFile, '+0');
  writeFileSync(
    join(manifests, 'crasher.yaml'),
    'apiVersion: v1\nkind: Pod\nmetadata: {name: crasher}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - {name: main, image: busybox, command: [sh, -c, "sleep 1; exit 1"]}\n',
  );
  writeFileSync(
    join(manifests, 'unhealthy.yaml'),
    'apiVersion: v1\nkind: Pod\nmetadata: {name: unhealthy}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: busybox\n    command: [sleep, "3600"]\n    livenessProbe: {exec: {command: ["false"]}, periodSeconds: 1, failureThreshold: 1}\n',
  );
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    'crashLoopBackOff: {maxContainerRestartPeriod: 1s}\nauthentication: {webhook: {enabled: false}}\nauthorization: {mode: AlwaysAllow}\n',
  );
  const ports = await freeKubeletPorts();
  readOnlyPort = ports.ro;
  healthzPort = ports.hz;
  kubelet = startKubelet(kubeletArgs({ dir, ports, node, manifests, extra: ['--config', config] }), {
    env: fakeWallClock(offsetFile),
  });
  await untilServing(ports, kubelet);
}, 30_000);

afterAll(async () => {
  await kubelet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('the wall clock stepped back an hour, then forward again', () => {
  it('holds back neither the restarts of a crashing container nor the liveness probe of an unhealthy one', async () => {
    await until(
      async () => (await restarts('crasher')) >= 2 && (await restarts('unhealthy')) >= 2,
      60_000,
      'both containers restarted twice',
    );
    const before = { crasher: await restarts('crasher'), unhealthy: await restarts('unhealthy') };
    writeFileSync(offsetFile, '-1h');
    // The kubelet's wall clock did move: a broken manifest written now is reported an hour ago, by klog's time.
    writeFileSync(join(manifests, 'broken.yaml'), 'spec: [');
    await until(
      () => {
        const line = kubelet
          .output()
          .split('\n')
          .find((l) => l.includes('broken.yaml'));
        const m = line && /^E(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)/.exec(line);
        if (!m) return false;
        const [month, day, hour, minute, second] = m.slice(1).map(Number);
        const logged = new Date(new Date().getFullYear(), month - 1, day, hour, minute, second).getTime();
        return Math.abs(Date.now() - HOUR - logged) < 5 * 60_000;
      },
      30_000,
      'the broken manifest reported on the stepped clock',
    );
    await until(
      async () =>
        (await restarts('crasher')) >= before.crasher + 2 && (await restarts('unhealthy')) >= before.unhealthy + 2,
      45_000,
      `both containers restarted twice more after the step (from ${JSON.stringify(before)})`,
    );
    // The embedded runtime's timestamps follow the step too: the container it started last started "an hour ago".
    const started = (await pods()).find((p) => p.metadata.name === `unhealthy-${node}`)?.status?.containerStatuses?.[0]
      ?.state?.running?.startedAt;
    expect(Math.abs(Date.now() - HOUR - Date.parse(started ?? '')), started).toBeLessThan(5 * 60_000);
    // And forward again by the hour (a clock set right at boot, as a Raspberry Pi's): the restarts go on, the kubelet
    // stays healthy.
    const stepped = { crasher: await restarts('crasher'), unhealthy: await restarts('unhealthy') };
    writeFileSync(offsetFile, '+0');
    await until(
      async () =>
        (await restarts('crasher')) >= stepped.crasher + 2 && (await restarts('unhealthy')) >= stepped.unhealthy + 2,
      45_000,
      `both containers restarted twice more after the step forward (from ${JSON.stringify(stepped)})`,
    );
    expect((await httpGet(`http://127.0.0.1:${healthzPort}/healthz`)).status).toBe(200);
    expect(kubelet.proc.exitCode).toBeNull();
  }, 180_000);
});

describe('in a cluster, the wall clock stepped back an hour', () => {
  const clusterNode = 'clock-cluster';
  const clusterOffset = join(dir, 'faketime-cluster');
  let cluster: Cluster;

  beforeAll(async () => {
    writeFileSync(clusterOffset, '+0');
    cluster = await startCluster({ dir: join(dir, 'cluster'), node: clusterNode, env: fakeWallClock(clusterOffset) });
    await until(() => cluster.api.store.get('nodes', '', clusterNode), 20_000, 'the node registered');
  }, 40_000);

  afterAll(async () => {
    await cluster?.close();
  });

  it('tells the apiserver at once of a pod it starts after the step (its requests are not held back an hour)', async () => {
    const phase = (name: string) => (cluster.api.store.get('pods', 'default', name) as Pod | undefined)?.status?.phase;
    cluster.api.store.create('pods', boundPod('before', clusterNode));
    await until(() => phase('before') === 'Running', 30_000, 'the pod before the step Running');
    writeFileSync(clusterOffset, '-1h');
    cluster.api.store.create('pods', boundPod('after', clusterNode));
    await until(() => phase('after') === 'Running', 30_000, 'the pod created after the step reported Running');
  }, 90_000);
});
