/**
 * Reads the runtime over CRI into the kubelet's model (pod-runtime-status.ts): one pod's status,
 * or every pod the runtime has (for /runningpods, housekeeping and the PLEG).
 */
import type { RuntimeService } from '../../cri/services.js';
import { apiSignalOf } from '../../cri/stop-signals.js';
import type * as cri from '../../cri/types.js';
import { isCode, KubeletError, messageOf, notImplemented } from '../../lib/errors.js';
import {
  ContainerHashAnnotation,
  ContainerNameLabel,
  ContainerRestartCountAnnotation,
  PodNameLabel,
  PodNamespaceLabel,
} from './labels.js';
import { groupByPod, PodListReader, type PodLists, type RuntimeLists } from './pod-lists.js';
import { terminationMessage } from './termination-message.js';
import type { PodRuntimeStatus, RuntimeContainer, RuntimeSandbox } from './pod-runtime-status.js';

const nsToMs = (ns: number) => (ns ? Math.floor(ns / 1e6) : 0);

const stateOf: Record<cri.ContainerState, RuntimeContainer['state']> = {
  CONTAINER_CREATED: 'created',
  CONTAINER_RUNNING: 'running',
  CONTAINER_EXITED: 'exited',
  CONTAINER_UNKNOWN: 'unknown',
};

/** Converts a CRI ContainerStatus. */
export function toRuntimeContainer(s: cri.ContainerStatus, sandboxId: string): RuntimeContainer {
  const stopSignal = apiSignalOf(s.stop_signal);
  return {
    id: s.id,
    name: s.labels?.[ContainerNameLabel] ?? s.metadata?.name ?? '',
    state: stateOf[s.state] ?? 'unknown',
    createdAt: nsToMs(s.created_at),
    startedAt: nsToMs(s.started_at),
    finishedAt: nsToMs(s.finished_at),
    exitCode: s.exit_code,
    reason: s.reason,
    message: s.message,
    image: s.image?.user_specified_image || s.image?.image || '',
    imageRef: s.image_ref || s.image_id || '',
    hash: s.annotations?.[ContainerHashAnnotation] ?? '',
    restartCount: Number(s.annotations?.[ContainerRestartCountAnnotation] ?? 0) || 0,
    logPath: s.log_path,
    sandboxId,
    ...(s.user?.linux
      ? {
          user: {
            uid: Number(s.user.linux.uid),
            gid: Number(s.user.linux.gid),
            supplementalGroups: (s.user.linux.supplemental_groups ?? []).map(Number),
          },
        }
      : {}),
    ...(stopSignal ? { stopSignal } : {}),
  };
}

/** Converts a CRI sandbox (a list item or a PodSandboxStatus) with its IP, kept only for a ready sandbox. */
export function sandboxOf(
  s: Pick<cri.PodSandbox, 'id' | 'state' | 'created_at' | 'metadata'>,
  ip: string,
  additionalIps: string[] = [],
): RuntimeSandbox {
  const ready = s.state === 'SANDBOX_READY';
  return {
    id: s.id,
    ready,
    createdAt: nsToMs(s.created_at),
    attempt: s.metadata?.attempt ?? 0,
    ip: ready ? ip : '',
    ...(ready && additionalIps.length ? { additionalIps } : {}),
  };
}

/** A sandbox's IPs as its CRI network status gives them: the primary one, then the others. Pure. */
export function networkIps(network: cri.PodSandboxNetworkStatus | null | undefined): {
  ip: string;
  additionalIps: string[];
} {
  return { ip: network?.ip ?? '', additionalIps: (network?.additional_ips ?? []).map((a) => a.ip).filter(Boolean) };
}

/** A pod the runtime has, identified by the kubelet's labels. */
export interface RuntimePod {
  uid: string;
  name: string;
  namespace: string;
  readonly sandboxes: readonly cri.PodSandbox[];
  readonly containers: readonly cri.Container[];
}

/** What the last read of a pod found that cannot change while it is listed in the same state. */
interface KnownPod {
  /** The newest ready sandbox and its IPs (a sandbox keeps its IPs for life). */
  sandbox?: { id: string; ip: string; additionalIps: string[] };
  /** Container statuses by ID, of running and exited containers (final until the state changes). */
  containers: Map<string, RuntimeContainer>;
}

