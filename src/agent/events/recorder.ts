/**
 * The event recorder (upstream record.EventBroadcaster as the kubelet configures it): core/v1 Events from source
 * component "kubelet" on this host. `record` never blocks and never throws: the event joins a queue of at most 1,000
 * (beyond it, dropped with a log line, as upstream's), and one writer takes them in order through upstream's correlator
 * (correlator.ts: aggregation, de-duplication, the spam filter) to the apiserver, each request waiting its turn under
 * eventRecordQPS / eventBurst (0 QPS: no limit) as upstream's events client does. A write that does not reach the
 * apiserver is tried again after 0–10 s, then every 10 s, 12 tries in all; one the apiserver refuses is not. Without
 * an apiserver the events are only logged.
 */
import type { Clock } from '../../lib/clock.js';
import { sleep } from '../../lib/clock.js';
import { logV, type Logger } from '../../lib/logger.js';
import type { KubeClient } from '../../lib/kube-client.js';
import { messageOf } from '../../lib/errors.js';
import { rfc3339 } from '../../lib/time.js';
import { TokenBucket } from '../../lib/token-bucket.js';
import { EventCorrelator, type Correlated } from './correlator.js';
import type { CoreEvent, ObjectRef } from './event.js';

/** Records events. */
export interface EventSink {
  /** `annotations` go on the Event's metadata (upstream's AnnotatedEventf). */
  record(
    ref: ObjectRef,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    annotations?: Record<string, string>,
  ): void;
}

/** What the recorder needs. */
export interface EventRecorderDeps {
  client?: KubeClient;
  nodeName: string;
  clock: Clock;
  logger: Logger;
  qps: number;
  burst: number;
}

/** Upstream's figures (client-go tools/record/event.go). */
export const MAX_QUEUED_EVENTS = 1000;
export const MAX_TRIES_PER_EVENT = 12;
export const RETRY_SLEEP_MS = 10_000;

/** The recorder. */
export class EventRecorder implements EventSink {
  private readonly limiter: TokenBucket;
  private readonly correlator: EventCorrelator;
  private readonly queue: CoreEvent[] = [];
  private draining: Promise<void> | undefined;
  private lastNameNs = 0n;
  private readonly stopping = new AbortController();

  constructor(private readonly deps: EventRecorderDeps) {
    this.limiter = new TokenBucket(deps.qps, deps.burst, () => deps.clock.monotonic());
    this.correlator = new EventCorrelator({ clock: deps.clock, nameOf: (name) => this.newName(name) });
    if (deps.client) logV(deps.logger, 2, {}, 'Sending events to api server');
    else deps.logger.info('No api server defined - no events will be sent to API server');
  }

  record(
    ref: ObjectRef,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    annotations?: Record<string, string>,
  ): void {
    // Upstream's StartStructuredLogging(3): every event in the log at V(3).
    logV(
      this.deps.logger,
      3,
      {
        object: ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name,
        fieldPath: ref.fieldPath ?? '',
        kind: ref.kind,
        apiVersion: ref.apiVersion ?? '',
        type,
        reason,
        message,
      },
      'Event occurred',
    );
    if (!this.deps.client || this.stopping.signal.aborted) return;
    if (this.queue.length >= MAX_QUEUED_EVENTS) {
      this.deps.logger.warn({ reason, object: ref.name }, 'unable to record event: too many queued events, dropped');
      return;
    }
    this.queue.push(this.makeEvent(ref, type, reason, message, annotations));
    this.drain();
  }

