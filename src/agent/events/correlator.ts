/**
 * Upstream's event correlator (client-go tools/record/events_cache.go), which every Event the kubelet writes passes
 * through, in its order:
 * - aggregation: an object's events of one type and reason with 10 different messages within 10 minutes become one
 *   Event, `(combined from similar events): <message>`, counted up by the ones that follow;
 * - de-duplication: a repeat of an event (same object, type, reason and message) raises the count of its Event and
 *   sets its last timestamp and message (a strategic-merge patch) instead of making another;
 * - the spam filter: 25 events per object, then one every 5 minutes; what it holds back is not written, though it
 *   is counted, so the next Event written for it shows every occurrence.
 */
import type { Clock } from '../../lib/clock.js';
import { rfc3339 } from '../../lib/time.js';
import { TokenBucket } from '../../lib/token-bucket.js';
import { TtlCache } from '../../lib/ttl-cache.js';
import type { CoreEvent } from './event.js';

/** What to write for an event: the Event, and the patch of the existing one when it is a repeat. */
export interface Correlated {
  event: CoreEvent;
  patch?: { count: number; lastTimestamp: string; message: string };
}

/** Upstream's figures (events_cache.go). */
export const CORRELATOR_CACHE_ENTRIES = 4096;
export const AGGREGATE_MAX_EVENTS = 10;
export const AGGREGATE_INTERVAL_MS = 600_000;
export const SPAM_BURST = 25;
export const SPAM_QPS = 1 / 300;
export const COMBINED_PREFIX = '(combined from similar events): ';

const NEVER = Number.POSITIVE_INFINITY;

const join = (parts: (string | undefined)[]) => parts.map((p) => p ?? '').join('\u0000');

/** The object an event is about, as the spam filter keys it (source and object). Pure. */
function objectKey(e: CoreEvent): string {
  const o = e.involvedObject;
  return join([e.source.component, e.source.host, o.kind, o.namespace, o.name, o.uid, o.apiVersion]);
}

/** The key of an event's occurrences (upstream getEventKey): the object, its field, type, reason and message. Pure. */
export function eventKey(e: CoreEvent): string {
  const o = e.involvedObject;
  return join([
    e.source.component,
    e.source.host,
    o.kind,
    o.namespace,
    o.name,
    o.fieldPath,
    o.uid,
    o.apiVersion,
    e.type,
    e.reason,
    e.message,
  ]);
}

/** The key of an event's similar events (upstream EventAggregatorByReasonFunc): all but the message. Pure. */
function aggregateKey(e: CoreEvent): string {
  return join([objectKey(e), e.type, e.reason, e.reportingComponent, e.reportingInstance]);
}

interface Observation {
  count: number;
  firstTimestamp: string;
  name: string;
  resourceVersion?: string;
}

export class EventCorrelator {
  private readonly similar: TtlCache<{ messages: Set<string>; lastMs: number }>;
  private readonly observed: TtlCache<Observation>;
  private readonly spam: TtlCache<TokenBucket>;

  /** `nameOf`: a new Event's name for an object (upstream: `<object>.<hex nanoseconds>`). */
  constructor(private readonly o: { clock: Clock; nameOf: (objectName: string) => string }) {
    const cache = { maxEntries: CORRELATOR_CACHE_ENTRIES, clock: o.clock };
    this.similar = new TtlCache(cache);
    this.observed = new TtlCache(cache);
    this.spam = new TtlCache(cache);
  }

  /** What to write for `event`, or undefined when the spam filter holds it back. */
  correlate(event: CoreEvent): Correlated | undefined {
    const { event: aggregated, key } = this.aggregate(event);
    const correlated = this.observe(aggregated, key);
    return this.allowed(correlated.event) ? correlated : undefined;
  }

  /** Takes in what the apiserver answered for a written Event (its resourceVersion, its name). */
  updateState(written: CoreEvent): void {
    this.observed.set(
      eventKey(written),
      {
        count: written.count,
        firstTimestamp: written.firstTimestamp,
        name: written.metadata.name,
        resourceVersion: written.metadata.resourceVersion,
      },
      NEVER,
    );
  }

  /** Upstream EventAggregate: the event, or once it has 10 similar ones in 10 minutes their combined Event. */
  private aggregate(event: CoreEvent): { event: CoreEvent; key: string } {
    const now = this.o.clock.monotonic();
    const key = aggregateKey(event);
    let record = this.similar.get(key);
    if (!record || now - record.lastMs > AGGREGATE_INTERVAL_MS) record = { messages: new Set(), lastMs: now };
    record.messages.add(event.message);
    record.lastMs = now;
    this.similar.set(key, record, NEVER);
    if (record.messages.size < AGGREGATE_MAX_EVENTS) return { event, key: eventKey(event) };
    // The set is kept below its bound by letting any one message go, as upstream's PopAny.
    record.messages.delete(record.messages.values().next().value!);
    // Stamped when combined, as upstream's (its clock's now), not when the last of them was recorded.
    const at = rfc3339(this.o.clock.now());
    return {
      event: {
        metadata: { name: this.o.nameOf(event.involvedObject.name), namespace: event.metadata.namespace },
        involvedObject: event.involvedObject,
        reason: event.reason,
        message: COMBINED_PREFIX + event.message,
        type: event.type,
        source: event.source,
        firstTimestamp: at,
        lastTimestamp: at,
        count: 1,
      },
      key,
    };
  }

  /** Upstream eventObserve: a repeat of what `key` has seen becomes a patch of its Event, counted. */
  private observe(event: CoreEvent, key: string): Correlated {
    const last = this.observed.get(key);
    let correlated: Correlated = { event };
    if (last && last.count > 0) {
      const repeat: CoreEvent = {
        ...event,
        metadata: { ...event.metadata, name: last.name, resourceVersion: last.resourceVersion },
        firstTimestamp: last.firstTimestamp,
        count: last.count + 1,
      };
      correlated = {
        event: repeat,
        patch: { count: repeat.count, lastTimestamp: repeat.lastTimestamp, message: repeat.message },
      };
    }
    const e = correlated.event;
    this.observed.set(
      key,
      {
        count: e.count,
        firstTimestamp: e.firstTimestamp,
        name: e.metadata.name,
        resourceVersion: e.metadata.resourceVersion,
      },
      NEVER,
    );
    return correlated;
  }

  /** Upstream's spam filter: whether the object has a token left (25, refilled one every 5 minutes). */
  private allowed(event: CoreEvent): boolean {
    const key = objectKey(event);
    const bucket = this.spam.get(key) ?? new TokenBucket(SPAM_QPS, SPAM_BURST, () => this.o.clock.monotonic());
    this.spam.set(key, bucket, NEVER);
    return bucket.tryTake();
  }
}
