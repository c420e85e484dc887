import { describe, expect, it } from 'vitest';
import type * as cri from '../../../src/cri/types.js';
import type { RuntimeService } from '../../../src/cri/services.js';
import { PodUidLabel } from '../../../src/agent/runtime/labels.js';
import { PodListReader, SHARED_LIST_MIN_PODS } from '../../../src/agent/runtime/pod-lists.js';
import {
  EXIT_SETTLE_MS,
  isSettled,
  OOM_EVENT_WAIT_MS,
  RuntimeManager,
} from '../../../src/agent/runtime/runtime-manager.js';
import { notFound } from '../../../src/lib/errors.js';

/** A runtime whose lists answer only when the test releases them, with the state they were called in. */
function gatedRuntime() {
  const sandboxes: cri.PodSandbox[] = [];
  const containers: cri.Container[] = [];
  const calls: { kind: 'sandboxes' | 'containers'; uid?: string }[] = [];
  const gates: (() => void)[] = [];
  let fail: Error | undefined;
  const matches = (labels: cri.Labels, f?: { label_selector?: cri.Labels }) =>
    Object.entries(f?.label_selector ?? {}).every(([k, v]) => labels[k] === v);
  const gated = <T>(
    kind: 'sandboxes' | 'containers',
    f: { label_selector?: cri.Labels } | undefined,
    all: () => T[],
    labels: (x: T) => cri.Labels,
  ) => {
    calls.push({ kind, uid: f?.label_selector?.[PodUidLabel] });
    // The list is taken when it is called; its answer waits for the gate.
    const taken = all().filter((x) => matches(labels(x), f));
    return new Promise<T[]>((resolve, reject) => gates.push(() => (fail ? reject(fail) : resolve(taken))));
  };
  const runtime = {
    listPodSandbox: (f?: cri.PodSandboxFilter) =>
      gated(
        'sandboxes',
        f,
        () => sandboxes,
        (s) => s.labels,
      ),
    listContainers: (f?: cri.ContainerFilter) =>
      gated(
        'containers',
        f,
        () => containers,
        (c) => c.labels,
      ),
  } as unknown as RuntimeService;
  const release = async () => {
    for (let i = 0; i < 50 && !gates.length; i++) await new Promise((r) => setImmediate(r));
    for (const g of gates.splice(0)) g();
    await new Promise((r) => setImmediate(r));
  };
  const addPod = (uid: string) => {
    sandboxes.push({ id: `s-${uid}`, labels: { [PodUidLabel]: uid } } as unknown as cri.PodSandbox);
    containers.push({ id: `c-${uid}`, labels: { [PodUidLabel]: uid } } as unknown as cri.Container);
  };
  return { runtime, calls, release, addPod, setFail: (e?: Error) => (fail = e), sandboxes, containers };
}

/** A runtime with one sandbox of pod u1 whose state the test sets, counting its sandbox lists. */
function oneSandbox() {
  let lists = 0;
  const labels = { [PodUidLabel]: 'u1' };
  let state: cri.PodSandboxState = 'SANDBOX_NOTREADY';
  const runtime = {
    listPodSandbox: async () => {
      lists++;
      return [{ id: 's1', state, created_at: 1, labels, metadata: { attempt: 0 } }];
    },
    listContainers: async () => [],
    podSandboxStatus: async () => ({ status: { network: { ip: '10.0.0.9' } } }),
  } as unknown as RuntimeService;
  return { runtime, lists: () => lists, setState: (s: cri.PodSandboxState) => (state = s) };
}

