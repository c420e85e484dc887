/**
 * Pods deleted soon after they are created, as upstream's "Pods Fast Delete" specs (test/e2e/common/node/
 * pods_fast_delete.go) do it: workers create pods whose container exits 1 (or whose init container does, a regular
 * container waiting behind it), delete each after a random 0–2 s and watch it to its deletion. No status the kubelet
 * writes may show what did not happen: a container that exits 1 ends with 1 (or 137 when killed), a terminated
 * container never runs or waits again, a terminal phase never reverts, the container behind a failed init container
 * never starts, and the pod leaves either in a terminal phase or still Pending, with no container running.
 * The real CLI against the fake apiserver, pods on the embedded runtime.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boundPod, kubectl, startCluster, type Cluster } from './cluster-helpers.js';
import { until } from './helpers.js';

type Obj = Record<string, any>;

const node = 'fast-delete-node';
const dir = mkdtempSync(join(tmpdir(), 'tsk-fast-delete-'));
let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ dir, node });
}, 60_000);

afterAll(async () => {
  await c?.close();
  rmSync(dir, { recursive: true, force: true });
});

const requests = { requests: { cpu: '5m', memory: '10Mi' } };

/** A pod whose container exits 1; with `init`, its init container does and a regular one waits behind it. */
function fastDeletePod(name: string, init: boolean): Obj {
  const fail = { name: 'fail', image: 'agnhost', command: ['/bin/false'], resources: requests };
  return boundPod(name, node, {
    restartPolicy: 'Never',
    terminationGracePeriodSeconds: 1,
    ...(init
      ? {
          initContainers: [fail],
          containers: [{ name: 'blocked', image: 'agnhost', command: ['/bin/true'], resources: requests }],
        }
      : { containers: [fail] }),
  });
}

const statusOf = (pod: Obj, name: string): Obj | undefined =>
  [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find(
    (s: Obj) => s.name === name,
  );

/** What upstream's podStartVerifier finds wrong in the pod's successive states (empty when nothing is). */
function verify(states: Obj[], init: boolean): string[] {
  const errors: string[] = [];
  let terminated = false;
  let terminalPhase = false;
  let last: Obj | undefined;
  for (const pod of states) {
    last = pod;
    const name = pod.metadata.name as string;
    const blocked = statusOf(pod, 'blocked');
    if (blocked && (blocked.started || blocked.lastState?.terminated || !blocked.state?.waiting))
      errors.push(`${name}: the container behind the failed init container started: ${JSON.stringify(blocked)}`);
    const fail = statusOf(pod, 'fail');
    if (!fail) continue;
    const t = fail.state?.terminated;
    if (terminated && (fail.state?.waiting || fail.state?.running || !t))
      errors.push(`${name}: terminated, then changed state: ${JSON.stringify(fail.state)}`);
    if (t) {
      terminated = true;
      const killed = t.exitCode === 137 && (t.reason === 'ContainerStatusUnknown' || t.reason === 'Error');
      if (t.exitCode !== 1 && !killed) errors.push(`${name}: unexpected exit: ${JSON.stringify(t)}`);
      if (t.finishedAt && !t.startedAt) errors.push(`${name}: a finish time without a start time`);
      if (t.finishedAt && t.startedAt && Date.parse(t.finishedAt) < Date.parse(t.startedAt))
        errors.push(`${name}: finished before it started: ${JSON.stringify(t)}`);
    }
    const phase = pod.status?.phase;
    if (phase === 'Failed' || phase === 'Succeeded') terminalPhase = true;
    else if (terminalPhase) errors.push(`${name}: a terminal phase, then ${phase}`);
  }
  if (last) {
    const name = last.metadata.name as string;
    const running = (last.status?.containerStatuses ?? []).filter((s: Obj) => s.state?.running);
    if (!terminalPhase && running.length) errors.push(`${name}: deleted while its containers ran`);
    else if (!terminalPhase && last.status?.phase !== 'Pending')
      errors.push(`${name}: deleted in phase ${last.status?.phase} with no container running`);
    const fail = statusOf(last, 'fail');
    if (fail && !fail.state?.waiting && !fail.state?.terminated)
      errors.push(`${name}: its last status has the container running or unknown: ${JSON.stringify(fail)}`);
  }
  if (init && last && !statusOf(last, 'blocked') && statusOf(last, 'fail'))
    errors.push(`${last.metadata.name as string}: no status for the blocked container`);
  return errors;
}

/** Creates, deletes after a random delay and watches one pod to its deletion; its successive states. */
async function createAndDelete(name: string, init: boolean): Promise<Obj[]> {
  const states: Obj[] = [];
  let deleted = false;
  const fromRv = c.api.store.resourceVersion;
  const stop = c.api.store.watch(
    'pods',
    fromRv,
    (o) => o.metadata?.name === name,
    (e) => {
      states.push(e.object);
      if (e.type === 'DELETED') deleted = true;
    },
  );
  try {
    c.api.store.create('pods', fastDeletePod(name, init));
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 2000)));
    const out = await kubectl(c, ['delete', 'pod', name, '--wait=false']);
    expect(out.code, out.stderr).toBe(0);
    await until(() => deleted, 60_000, `${name} deleted`);
  } finally {
    stop();
  }
  // The first state is the pod as created: what the kubelet wrote comes after it.
  return states.slice(1);
}

describe('pods deleted right after their creation (upstream "Pods Fast Delete")', () => {
  for (const init of [false, true]) {
    it(
      init
        ? 'never report container start when an init container fails'
        : 'never report success for a pending container',
      async () => {
        const workers = 3;
        const iterations = 3;
        const errors = (
          await Promise.all(
            Array.from({ length: workers }, async (_, worker) => {
              const found: string[] = [];
              for (let attempt = 0; attempt < iterations; attempt++) {
                const name = `pod-terminate-status-${init ? 'init-' : ''}${worker}-${attempt}`;
                found.push(...verify(await createAndDelete(name, init), init));
              }
              return found;
            }),
          )
        ).flat();
        expect(errors).toEqual([]);
      },
      180_000,
    );
  }
});