/**
 * The containers found, newest first: by creation, except that the instances of one container go by their restart
 * count, then creation. A later attempt is the newer one whatever the runtime's wall clock said: after that clock
 * was stepped back, a new instance is created "before" the old one, which upstream's order by creation alone then
 * takes for the latest (and the kubelet started another container at every sync). Pure.
 */
export function newestFirst(statuses: readonly (RuntimeContainer | undefined)[]): RuntimeContainer[] {
  const found = statuses
    .filter((x): x is RuntimeContainer => !!x)
    .sort((a, b) => b.createdAt - a.createdAt || b.restartCount - a.restartCount);
  const instances = new Map<string, RuntimeContainer[]>();
  for (const c of found) {
    const list = instances.get(c.name);
    if (list) list.push(c);
    else instances.set(c.name, [c]);
  }
  for (const list of instances.values())
    if (list.length > 1) list.sort((a, b) => b.restartCount - a.restartCount || b.createdAt - a.createdAt);
  const taken = new Map<string, number>();
  return found.map((c) => {
    const index = taken.get(c.name) ?? 0;
    taken.set(c.name, index + 1);
    return instances.get(c.name)![index];
  });
}

/** Full lists begun at most this long ago (ms) mean that lists are being made every second (the PLEG relists). */
export const RELISTING_MS = 2500;
/** How long a read with a quiet time waits for the next full lists (ms) before it lists on its own. */
export const NEXT_LISTS_WAIT_MS = 2000;

/** Container states whose CRI status stays the same while the list reports that state. */
const settled = new Set<RuntimeContainer['state']>(['running', 'exited']);

/**
 * How long after its exit a container's status is still read again: containerd records an OOM kill
 * when its OOM event arrives, which can be after the exit (the reason turns from Error to OOMKilled).
 */
export const EXIT_SETTLE_MS = 10_000;

/** How long after a SIGKILL exit its status is read again for containerd's OOM event (ms), and how often. */
export const OOM_EVENT_WAIT_MS = 1000;
const OOM_EVENT_POLL_MS = 100;

/**
 * Whether the runtime may still turn this exit's reason into OOMKilled (pure): a SIGKILL exit (137) it calls "Error",
 * read within OOM_EVENT_WAIT_MS of the exit. containerd records an OOM kill when its OOM event arrives, which can come
 * just after the exit event; a pod that ends there is not read again, so its status would keep "Error".
 */
export function mayBecomeOomKilled(
  rc: Pick<RuntimeContainer, 'state' | 'exitCode' | 'reason' | 'finishedAt'>,
  nowMs: number,
): boolean {
  return (
    rc.state === 'exited' && rc.exitCode === 137 && rc.reason === 'Error' && nowMs - rc.finishedAt < OOM_EVENT_WAIT_MS
  );
}

/** Whether a status read now stays what it is while the list shows the same state. Pure. */
export function isSettled(rc: Pick<RuntimeContainer, 'state' | 'finishedAt'>, nowMs: number): boolean {
  return settled.has(rc.state) && !(rc.state === 'exited' && nowMs - rc.finishedAt < EXIT_SETTLE_MS);
}

/** CRI reads for the agent. Every method may block on the runtime (bounded by CRI deadlines). */
/**
 * A pod's status could not be read though the runtime listed it (its sandbox's or a container's
 * status call failed): upstream's PLEG stores such an error for the pod, and its worker reports it
 * (FailedSync). A runtime that cannot list at all is an outage, not this. It keeps the runtime
 * error's code (an API request answers as before).
 */
export class PodStatusError extends KubeletError {
  constructor(readonly runtimeError: unknown) {
    super(runtimeError instanceof KubeletError ? runtimeError.code : 'Internal', messageOf(runtimeError), {
      cause: runtimeError,
    });
  }
}