describe('PodListReader', () => {
  it('reads a lone pod with filtered lists, at once', async () => {
    const rt = gatedRuntime();
    rt.addPod('a');
    const reader = new PodListReader(rt.runtime);
    const p = reader.read('a');
    await rt.release();
    const l = await p;
    expect(rt.calls).toEqual([
      { kind: 'sandboxes', uid: 'a' },
      { kind: 'containers', uid: 'a' },
    ]);
    expect(l.sandboxes.map((s) => s.id)).toEqual(['s-a']);
    expect(l.containers.map((c) => c.id)).toEqual(['c-a']);
  });

  it('serves the pods that asked during a read with one unfiltered pair begun after they asked', async () => {
    const rt = gatedRuntime();
    rt.addPod('a');
    const reader = new PodListReader(rt.runtime);
    const first = reader.read('a');
    // While the first read is in flight, pods b, c, d appear and ask (d twice).
    const uids = ['b', 'c', 'd', 'd'];
    for (const u of new Set(uids)) rt.addPod(u);
    const later = uids.map((u) => reader.read(u));
    await rt.release();
    // The first read's lists began before b..d existed: it must not have answered them.
    expect((await first).containers.map((c) => c.id)).toEqual(['c-a']);
    await rt.release();
    const got = await Promise.all(later);
    expect(uids.length).toBeGreaterThanOrEqual(SHARED_LIST_MIN_PODS);
    expect(rt.calls).toHaveLength(4);
    expect(rt.calls.slice(2)).toEqual([{ kind: 'sandboxes' }, { kind: 'containers' }]);
    expect(got.map((l) => l.containers.map((c) => c.id))).toEqual([['c-b'], ['c-c'], ['c-d'], ['c-d']]);
    expect(got[2].containers).not.toBe(got[3].containers);
  });

  it('rejects the waiters of a failed list and keeps serving', async () => {
    const rt = gatedRuntime();
    rt.addPod('a');
    const reader = new PodListReader(rt.runtime);
    rt.setFail(new Error('runtime down'));
    const p = expect(reader.read('a')).rejects.toThrow('runtime down');
    await rt.release();
    await p;
    rt.setFail(undefined);
    const q = reader.read('a');
    await rt.release();
    expect((await q).sandboxes).toHaveLength(1);
  });

  it('answers a pod the runtime does not have with empty lists', async () => {
    const rt = gatedRuntime();
    const reader = new PodListReader(rt.runtime);
    const first = reader.read('x');
    const batch = ['y', 'z', 'w'].map((u) => reader.read(u));
    await rt.release();
    await rt.release();
    expect(await first).toEqual({ sandboxes: [], containers: [] });
    for (const l of await Promise.all(batch)) expect(l).toEqual({ sandboxes: [], containers: [] });
  });
});

