/**
 * The `Watch` strategy's store (upstream's watch-based objectCache, the default): each object a registered pod names
 * is kept by its own list+watch (`fieldSelector=metadata.name=<name>` in its namespace, which the node authorizer
 * allows for the node's pods), so a read needs no request and a change is seen as it happens.
 *
 * - A read waits up to a second for the object's first list, then fails with upstream's message.
 * - An object marked immutable stops its watch: it cannot change again.
 * - A watch whose object was not read for `maxIdleMs` (upstream: five sync periods, at least a minute) is stopped,
 *   and started again by the next read: an object only an environment variable names is read at container starts.
 * - The last reference stopping its watch drops the object.
 *
 * Beyond upstream, a change to a watched object is told (`onChange`, with the pods naming it) so the kubelet syncs
 * those pods at once: a ConfigMap volume follows its ConfigMap within a moment instead of at the next sync period.
 */
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { KubeClient } from '../../lib/kube-client.js';
import { ListWatch } from '../../lib/list-watch.js';
import { fetchObject, type ManagedResource, type ObjectStore } from './object-manager.js';

/** How long a read waits for an object's first list (upstream: wait.PollImmediate(10ms, 1s, hasSynced)). */
export const SYNC_WAIT_MS = 1000;
/** Upstream's shortest idle time before an object's watch is stopped. */
const MIN_IDLE_MS = 60_000;
/** How often idle watches are looked for. */
const IDLE_SCAN_MS = 60_000;

type Watched = { metadata: { name?: string; namespace?: string; resourceVersion?: string }; immutable?: boolean };

/** One watched object. */
interface Item {
  namespace: string;
  name: string;
  /** Pod UID → how many times it registered the object. */
  references: Map<string, number>;
  /** The object as last listed or watched (null: it does not exist); unset until the first list after a start. */
  object?: Watched | null;
  immutable: boolean;
  lastAccessMs: number;
  /** The running watch's stop (unset: stopped). */
  watch?: AbortController;
  /** Told when the first list arrives. */
  waiters: (() => void)[];
}

/** Objects kept by watches. */
export class WatchingObjectStore implements ObjectStore {
  private readonly items = new Map<string, Item>();
  private stopped = false;
  private readonly maxIdleMs: number;

  constructor(
    private readonly deps: {
      client: KubeClient;
      resource: ManagedResource;
      clock: Clock;
      logger: Logger;
      /** Five sync periods, as upstream (at least a minute). */
      maxIdleMs: number;
      /** Told, with the UIDs of the pods naming it, when an object changes after its first list. */
      onChange?(podUids: string[]): void;
    },
  ) {
    this.maxIdleMs = Math.max(deps.maxIdleMs, MIN_IDLE_MS);
  }

  /** Stops idle watches every minute; stops every watch (and starts none) once `signal` aborts. */
  start(signal: AbortSignal): void {
    const scan = () => {
      if (signal.aborted) return;
      this.stopIdle();
      cancel = this.deps.clock.setTimer(scan, IDLE_SCAN_MS);
    };
    let cancel = this.deps.clock.setTimer(scan, IDLE_SCAN_MS);
    signal.addEventListener(
      'abort',
      () => {
        cancel();
        this.stopped = true;
        for (const item of this.items.values()) this.stopWatch(item);
      },
      { once: true },
    );
  }

  addReference(namespace: string, name: string, podUid: string): void {
    const key = `${namespace}/${name}`;
    let item = this.items.get(key);
    if (!item) {
      item = {
        namespace,
        name,
        references: new Map(),
        immutable: false,
        lastAccessMs: this.deps.clock.monotonic(),
        waiters: [],
      };
      this.items.set(key, item);
      this.startWatch(item);
    }
    item.references.set(podUid, (item.references.get(podUid) ?? 0) + 1);
  }

  deleteReference(namespace: string, name: string, podUid: string): void {
    const key = `${namespace}/${name}`;
    const item = this.items.get(key);
    if (!item) return;
    const count = (item.references.get(podUid) ?? 0) - 1;
    if (count > 0) item.references.set(podUid, count);
    else item.references.delete(podUid);
    if (item.references.size) return;
    this.stopWatch(item);
    this.items.delete(key);
  }

  async get<T>(namespace: string, name: string): Promise<T | null> {
    const item = this.items.get(`${namespace}/${name}`);
    // Not registered (a volume's secret named by its PersistentVolume, not by a pod): read as it is.
    if (!item) return fetchObject<T>(this.deps.client, this.deps.resource, namespace, name);
    item.lastAccessMs = this.deps.clock.monotonic();
    if (!item.watch && !item.immutable && !this.stopped) this.startWatch(item);
    if (item.object === undefined && !(await this.listed(item)))
      throw new Error(`failed to sync ${this.deps.resource} cache: timed out waiting for the condition`);
    const object = item.object!;
    if (object?.immutable) {
      item.immutable = true;
      this.stopWatch(item);
    }
    return object as T | null;
  }

  /** How many objects have a running watch (for tests and the node's figures). */
  get watching(): number {
    return [...this.items.values()].filter((item) => item.watch).length;
  }

  /** Whether the item's first list arrives within SYNC_WAIT_MS. */
  private listed(item: Item): Promise<boolean> {
    return new Promise((resolve) => {
      const done = () => {
        cancel();
        resolve(true);
      };
      const cancel = this.deps.clock.setTimer(() => {
        item.waiters = item.waiters.filter((waiter) => waiter !== done);
        resolve(false);
      }, SYNC_WAIT_MS);
      item.waiters.push(done);
    });
  }

  private startWatch(item: Item): void {
    if (this.stopped) return;
    const watch = new AbortController();
    item.watch = watch;
    let synced = false;
    new ListWatch<Watched>({
      client: this.deps.client,
      path: `/api/v1/namespaces/${encodeURIComponent(item.namespace)}/${this.deps.resource}`,
      fieldSelector: `metadata.name=${item.name}`,
      clock: this.deps.clock,
      logger: this.deps.logger,
      // As upstream's object reflectors: a watch per object is not worth re-making every few minutes.
      minWatchTimeoutSeconds: 1800,
    }).start({
      signal: watch.signal,
      onSnapshot: (objects) => {
        // A stopped watch's last delivery is not the item's any more.
        if (item.watch !== watch) return;
        const object = objects.find((o) => o.metadata.name === item.name) ?? null;
        const changed = synced && object?.metadata.resourceVersion !== item.object?.metadata.resourceVersion;
        item.object = object;
        synced = true;
        for (const waiter of item.waiters.splice(0)) waiter();
        if (changed) this.deps.onChange?.([...item.references.keys()]);
      },
    });
  }

  /** Stops the item's watch; unless immutable, its object is read afresh after the next start. */
  private stopWatch(item: Item): void {
    if (!item.watch) return;
    item.watch.abort();
    item.watch = undefined;
    if (!item.immutable) item.object = undefined;
  }

  private stopIdle(): void {
    const now = this.deps.clock.monotonic();
    for (const item of this.items.values()) {
      if (item.watch && item.object !== undefined && now > item.lastAccessMs + this.maxIdleMs) {
        this.deps.logger.debug(
          { object: `${item.namespace}/${item.name}`, maxIdleMs: this.maxIdleMs },
          'Not acquired for long time, Stopped watching for changes',
        );
        this.stopWatch(item);
      }
    }
  }
}