export class RuntimeManager {
  private readonly lists: PodListReader;
  private readonly known = new Map<string, KnownPod>();
  /** The last full lists, when they began (ms, monotonic: performance.now) and, once asked for, grouped by pod. */
  private recent: { atMs: number; lists: RuntimeLists; byUid?: Map<string, PodLists> } | undefined;
  /** listRuntimePods' last answer and the lists it came from. */
  private lastPods: (RuntimeLists & { pods: readonly RuntimePod[]; uids: ReadonlySet<string> }) | undefined;
  /** getPodStatus calls waiting for the next full lists (begun after `sinceMs`). */
  private waiting: { sinceMs: number; done(arrived: boolean): void }[] = [];
  /** When this manager was made (ms, monotonic): lists begun later show whatever an earlier kubelet left. */
  private readonly bornAtMs = performance.now();

  constructor(
    private readonly runtime: RuntimeService,
    private readonly o: { nextListsWaitMs?: number } = {},
  ) {
    this.lists = new PodListReader(runtime);
  }

  /**
   * The status of one pod (empty when the runtime has nothing of it). PodSandboxStatus and
   * ContainerStatus are asked again only for what changed since the pod's last read, as a
   * sandbox's IP and a running or exited container's status do not change while it stays listed
   * in that state. The lists are fresh (begun after the call), unless the caller promises that
   * nothing has acted for the pod since `quietSinceMs` (monotonic ms; a pod worker's sync: its
   * previous sync ended then, see PodWorkers) and the last full lists (the PLEG's, every second)
   * began later: those show everything the pod's worker did, which is all that creates or
   * removes a pod's sandboxes and containers, and a change since (a container that exited) is
   * an event of the next relist. When the last lists began earlier and lists are being made
   * every second, the next ones are awaited (at most NEXT_LISTS_WAIT_MS). This is upstream's pod
   * sync, which waits for the PLEG's cache to be newer than the worker's last sync.
   */
  async getPodStatus(
    uid: string,
    name: string,
    namespace: string,
    o: { quietSinceMs?: number } = {},
  ): Promise<PodRuntimeStatus> {
    const { sandboxes, containers } =
      (o.quietSinceMs !== undefined && (await this.listsAfter(uid, o.quietSinceMs))) || (await this.lists.read(uid));
    try {
      return await this.readPodStatus(uid, name, namespace, sandboxes, containers);
    } catch (err) {
      throw new PodStatusError(err);
    }
  }

  /** The pod's status from the runtime's lists of it: its newest ready sandbox's and its containers' statuses. */
  private async readPodStatus(
    uid: string,
    name: string,
    namespace: string,
    sandboxes: cri.PodSandbox[],
    containers: readonly cri.Container[],
  ): Promise<PodRuntimeStatus> {
    const before = this.known.get(uid);
    const now: KnownPod = { containers: new Map() };
    // Newest first: by attempt, then creation (one made after the wall clock was stepped back is still the newer).
    sandboxes.sort((a, b) => (b.metadata?.attempt ?? 0) - (a.metadata?.attempt ?? 0) || b.created_at - a.created_at);
    const sboxes: RuntimeSandbox[] = [];
    for (const [i, s] of sandboxes.entries()) {
      let ips = { ip: '', additionalIps: [] as string[] };
      if (i === 0 && s.state === 'SANDBOX_READY') {
        if (before?.sandbox?.id === s.id) ips = before.sandbox;
        else {
          try {
            ips = networkIps((await this.runtime.podSandboxStatus(s.id)).status.network);
          } catch (err) {
            if (!isCode(err, 'NotFound')) throw err;
          }
        }
        now.sandbox = { id: s.id, ...ips };
      }
      sboxes.push(sandboxOf(s, ips.ip, ips.additionalIps));
    }
    const statuses = await Promise.all(
      containers.map(async (c) => {
        const seen = before?.containers.get(c.id);
        if (seen && seen.state === stateOf[c.state] && settled.has(seen.state)) {
          now.containers.set(c.id, seen);
          return { ...seen };
        }
        return this.containerStatus(c.id, c.pod_sandbox_id, now);
      }),
    );
    return this.remember({ uid, name, namespace, sandboxes: sboxes, containers: newestFirst(statuses) }, now);
  }

