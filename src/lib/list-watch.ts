/**
 * A reflector (client-go's ListWatch + Reflector, the parts a kubelet needs): keeps an up-to-date
 * copy of a collection and hands out a snapshot after every change.
 *
 *   list ──► snapshot ──► watch from RV ──► event ──► snapshot ──┐
 *     ▲                     ▲    │ stream ended / watchdog        │
 *     │ 410 Gone            └────┴────────────────────────────────┘
 *     └── (relist)          network error → backoff, re-watch from the last RV
 *
 * BOOKMARK events move the RV without a snapshot. The watchdog restarts a watch that delivers
 * nothing (no event, no bookmark) for `watchdogMs` — a silently stalled connection.
 */
import type { Clock } from './clock.js';
import { sleep } from './clock.js';
import type { Logger } from './logger.js';
import { messageOf } from './errors.js';
import { apiError, WatchHttpError, type KubeClient, type WatchEvent } from './kube-client.js';

/** The metadata the reflector reads. */
export interface Listed {
  metadata: { name?: string; namespace?: string; resourceVersion?: string };
}

/** What the reflector needs. */
export interface ListWatchDeps {
  client: KubeClient;
  /** Collection path, e.g. /api/v1/pods. */
  path: string;
  fieldSelector?: string;
  clock: Clock;
  logger: Logger;
  /** Restart a watch that is silent this long (default 5 min; the server sends bookmarks). */
  watchdogMs?: number;
  /**
   * The shortest server-side timeout of a watch, in seconds; each watch asks between it and twice it (client-go's
   * MinWatchTimeout, default 5 min).
   */
  minWatchTimeoutSeconds?: number;
  /** Backoff after failures: initial → ×2 → max (default 800 ms → 30 s, as client-go). */
  backoff?: { initialMs: number; maxMs: number };
  /** Told of each failed list or watch (before its backoff). */
  onFailure?(): void;
  /** The jitter's random source (Math.random when absent). */
  random?: () => number;
}

const keyOf = (o: Listed) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/** Items per page of a list (client-go's pager default). */
export const LIST_PAGE_SIZE = 500;

/** `delayMs` with up to as much again of jitter, for `random` in [0, 1) (wait.Jitter with factor 1.0). Pure. */
export function jittered(delayMs: number, random: number): number {
  return delayMs * (1 + random);
}

/** A running reflector over one collection. */
export class ListWatch<T extends Listed> {
  private readonly items = new Map<string, T>();
  private rv = '';
  /** How many lists were made (for tests and metrics). */
  lists = 0;
  /** How many watches were opened. */
  watches = 0;

  constructor(private readonly deps: ListWatchDeps) {}

  private random(): number {
    return (this.deps.random ?? Math.random)();
  }

  /** Runs until `signal` aborts; `onSnapshot` gets every item after each change. Never throws. */
  start({ signal, onSnapshot }: { signal: AbortSignal; onSnapshot: (items: T[]) => void }): void {
    void this.run(signal, onSnapshot);
  }

  /**
   * Lists the collection in pages of LIST_PAGE_SIZE, as client-go's reflector (its pager): a large
   * cluster's answer comes in parts instead of one response of everything. A continue token that
   * expired (410) starts the list over.
   */
  private async list(signal: AbortSignal): Promise<void> {
    const items: T[] = [];
    let token: string | undefined;
    let rv = '';
    do {
      const r = await this.deps.client.request<{
        metadata?: { resourceVersion?: string; continue?: string };
        items?: T[];
        message?: string;
      }>({
        path: this.deps.path,
        query: { fieldSelector: this.deps.fieldSelector, limit: LIST_PAGE_SIZE, continue: token },
        signal,
      });
      if (r.status === 410 && token) {
        items.length = 0;
        token = undefined;
        continue;
      }
      if (r.status !== 200 || !r.body) throw apiError(`list ${this.deps.path}`, r);
      items.push(...(r.body.items ?? []));
      rv = r.body.metadata?.resourceVersion ?? '';
      token = r.body.metadata?.continue || undefined;
    } while (token);
    this.lists++;
    this.items.clear();
    for (const it of items) this.items.set(keyOf(it), it);
    this.rv = rv;
  }

  /** One watch until the stream ends; returns 'relist' on 410 Gone. */
  private async watch(signal: AbortSignal, emit: () => void): Promise<'rewatch' | 'relist'> {
    const ctl = new AbortController();
    const onAbort = () => ctl.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const watchdogMs = this.deps.watchdogMs ?? 300_000;
    const minTimeout = this.deps.minWatchTimeoutSeconds ?? 300;
    let cancelDog = this.deps.clock.setTimer(() => ctl.abort(), watchdogMs);
    const pet = () => {
      cancelDog();
      cancelDog = this.deps.clock.setTimer(() => {
        this.deps.logger.warn({ path: this.deps.path }, `watch delivered nothing for ${watchdogMs}ms; restarting it`);
        ctl.abort();
      }, watchdogMs);
    };
    let gone = false;
    this.watches++;
    try {
      await this.deps.client.watch<T & { code?: number; message?: string }>(
        {
          path: this.deps.path,
          signal: ctl.signal,
          query: {
            fieldSelector: this.deps.fieldSelector,
            resourceVersion: this.rv,
            allowWatchBookmarks: true,
            timeoutSeconds: minTimeout + Math.floor(this.random() * minTimeout),
          },
        },
        (e: WatchEvent<T & { code?: number; message?: string }>) => {
          pet();
          if (e.type === 'ERROR') {
            if (e.object.code === 410) gone = true;
            else this.deps.logger.warn({ path: this.deps.path, message: e.object.message }, 'watch error event');
            ctl.abort();
            return;
          }
          if (e.object.metadata?.resourceVersion) this.rv = e.object.metadata.resourceVersion;
          if (e.type === 'BOOKMARK') return;
          if (e.type === 'DELETED') this.items.delete(keyOf(e.object));
          else this.items.set(keyOf(e.object), e.object);
          emit();
        },
      );
    } catch (err) {
      if (err instanceof WatchHttpError && err.status === 410) return 'relist';
      if (!ctl.signal.aborted || signal.aborted) throw err;
    } finally {
      cancelDog();
      signal.removeEventListener('abort', onAbort);
    }
    return gone ? 'relist' : 'rewatch';
  }

  private async run(signal: AbortSignal, onSnapshot: (items: T[]) => void): Promise<void> {
    const { initialMs, maxMs } = this.deps.backoff ?? { initialMs: 800, maxMs: 30_000 };
    let delay = initialMs;
    let needList = true;
    const emit = () => onSnapshot([...this.items.values()]);
    while (!signal.aborted) {
      try {
        if (needList) {
          await this.list(signal);
          needList = false;
          emit();
        }
        const next = await this.watch(signal, emit);
        delay = initialMs;
        if (next === 'relist') {
          this.deps.logger.info({ path: this.deps.path }, 'watch resource version expired (410 Gone); relisting');
          needList = true;
        }
      } catch (err) {
        if (signal.aborted) return;
        this.deps.logger.warn(
          { path: this.deps.path, err: messageOf(err), retryInMs: delay },
          'list/watch failed; retrying',
        );
        this.deps.onFailure?.();
        // Jittered as client-go's reflector backoff (factor 1.0): reflectors that failed together do not retry
        // together.
        await sleep(jittered(delay, this.random()), signal, this.deps.clock);
        delay = Math.min(delay * 2, maxMs);
      }
    }
  }
}