describe('RuntimeManager.getPodStatus', () => {
  /** A runtime with one pod whose container state the test sets, counting status calls. */
  function onePod() {
    const counts = { sandboxStatus: 0, containerStatus: 0 };
    const listed = { n: 0 };
    let state: cri.ContainerState = 'CONTAINER_RUNNING';
    let present = true;
    const labels = { [PodUidLabel]: 'u1' };
    const runtime = {
      listPodSandbox: async () => (
        listed.n++,
        present ? [{ id: 's1', state: 'SANDBOX_READY', created_at: 1, labels, metadata: { attempt: 0 } }] : []
      ),
      listContainers: async () => (present ? [{ id: 'c1', pod_sandbox_id: 's1', state, labels }] : []),
      podSandboxStatus: async () => {
        counts.sandboxStatus++;
        return { status: { network: { ip: '10.0.0.7' } } };
      },
      containerStatus: async () => {
        counts.containerStatus++;
        if (!present) throw notFound('container "c1" not found');
        return {
          status: {
            id: 'c1',
            state,
            created_at: 2e6,
            started_at: 3e6,
            finished_at: state === 'CONTAINER_EXITED' ? 4e6 : 0,
            exit_code: state === 'CONTAINER_EXITED' ? 3 : 0,
            labels: { 'io.kubernetes.container.name': 'main' },
            annotations: {},
            image: { image: 'busybox' },
            image_ref: 'sha256:x',
            log_path: '',
            reason: '',
            message: '',
          },
        };
      },
    } as unknown as RuntimeService;
    return {
      rm: new RuntimeManager(runtime),
      counts,
      listed,
      setState: (s: cri.ContainerState) => (state = s),
      remove: () => (present = false),
    };
  }

  it('asks for the sandbox IP and a settled container status once, and again when the container changes state', async () => {
    const p = onePod();
    const a = await p.rm.getPodStatus('u1', 'p', 'ns');
    expect(a.sandboxes[0].ip).toBe('10.0.0.7');
    expect(a.containers[0]).toMatchObject({ id: 'c1', state: 'running', startedAt: 3 });
    const b = await p.rm.getPodStatus('u1', 'p', 'ns');
    expect(b).toEqual(a);
    expect(p.counts).toEqual({ sandboxStatus: 1, containerStatus: 1 });
    // A caller changing what it got does not change what the next read returns.
    b.containers[0].message = 'changed';
    p.setState('CONTAINER_EXITED');
    const c = await p.rm.getPodStatus('u1', 'p', 'ns');
    expect(c.containers[0]).toMatchObject({ state: 'exited', exitCode: 3, finishedAt: 4, message: '' });
    expect(p.counts).toEqual({ sandboxStatus: 1, containerStatus: 2 });
  });

  it('asks again for a created container, and forgets a pod that is gone', async () => {
    const p = onePod();
    p.setState('CONTAINER_CREATED');
    await p.rm.getPodStatus('u1', 'p', 'ns');
    await p.rm.getPodStatus('u1', 'p', 'ns');
    expect(p.counts.containerStatus).toBe(2);
    p.setState('CONTAINER_RUNNING');
    await p.rm.getPodStatus('u1', 'p', 'ns');
    p.remove();
    expect(await p.rm.listRuntimePods()).toEqual([]);
    expect((await p.rm.getPodStatus('u1', 'p', 'ns')).containers).toEqual([]);
  });

  it('reads a pod just created by ID, as a full read finds it, and remembers it for the next read', async () => {
    const p = onePod();
    const sandbox = { id: 's1', ready: true, createdAt: 0, attempt: 0, ip: '10.0.0.7' };
    const created = await p.rm.getCreatedPodStatus('u1', 'p', 'ns', sandbox, ['c1']);
    expect(p.listed.n).toBe(0);
    expect(p.counts).toEqual({ sandboxStatus: 0, containerStatus: 1 });
    // What a full read (a manager that has not seen the pod) finds.
    expect(created).toEqual(await onePod().rm.getPodStatus('u1', 'p', 'ns'));
    // The next read takes the sandbox IP and the running container's status from it.
    expect(await p.rm.getPodStatus('u1', 'p', 'ns')).toEqual(created);
    expect(p.listed.n).toBe(1);
    expect(p.counts).toEqual({ sandboxStatus: 0, containerStatus: 1 });
    // A container gone before it was read is left out.
    const q = onePod();
    q.remove();
    expect((await q.rm.getCreatedPodStatus('u1', 'p', 'ns', sandbox, ['c1'])).containers).toEqual([]);
  });

  it("takes the last full lists, not fresh ones, when they began after the caller's quiet time and after the manager was made", async () => {
    const { runtime, lists: n, setState } = oneSandbox();
    const rm = new RuntimeManager(runtime);
    const quiet = { quietSinceMs: 0 };
    // No full lists yet (an earlier kubelet's pods would be unknown): the runtime is asked.
    await rm.getPodStatus('new', 'p', 'ns', quiet);
    expect(n()).toBe(1);
    await new Promise((r) => setTimeout(r, 5));
    await rm.listAll();
    expect(n()).toBe(2);
    // A pod the lists do not show is empty; one they show is as they show it.
    expect(await rm.getPodStatus('new', 'p', 'ns', quiet)).toEqual({
      uid: 'new',
      name: 'p',
      namespace: 'ns',
      sandboxes: [],
      containers: [],
    });
    expect((await rm.getPodStatus('u1', 'p', 'ns', quiet)).sandboxes).toEqual([
      { id: 's1', ready: false, createdAt: 0, attempt: 0, ip: '' },
    ]);
    expect(n()).toBe(2);
    // The runtime changed since those lists: no quiet time reads it again.
    setState('SANDBOX_READY');
    expect((await rm.getPodStatus('u1', 'p', 'ns')).sandboxes[0]).toMatchObject({ ready: true, ip: '10.0.0.9' });
    expect(n()).toBe(3);
    // The lists the second read took (sorted in place) were copies: the last full lists are unchanged.
    expect((await rm.listAll(60_000)).sandboxes).toHaveLength(1);
  });

  it('waits for the next full lists when the last began before the quiet time, and lists on its own when none come in time', async () => {
    const { runtime, lists: n, setState } = oneSandbox();
    // A wait long enough that a loaded machine's few ms between the steps below do not end it.
    const rm = new RuntimeManager(runtime, { nextListsWaitMs: 500 });
    await new Promise((r) => setTimeout(r, 2));
    await rm.listAll();
    await new Promise((r) => setTimeout(r, 2));
    setState('SANDBOX_READY');
    // Served by the next relist, begun after the quiet time: no list of its own.
    const read = rm.getPodStatus('u1', 'p', 'ns', { quietSinceMs: performance.now() });
    await new Promise((r) => setTimeout(r, 5));
    expect(n()).toBe(1);
    await rm.listAll();
    expect((await read).sandboxes[0]).toMatchObject({ ready: true, ip: '10.0.0.9' });
    expect(n()).toBe(2);
    // No relist in time: its own lists, after the wait.
    const t0 = performance.now();
    await rm.getPodStatus('u1', 'p', 'ns', { quietSinceMs: performance.now() });
    expect(n()).toBe(3);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(450);
    // No lists made lately (no PLEG relisting): no wait.
    const idle = new RuntimeManager(runtime, { nextListsWaitMs: 10_000 });
    await idle.getPodStatus('u1', 'p', 'ns', { quietSinceMs: performance.now() });
    expect(n()).toBe(4);
  });

  it("listAll lists now by default and reuses lists begun within maxAgeMs (housekeeping takes the PLEG's)", async () => {
    let lists = 0;
    const runtime = {
      listPodSandbox: async () => {
        lists++;
        return [
          {
            id: 's1',
            state: 'SANDBOX_READY',
            created_at: 1,
            labels: { [PodUidLabel]: 'u1' },
            metadata: { attempt: 0 },
          },
        ];
      },
      listContainers: async () => [],
    } as unknown as RuntimeService;
    const rm = new RuntimeManager(runtime);
    await rm.listAll();
    await rm.listAll();
    expect(lists).toBe(2);
    expect((await rm.listRuntimePods(60_000)).map((p) => p.uid)).toEqual(['u1']);
    expect(lists).toBe(2);
    await new Promise((r) => setTimeout(r, 20));
    await rm.listRuntimePods(5);
    expect(lists).toBe(3);
  });

  it('listRuntimePods answers unchanged frozen lists with its last answer, and regroups new or mutable ones', async () => {
    const sandbox = (uid: string) => ({
      id: `s-${uid}`,
      state: 'SANDBOX_READY',
      created_at: 1,
      labels: { [PodUidLabel]: uid, 'io.kubernetes.pod.name': uid },
      metadata: { attempt: 0 },
    });
    let sandboxes: cri.PodSandbox[] = Object.freeze([sandbox('u1')]) as unknown as cri.PodSandbox[];
    const containers = Object.freeze([]) as unknown as cri.Container[];
    const runtime = {
      listPodSandbox: async () => sandboxes,
      listContainers: async () => containers,
    } as unknown as RuntimeService;
    const rm = new RuntimeManager(runtime);
    const first = await rm.listRuntimePods();
    expect(first.map((p) => [p.uid, p.name])).toEqual([['u1', 'u1']]);
    expect(await rm.listRuntimePods()).toBe(first);
    // A new answer (a pod came) is grouped again.
    sandboxes = Object.freeze([sandbox('u1'), sandbox('u2')]) as unknown as cri.PodSandbox[];
    const second = await rm.listRuntimePods();
    expect(second.map((p) => p.uid)).toEqual(['u1', 'u2']);
    // The same array, but one that can change in place, is never trusted to be unchanged.
    sandboxes = [sandbox('u3')] as unknown as cri.PodSandbox[];
    expect((await rm.listRuntimePods()).map((p) => p.uid)).toEqual(['u3']);
    sandboxes.push(sandbox('u4') as unknown as cri.PodSandbox);
    expect((await rm.listRuntimePods()).map((p) => p.uid)).toEqual(['u3', 'u4']);
  });
});