  /**
   * The status of a pod right after a sync that found nothing of it in the runtime and then
   * created `sandbox` and started the containers `containerIds`, every step successful. A pod's
   * worker is the only creator of its sandboxes and containers (see getPodStatus), so the runtime
   * has exactly these: they are read by ID (the executor read the sandbox's status; ContainerStatus
   * here) instead of by lists, whose cost grows with everything the runtime has.
   */
  async getCreatedPodStatus(
    uid: string,
    name: string,
    namespace: string,
    sandbox: RuntimeSandbox,
    containerIds: string[],
  ): Promise<PodRuntimeStatus> {
    const now: KnownPod = {
      containers: new Map(),
      sandbox: sandbox.ready
        ? { id: sandbox.id, ip: sandbox.ip, additionalIps: sandbox.additionalIps ?? [] }
        : undefined,
    };
    const statuses = await Promise.all(containerIds.map((id) => this.containerStatus(id, sandbox.id, now)));
    return this.remember({ uid, name, namespace, sandboxes: [{ ...sandbox }], containers: newestFirst(statuses) }, now);
  }

  /** One container's status by CRI ContainerStatus (undefined once it is gone); a settled one is put in `now`. */
  private async containerStatus(id: string, sandboxId: string, now: KnownPod): Promise<RuntimeContainer | undefined> {
    try {
      let s = (await this.runtime.containerStatus(id)).status;
      let rc = toRuntimeContainer(s, sandboxId);
      while (mayBecomeOomKilled(rc, Date.now())) {
        await new Promise((r) => setTimeout(r, OOM_EVENT_POLL_MS));
        s = (await this.runtime.containerStatus(id)).status;
        rc = toRuntimeContainer(s, sandboxId);
      }
      if (rc.state === 'exited') rc.message = await terminationMessage(s);
      if (isSettled(rc, Date.now())) now.containers.set(id, { ...rc });
      return rc;
    } catch (err) {
      if (isCode(err, 'NotFound')) return undefined;
      throw err;
    }
  }

  /** Keeps what cannot change of `status` (`now`) for the pod's next read; returns `status`. */
  private remember(status: PodRuntimeStatus, now: KnownPod): PodRuntimeStatus {
    if (status.sandboxes.length || status.containers.length) this.known.set(status.uid, now);
    else this.known.delete(status.uid);
    return status;
  }

  /**
   * Pod `uid`'s part of full lists begun after `sinceMs`: the last ones, or the next ones when
   * lists are being made every second (the PLEG's). Undefined when there are none in time.
   */
  private async listsAfter(uid: string, sinceMs: number): Promise<PodLists | undefined> {
    const r = this.recent;
    if (!r || r.atMs > sinceMs || performance.now() - r.atMs > RELISTING_MS) return this.listedSince(uid, sinceMs);
    const arrived = await new Promise<boolean>((resolve) => {
      const w = { sinceMs, done: resolve };
      this.waiting.push(w);
      setTimeout(() => {
        const i = this.waiting.indexOf(w);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(false);
      }, this.o.nextListsWaitMs ?? NEXT_LISTS_WAIT_MS).unref();
    });
    return arrived ? this.listedSince(uid, sinceMs) : undefined;
  }

  /**
   * Pod `uid`'s part of the last full lists (copies of the arrays), if they began after `sinceMs` and after this
   * manager was made.
   */
  private listedSince(uid: string, sinceMs: number): PodLists | undefined {
    const r = this.recent;
    if (!r || r.atMs <= Math.max(sinceMs, this.bornAtMs)) return undefined;
    r.byUid ??= groupByPod(r.lists.sandboxes, r.lists.containers);
    const l = r.byUid.get(uid);
    return { sandboxes: [...(l?.sandboxes ?? [])], containers: [...(l?.containers ?? [])] };
  }

  /**
   * Whether the container runs now: one CRI ContainerStatus, as upstream's log follower asks it. A runtime that cannot
   * say counts as not running, which ends a follow once its log is drained (upstream ends it with the error).
   */
  async containerRunning(containerId: string): Promise<boolean> {
    const response = await this.runtime.containerStatus(containerId).catch(() => undefined);
    return response?.status?.state === 'CONTAINER_RUNNING';
  }

