/**
 * The event recorder (upstream record.EventBroadcaster as the kubelet configures it): core/v1
 * Events from source component "kubelet" on this host. `record` never blocks and never throws.
 * A repeat of the same event (object, type, reason, message) PATCHes the existing Event's count
 * and lastTimestamp instead of creating a new one (the correlator's dedup); writes are rate limited
 * by a token bucket (eventRecordQPS / eventBurst; 0 QPS = unlimited, as upstream); events over
 * the limit are dropped with a debug log. Without an apiserver the events are only logged.
 */
import { randomBytes } from 'node:crypto';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { KubeClient } from '../../lib/kube-client.js';
import { messageOf } from '../../lib/errors.js';
import { rfc3339 } from '../../lib/time.js';
import { TokenBucket } from '../../lib/token-bucket.js';

/** What an event is about (core/v1 ObjectReference). */
export interface ObjectRef {
  kind: string;
  apiVersion?: string;
  namespace?: string;
  name: string;
  uid?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

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

const MAX_DEDUP = 4096;

/** The recorder. */
export class EventRecorder implements EventSink {
  private readonly limiter: TokenBucket;
  private readonly seen = new Map<string, { name: string; namespace: string; count: number }>();
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly deps: EventRecorderDeps) {
    this.limiter = new TokenBucket(deps.qps, deps.burst, () => deps.clock.monotonic());
  }

  record(
    ref: ObjectRef,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    annotations?: Record<string, string>,
  ): void {
    this.deps.logger.debug(
      { object: `${ref.kind}/${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`, type, reason },
      message,
    );
    const client = this.deps.client;
    if (!client) return;
    if (!this.limiter.tryTake()) {
      this.deps.logger.debug({ reason }, 'event dropped by the rate limiter');
      return;
    }
    const key = [ref.kind, ref.namespace, ref.name, ref.uid, ref.fieldPath, type, reason, message].join('\u0000');
    const namespace = ref.namespace || 'default';
    const now = rfc3339(this.deps.clock.now());
    this.chain = this.chain.then(async () => {
      try {
        const prev = this.seen.get(key);
        if (prev) {
          const r = await client.request({
            method: 'PATCH',
            path: `/api/v1/namespaces/${prev.namespace}/events/${prev.name}`,
            contentType: 'application/strategic-merge-patch+json',
            body: { count: prev.count + 1, lastTimestamp: now },
          });
          if (r.status === 200) {
            prev.count++;
            return;
          }
          this.seen.delete(key);
        }
        const name = `${ref.name}.${randomBytes(8).toString('hex')}`;
        const r = await client.request({
          method: 'POST',
          path: `/api/v1/namespaces/${namespace}/events`,
          body: {
            apiVersion: 'v1',
            kind: 'Event',
            metadata: { name, namespace, ...(annotations ? { annotations } : {}) },
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
          },
        });
        if (r.status !== 201) {
          this.deps.logger.debug({ status: r.status, reason }, 'event not accepted');
          return;
        }
        if (this.seen.size >= MAX_DEDUP) this.seen.delete(this.seen.keys().next().value!);
        this.seen.set(key, { name, namespace, count: 1 });
      } catch (err) {
        this.deps.logger.debug({ err: messageOf(err), reason }, 'event not sent');
      }
    });
  }

  /** Resolves when every queued write is done (tests, shutdown). */
  flush(): Promise<void> {
    return this.chain;
  }
}

/** The reference to a node, as the kubelet makes it (the node name doubles as UID). */
export function nodeRef(nodeName: string): ObjectRef {
  return { kind: 'Node', name: nodeName, uid: nodeName };
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