describe('RuntimeManager and a dual-stack sandbox (regression: additional_ips were dropped)', () => {
  it("keeps the CRI network status's additional IPs beside the primary one, on the first read and the next", async () => {
    const labels = { [PodUidLabel]: 'u1' };
    let statusReads = 0;
    const runtime = {
      listPodSandbox: async () => [
        { id: 's1', state: 'SANDBOX_READY', created_at: 1, labels, metadata: { attempt: 0 } },
      ],
      listContainers: async () => [],
      podSandboxStatus: async () => (
        statusReads++,
        { status: { network: { ip: '10.244.0.5', additional_ips: [{ ip: 'fd00:10:244::5' }] } } }
      ),
    } as unknown as RuntimeService;
    const rm = new RuntimeManager(runtime);
    for (let i = 0; i < 2; i++) {
      const s = (await rm.getPodStatus('u1', 'p', 'ns')).sandboxes[0];
      expect([s.ip, s.additionalIps]).toEqual(['10.244.0.5', ['fd00:10:244::5']]);
    }
    expect(statusReads).toBe(1);
  });
});

describe('an exited container read right after its exit (regression: a late OOMKilled stayed Error)', () => {
  it('is read again until it has been exited a while; then it is remembered', () => {
    const now = Date.now();
    expect(isSettled({ state: 'exited', finishedAt: now - 1000 }, now)).toBe(false);
    expect(isSettled({ state: 'exited', finishedAt: now - EXIT_SETTLE_MS - 1 }, now)).toBe(true);
    expect(isSettled({ state: 'running', finishedAt: 0 }, now)).toBe(true);
    expect(isSettled({ state: 'created', finishedAt: 0 }, now)).toBe(false);
  });
});