  /**
   * CRI ExecSync: runs `cmd` to completion (no deadline beyond the CRI call's) and returns its output; `signal` ends it
   * early.
   */
  async execSync(
    containerId: string,
    cmd: string[],
    signal?: AbortSignal,
  ): Promise<{ stdout: Buffer; stderr: Buffer; exitCode: number }> {
    const r = await this.runtime.execSync(containerId, cmd, 0, signal);
    return { stdout: Buffer.from(r.stdout ?? []), stderr: Buffer.from(r.stderr ?? []), exitCode: r.exit_code };
  }

  /** CRI CheckpointContainer (NotImplemented when the runtime has no such call). */
  async checkpointContainer(req: cri.CheckpointContainerRequest): Promise<void> {
    if (!this.runtime.checkpointContainer) throw notImplemented('the container runtime cannot checkpoint containers');
    await this.runtime.checkpointContainer(req);
  }

  /** CRI Exec: the runtime's streaming URL for a session in container `containerId`. */
  execUrl(
    containerId: string,
    cmd: string[],
    o: { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean },
  ): Promise<string> {
    return this.runtime.exec({ container_id: containerId, cmd, ...o });
  }

  /** CRI Attach: the runtime's streaming URL for attaching to `containerId`. */
  attachUrl(
    containerId: string,
    o: { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean },
  ): Promise<string> {
    return this.runtime.attach({ container_id: containerId, ...o });
  }

  /** CRI PortForward: the runtime's streaming URL for forwarding into sandbox `sandboxId`. */
  portForwardUrl(sandboxId: string, ports: number[] = []): Promise<string> {
    return this.runtime.portForward({ pod_sandbox_id: sandboxId, port: ports });
  }

  /**
   * Every sandbox and container the runtime has, from lists begun at most `maxAgeMs` ago: the
   * last lists are reused when they are recent enough (the PLEG lists every second; housekeeping
   * can take those instead of listing again), otherwise they are listed now.
   */
  async listAll(maxAgeMs = 0): Promise<RuntimeLists> {
    const now = performance.now();
    if (maxAgeMs > 0 && this.recent && now - this.recent.atMs <= maxAgeMs) return this.recent.lists;
    const [sandboxes, containers] = await Promise.all([this.runtime.listPodSandbox(), this.runtime.listContainers()]);
    if (!this.recent || this.recent.atMs < now) {
      this.recent = { atMs: now, lists: { sandboxes, containers } };
      if (this.waiting.length) {
        const served = this.waiting.filter((w) => w.sinceMs < now);
        this.waiting = this.waiting.filter((w) => w.sinceMs >= now);
        for (const w of served) w.done(true);
      }
    }
    return { sandboxes, containers };
  }

  /**
   * Every pod in the runtime that carries the kubelet's labels, from lists at most `maxAgeMs` old
   * (listAll). Lists that are the same frozen arrays as last time (nothing changed: cri/reused-list-items.ts)
   * give the same answer, not a regrouping: housekeeping asks every 2 s.
   */
  async listRuntimePods(maxAgeMs = 0): Promise<readonly RuntimePod[]> {
    const { sandboxes, containers } = await this.listAll(maxAgeMs);
    let last = this.lastPods;
    if (
      !last ||
      last.sandboxes !== sandboxes ||
      last.containers !== containers ||
      !Object.isFrozen(sandboxes) ||
      !Object.isFrozen(containers)
    ) {
      const pods = runtimePodsOf(sandboxes, containers);
      last = this.lastPods = { sandboxes, containers, pods, uids: new Set(pods.map((p) => p.uid)) };
    }
    // What getPodStatus remembered of pods the runtime no longer has is dropped (housekeeping lists every 2 s).
    for (const uid of this.known.keys()) if (!last.uids.has(uid)) this.known.delete(uid);
    return last.pods;
  }
}

/** The runtime's pods in unfiltered lists, by the kubelet's labels. Pure. */
export function runtimePodsOf(
  sandboxes: readonly cri.PodSandbox[],
  containers: readonly cri.Container[],
): readonly RuntimePod[] {
  return Object.freeze(
    [...groupByPod(sandboxes, containers)].map(([uid, l]): RuntimePod => {
      const labels = (l.sandboxes[0] ?? l.containers[0]).labels;
      return Object.freeze({ uid, name: labels[PodNameLabel] ?? '', namespace: labels[PodNamespaceLabel] ?? '', ...l });
    }),
  );
}
