/**
 * Probes end to end on the embedded runtime, the real CLI joined to the fake apiserver: exec
 * readiness flips Ready both ways in the API; a failing exec liveness probe restarts the container
 * (restartCount grows, Unhealthy and Killing events with upstream's messages); a healthy httpGet
 * liveness probe never restarts; tcpSocket readiness; a startup probe holds `started` and
 * readiness back; a readiness gate holds Ready False until its condition is True; completed init
 * containers are ready.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundPod, startCluster, type Cluster } from './cluster-helpers.js';
import { freePort, until } from './helpers.js';

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
afterAll(async () => { await c?.close(); rmSync(dir, { recursive: true, force: true }); });

describe('probes on the process runtime', () => {
  it('exec readiness drives Ready and containerStatuses[].ready both ways', async () => {
    const flag = join(dir, 'ready-flag');
    c.api.store.create('pods', boundPod('ready', node, { containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'], readinessProbe: { exec: { command: ['test', '-f', flag] }, periodSeconds: 1, failureThreshold: 1 } }] }));
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
    expect(cond('ready', 'ContainersReady')).toMatchObject({ status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [main]' });
    expect(events('ready').some((e) => e.reason === 'Unhealthy' && e.message.startsWith('Readiness probe failed'))).toBe(true);
  }, 60_000);

  it('a failing liveness probe restarts the container with upstream events', async () => {
    c.api.store.create('pods', boundPod('live', node, { containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'], livenessProbe: { exec: { command: ['sh', '-c', 'echo sick; exit 1'] }, periodSeconds: 1, failureThreshold: 2 } }] }));
    await until(() => (cs('live')?.restartCount ?? 0) >= 1, 30_000, 'restarted');
    const evs = events('live');
    expect(evs.find((e) => e.reason === 'Unhealthy')).toMatchObject({ type: 'Warning', message: 'Liveness probe failed: sick' });
    expect(evs.find((e) => e.reason === 'Killing')).toMatchObject({ type: 'Normal', message: 'Container main failed liveness probe, will be restarted' });
  }, 60_000);

  it('a healthy httpGet liveness probe and a tcpSocket readiness probe: ready, never restarted', async () => {
    const port = await freePort();
    c.api.store.create('pods', boundPod('http', node, { containers: [{
      name: 'main', image: 'busybox', command: ['python3', '-m', 'http.server', String(port), '--bind', '127.0.0.1'], ports: [{ name: 'web', containerPort: port }],
      livenessProbe: { httpGet: { path: '/', port: 'web' }, periodSeconds: 1, failureThreshold: 1 }, readinessProbe: { tcpSocket: { port }, periodSeconds: 1 },
    }] }));
    await until(() => cs('http')?.ready, 20_000, 'ready');
    await new Promise((r) => setTimeout(r, 5000));
    expect(cs('http')).toMatchObject({ ready: true, restartCount: 0 });
    expect(events('http').filter((e) => e.reason === 'Unhealthy')).toEqual([]);
  }, 60_000);

  it('a startup probe holds started and ready back; liveness is not run until it passes', async () => {
    const flag = join(dir, 'started-flag');
    c.api.store.create('pods', boundPod('startup', node, { containers: [{
      name: 'main', image: 'busybox', command: ['sleep', '3600'],
      startupProbe: { exec: { command: ['test', '-f', flag] }, periodSeconds: 1, failureThreshold: 60 },
      livenessProbe: { exec: { command: ['false'] }, periodSeconds: 1, failureThreshold: 1 },
    }] }));
    await until(() => cs('startup')?.state?.running, 20_000, 'running');
    await new Promise((r) => setTimeout(r, 3000));
    expect(cs('startup')).toMatchObject({ started: false, ready: false, restartCount: 0 });
    expect(events('startup').some((e) => e.message?.startsWith('Liveness'))).toBe(false);
    writeFileSync(flag, '');
    await until(() => (cs('startup')?.restartCount ?? 0) >= 1, 30_000, 'liveness ran after startup and restarted it');
  }, 60_000);

  it('a readiness gate holds Ready False until its condition is set True; completed init containers are ready', async () => {
    c.api.store.create('pods', boundPod('gated', node, {
      readinessGates: [{ conditionType: 'example.com/lb' }],
      initContainers: [{ name: 'init', image: 'busybox', command: ['true'] }],
      containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }],
    }));
    await until(() => cond('gated', 'ContainersReady')?.status === 'True', 20_000, 'containers ready');
    expect(cond('gated', 'Ready')).toMatchObject({ status: 'False', reason: 'ReadinessGatesNotReady', message: 'corresponding condition of pod readiness gate "example.com/lb" does not exist.' });
    expect(pod('gated')!.status.initContainerStatuses[0]).toMatchObject({ ready: true, state: { terminated: { exitCode: 0 } } });
    const cur = pod('gated')!;
    c.api.store.update('pods', { ...cur, status: { ...cur.status, conditions: [...cur.status.conditions, { type: 'example.com/lb', status: 'True' }] } });
    await until(() => cond('gated', 'Ready')?.status === 'True', 20_000, 'Ready after the gate');
    expect(cond('gated', 'example.com/lb')).toMatchObject({ status: 'True' });
  }, 60_000);
});