  /** Resolves when every queued event is written or given up (tests). */
  async flush(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /** Writes what is queued within `timeoutMs`, then gives up the rest (shutdown). */
  async stop(timeoutMs: number): Promise<void> {
    // Real time, whatever the clock: how long the kubelet's exit may wait.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.flush(), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
    this.stopping.abort();
    this.queue.length = 0;
  }

  /** Upstream makeEvent: a new Event named `<object>.<hex nanoseconds>`, in the object's namespace or `default`. */
  private makeEvent(
    ref: ObjectRef,
    type: string,
    reason: string,
    message: string,
    annotations?: Record<string, string>,
  ): CoreEvent {
    const now = rfc3339(this.deps.clock.now());
    return {
      metadata: {
        name: this.newName(ref.name),
        namespace: ref.namespace || 'default',
        ...(annotations ? { annotations } : {}),
      },
      involvedObject: ref,
      reason,
      message,
      type,
      source: { component: 'kubelet', host: this.deps.nodeName },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      reportingComponent: 'kubelet',
      reportingInstance: this.deps.nodeName,
    };
  }

  /** `<object>.<hex nanoseconds>` from the clock, never the same twice. */
  private newName(objectName: string): string {
    let ns = BigInt(this.deps.clock.now()) * 1_000_000n;
    if (ns <= this.lastNameNs) ns = this.lastNameNs + 1n;
    this.lastNameNs = ns;
    return `${objectName}.${ns.toString(16)}`;
  }

  /** Starts the writer unless it runs. */
  private drain(): void {
    if (this.draining) return;
    this.draining = (async () => {
      for (let event = this.queue.shift(); event; event = this.queue.shift()) {
        const correlated = this.correlator.correlate(event);
        if (!correlated) {
          this.deps.logger.debug(
            { reason: event.reason, object: event.involvedObject.name },
            'event held back as spam',
          );
          continue;
        }
        await this.write(correlated);
      }
    })()
      .catch((err: unknown) => this.deps.logger.warn({ err: messageOf(err) }, 'writing events failed'))
      .finally(() => {
        this.draining = undefined;
        if (this.queue.length) this.drain();
      });
  }

  /** Writes one Event, trying again while the apiserver cannot be reached (upstream recordToSink). */
  private async write(correlated: Correlated): Promise<void> {
    for (let tries = 1; ; tries++) {
      try {
        const written = await this.send(correlated);
        if (written) this.correlator.updateState(written);
        return;
      } catch (err) {
        const given = tries >= MAX_TRIES_PER_EVENT || this.stopping.signal.aborted;
        this.deps.logger.debug(
          { reason: correlated.event.reason, err: messageOf(err) },
          given ? 'unable to write event (retry limit exceeded)' : 'unable to write event (may retry after sleeping)',
        );
        if (given) return;
        // The first wait is a random part of the period, so that nodes do not all come back at once.
        await sleep(
          tries === 1 ? Math.random() * RETRY_SLEEP_MS : RETRY_SLEEP_MS,
          this.stopping.signal,
          this.deps.clock,
        );
        if (this.stopping.signal.aborted) return;
      }
    }
  }

  /**
   * Sends an Event: a repeat as a strategic-merge patch of the existing one (made again when the apiserver has lost
   * it), a new one as a POST. The Event the apiserver holds, or undefined when it refused it (not tried again).
   */
  private async send({ event, patch }: Correlated): Promise<CoreEvent | undefined> {
    const client = this.deps.client!;
    const { namespace, name } = event.metadata;
    if (patch) {
      await this.turn();
      const r = await client.request<CoreEvent>({
        method: 'PATCH',
        path: `/api/v1/namespaces/${namespace}/events/${name}`,
        contentType: 'application/strategic-merge-patch+json',
        body: patch,
      });
      if (r.status === 200) return r.body;
      if (r.status !== 404) return this.refused(event, r.status);
    }
    await this.turn();
    const { resourceVersion: _unset, ...metadata } = event.metadata;
    const r = await client.request<CoreEvent>({
      method: 'POST',
      path: `/api/v1/namespaces/${namespace}/events`,
      body: { apiVersion: 'v1', kind: 'Event', ...event, metadata },
    });
    if (r.status === 201 || r.status === 200) return r.body;
    return this.refused(event, r.status);
  }

  private refused(event: CoreEvent, status: number): undefined {
    this.deps.logger.debug({ status, reason: event.reason }, 'event not accepted (will not retry)');
    return undefined;
  }

  /** Waits for the events client's next turn (eventRecordQPS / eventBurst). */
  private async turn(): Promise<void> {
    const waitMs = this.limiter.reserve();
    if (waitMs > 0) await sleep(waitMs, this.stopping.signal, this.deps.clock);
  }
}

/**
 * The reference to a node, as the kubelet makes it (the node name doubles as UID). With its apiVersion, as since v1.35
 * (kubernetes/kubernetes#134545): `kubectl events --for node/<name>` selects on it, and found none of them without.
 */
export function nodeRef(nodeName: string): ObjectRef {
  return { kind: 'Node', apiVersion: 'v1', name: nodeName, uid: nodeName };
}

/** The reference to a pod, or one of its containers (`spec.containers{name}`). */
export function podRef(
  pod: { metadata: { name?: string; namespace?: string; uid?: string; resourceVersion?: string } },
  container?: { name: string; init?: boolean },
): ObjectRef {
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    namespace: pod.metadata.namespace,
    name: pod.metadata.name!,
    uid: pod.metadata.uid,
    resourceVersion: pod.metadata.resourceVersion,
    ...(container ? { fieldPath: `spec.${container.init ? 'initContainers' : 'containers'}{${container.name}}` } : {}),
  };
}