describe("a SIGKILL exit read before containerd's OOM event (regression: an OOM kill reported as Error)", () => {
  /** A runtime with one exited container (137) whose reason turns to OOMKilled after `errorReads` reads. */
  const oomRuntime = (finishedAtMs: number, errorReads: number) => {
    const labels = { [PodUidLabel]: 'u1', 'io.kubernetes.container.name': 'main' };
    let reads = 0;
    const runtime = {
      listPodSandbox: async () => [
        { id: 's1', state: 'SANDBOX_NOTREADY', created_at: 1, labels, metadata: { attempt: 0 } },
      ],
      listContainers: async () => [
        { id: 'c1', pod_sandbox_id: 's1', state: 'CONTAINER_EXITED', labels, metadata: { name: 'main' } },
      ],
      containerStatus: async () => ({
        status: {
          id: 'c1',
          state: 'CONTAINER_EXITED',
          labels,
          metadata: { name: 'main' },
          exit_code: 137,
          finished_at: finishedAtMs * 1e6,
          reason: reads++ < errorReads ? 'Error' : 'OOMKilled',
        },
      }),
    } as unknown as RuntimeService;
    return { runtime, reads: () => reads };
  };

  it('reads it again until the runtime names the OOM kill', async () => {
    const { runtime, reads } = oomRuntime(Date.now(), 2);
    const status = await new RuntimeManager(runtime).getPodStatus('u1', 'p', 'ns');
    expect(status.containers[0]).toMatchObject({ exitCode: 137, reason: 'OOMKilled' });
    expect(reads()).toBe(3);
  });

  it('leaves a SIGKILL exit of a second ago as the runtime said (a kill, not an OOM)', async () => {
    const { runtime, reads } = oomRuntime(Date.now() - OOM_EVENT_WAIT_MS, 1000);
    const status = await new RuntimeManager(runtime).getPodStatus('u1', 'p', 'ns');
    expect(status.containers[0]).toMatchObject({ exitCode: 137, reason: 'Error' });
    expect(reads()).toBe(1);
  });

  it('waits at most a second after the exit for a reason that stays Error', async () => {
    const { runtime, reads } = oomRuntime(Date.now(), 1000);
    const status = await new RuntimeManager(runtime).getPodStatus('u1', 'p', 'ns');
    expect(status.containers[0]).toMatchObject({ reason: 'Error' });
    expect(reads()).toBeLessThanOrEqual(OOM_EVENT_WAIT_MS / 100 + 1);
  });
});
