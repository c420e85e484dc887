/**
 * Graceful node shutdown end to end, as upstream's node e2e GracefulNodeShutdown specs run it: the kubelet (embedded
 * runtime, fake apiserver, `shutdownGracePeriod: 6s` with 2 s for critical pods) on a real systemd-logind
 * (test/fixtures/logind.ts) takes its delay lock; a PrepareForShutdown(true) on the bus turns the node NotReady, stops
 * the regular pods then the critical one with upstream's status (Failed, Terminated, DisruptionTarget), refuses new
 * pods, records the shutdown and releases the lock; PrepareForShutdown(false) makes the node ready again and takes
 * the lock anew; a kubelet killed releases it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLogind, type Logind } from '../fixtures/logind.js';
import { useSystemBusAddress } from '../fixtures/system-bus-address.js';
import { boundPod, startCluster, type Cluster } from './cluster-helpers.js';
import { httpGet, until } from './helpers.js';

const node = 'shutdown-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-node-shutdown-'));
let logind: Logind;
let c: Cluster;
type Obj = Record<string, any>;
let restoreBus = () => {};
const pod = (name: string) => c.api.store.get('pods', 'default', name) as Obj | undefined;
const ready = () =>
  (c.api.store.get('nodes', '', node) as Obj | undefined)?.status?.conditions?.find((x: Obj) => x.type === 'Ready');
const kubeletLocks = () => logind.kubeletLocks();
const emit = (shuttingDown: boolean) => logind.emitPrepareForShutdown(shuttingDown);
/** Upstream's isPodShutdown. */
const isShutdown = (p: Obj | undefined) =>
  p?.status?.phase === 'Failed' &&
  p.status.reason === 'Terminated' &&
  p.status.message === 'Pod was terminated in response to imminent node shutdown.' &&
  p.status.conditions?.some((x: Obj) => x.type === 'ContainersReady' && x.status === 'False');

beforeAll(async () => {
  logind = await startLogind(join(dir, 'logind'), 30);
  // The kubelet finds the system bus as any client does.
  restoreBus = useSystemBusAddress(logind.busAddress);
  c = await startCluster({
    dir,
    node,
    config: ['shutdownGracePeriod: 6s', 'shutdownGracePeriodCriticalPods: 2s'],
  });
  await until(() => ready()?.status === 'True', 30_000, 'node ready');
}, 60_000);
afterAll(async () => {
  await c?.close();
  await logind?.stop();
  restoreBus();
  rmSync(dir, { recursive: true, force: true });
});

describe('graceful node shutdown on systemd-logind', () => {
  it('stops the pods by priority with upstream status, NotReady and NodeShutdown refusals while it lasts; a cancellation undoes it', async () => {
    await until(() => kubeletLocks().length === 1, 10_000, "the kubelet's delay lock");
    const trap = `trap 'exit 0' TERM; while true; do sleep 0.1; done`;
    c.api.store.create(
      'pods',
      boundPod('regular', node, {
        terminationGracePeriodSeconds: 30,
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', trap] }],
      }),
    );
    c.api.store.create(
      'pods',
      boundPod('critical', node, {
        priorityClassName: 'system-node-critical',
        priority: 2_000_001_000,
        terminationGracePeriodSeconds: 30,
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', trap] }],
      }),
    );
    for (const name of ['regular', 'critical'])
      await until(() => pod(name)?.status?.containerStatuses?.[0]?.ready, 20_000, `${name} ready`);

    emit(true);
    await until(() => ready()?.status === 'False', 10_000, 'node not ready');
    expect(ready()).toMatchObject({ reason: 'KubeletNotReady', message: 'node is shutting down' });
    await until(() => isShutdown(pod('regular')), 15_000, 'the regular pod shut down');
    expect(pod('regular')!.status.conditions).toContainEqual(
      expect.objectContaining({
        type: 'DisruptionTarget',
        status: 'True',
        reason: 'TerminationByKubelet',
        message: 'Pod was terminated in response to imminent node shutdown.',
      }),
    );
    await until(() => isShutdown(pod('critical')), 15_000, 'the critical pod shut down');
    // Upstream's issue 108594: a failed pod is never reported ready.
    for (const name of ['regular', 'critical'])
      expect(pod(name)!.status.conditions.find((x: Obj) => x.type === 'Ready').status).toBe('False');
    await until(() => kubeletLocks().length === 0, 10_000, 'the lock released once the pods stopped');
    const events = c.api.store.list('events', (e: Obj) => e.involvedObject?.kind === 'Node') as Obj[];
    expect(events.map((e) => [e.reason, e.message])).toContainEqual([
      'NodeShutdown',
      'Shutdown manager detected shutdown event',
    ]);
    // No pod is admitted while the node shuts down.
    c.api.store.create('pods', boundPod('late', node));
    await until(() => pod('late')?.status?.reason === 'NodeShutdown', 10_000, 'the late pod refused');
    // upstream's rejectPod prefixes the handler's message.
    expect(pod('late')!.status).toMatchObject({
      phase: 'Failed',
      message: 'Pod was rejected: Pod was rejected as the node is shutting down.',
    });
    const state = JSON.parse(readFileSync(join(dir, 'root', 'graceful_node_shutdown_state'), 'utf8')) as Obj;
    expect(Date.parse(state.endTime)).toBeGreaterThanOrEqual(Date.parse(state.startTime));
    const metrics = (await httpGet(`http://127.0.0.1:${c.ports.ro}/metrics`)).body;
    const start = Number(/^kubelet_graceful_shutdown_start_time_seconds (\S+)$/m.exec(metrics)?.[1]);
    expect(Math.abs(start - Date.parse(state.startTime) / 1000)).toBeLessThan(1);

    emit(false);
    await until(() => ready()?.status === 'True', 15_000, 'node ready again');
    await until(() => kubeletLocks().length === 1, 10_000, 'the lock taken again');
    expect(existsSync(join(dir, 'root', 'graceful_node_shutdown_state'))).toBe(true);
    // A kubelet that dies does not hold up the node's shutdown: its lock goes with it.
    c.kubelet.proc.kill('SIGKILL');
    await until(() => kubeletLocks().length === 0, 10_000, 'the lock released with the kubelet gone');
  }, 90_000);
});
