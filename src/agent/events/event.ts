/** The core/v1 Event the kubelet writes, and the reference to what it is about. */

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

/** A core/v1 Event as the kubelet writes it. */
export interface CoreEvent {
  metadata: { name: string; namespace: string; resourceVersion?: string; annotations?: Record<string, string> };
  involvedObject: ObjectRef;
  reason: string;
  message: string;
  type: string;
  source: { component: string; host: string };
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  reportingComponent?: string;
  reportingInstance?: string;
}
