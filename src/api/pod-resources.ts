/**
 * A pod's requests and limits added up as upstream's resourcehelper.PodRequests and PodLimits do, for every resource
 * name: regular containers and sidecars (restartable init containers) together; each init container with the sidecars
 * started before it, the largest of those where it is more; then the pod-level resources (PodLevelResources) in place
 * of the sum for the names a pod may set (cpu, memory, huge pages); then the pod's overhead (to every request, to the
 * limits that are set and not zero). A sum keeps the format of its first term, as Go's Quantity.Add, and is spelled as
 * Go's Quantity.String(). Pure.
 */
import type { Container, Pod } from './types.js';
import { formatNanoUnits, nanoUnits, quantityFormat } from './quantity.js';

/** A resource list: resource name → quantity. */
export type ResourceList = Record<string, string>;

interface Amount {
  nano: bigint;
  format: 'BinarySI' | 'DecimalSI';
}

type Amounts = Map<string, Amount>;

const amountOf = (quantity: string): Amount | undefined => {
  const nano = nanoUnits(quantity);
  return nano === undefined ? undefined : { nano, format: quantityFormat(quantity) };
};

/** upstream addResourceList: each of `list`'s quantities added to `into`'s. */
function addInto(into: Amounts, list: ResourceList | Amounts | undefined): void {
  const entries =
    list instanceof Map ? [...list] : Object.entries(list ?? {}).map(([n, q]) => [n, amountOf(q)] as const);
  for (const [name, amount] of entries) {
    if (!amount) continue;
    const sum = into.get(name);
    into.set(name, sum ? { nano: sum.nano + amount.nano, format: sum.format } : { ...amount });
  }
}

/** upstream maxResourceList: each of `list`'s quantities in `into` where it is more. */
function maxInto(into: Amounts, list: Amounts): void {
  for (const [name, amount] of list) {
    const current = into.get(name);
    if (!current || amount.nano > current.nano) into.set(name, { ...amount });
  }
}

/** The names a pod may set at pod level (upstream IsSupportedPodLevelResource). */
const podLevelResource = (name: string) => name === 'cpu' || name === 'memory' || name.startsWith('hugepages-');

/** upstream AggregateContainerRequests / AggregateContainerLimits. */
function aggregate(pod: Pod, kind: 'requests' | 'limits'): Amounts {
  const of = (c: Container) => c.resources?.[kind];
  const total: Amounts = new Map();
  for (const c of pod.spec.containers) addInto(total, of(c));
  const sidecars: Amounts = new Map();
  const initMax: Amounts = new Map();
  for (const c of pod.spec.initContainers ?? []) {
    let amounts: Amounts;
    if (c.restartPolicy === 'Always') {
      addInto(total, of(c));
      addInto(sidecars, of(c));
      amounts = sidecars;
    } else {
      amounts = new Map();
      addInto(amounts, of(c));
      addInto(amounts, sidecars);
    }
    maxInto(initMax, amounts);
  }
  maxInto(total, initMax);
  return total;
}

const asList = (amounts: Amounts): ResourceList =>
  Object.fromEntries([...amounts].map(([name, a]) => [name, formatNanoUnits(a.nano, a.format)]));

/** The pod-level quantities of `kind` the pod sets, for the names it may set. */
function podLevel(pod: Pod, kind: 'requests' | 'limits'): Amounts {
  const list = (pod.spec as { resources?: Partial<Record<'requests' | 'limits', ResourceList>> }).resources?.[kind];
  const out: Amounts = new Map();
  for (const [name, quantity] of Object.entries(list ?? {})) {
    const amount = amountOf(quantity);
    if (amount && podLevelResource(name)) out.set(name, amount);
  }
  return out;
}

const overheadOf = (pod: Pod) => (pod.spec as { overhead?: ResourceList }).overhead;

/** upstream resourcehelper.PodRequests (with pod-level resources and overhead). */
export function podResourceRequests(pod: Pod): ResourceList {
  const requests = aggregate(pod, 'requests');
  for (const [name, amount] of podLevel(pod, 'requests')) requests.set(name, amount);
  addInto(requests, overheadOf(pod));
  return asList(requests);
}

/** upstream resourcehelper.PodLimits (with pod-level resources and overhead on the limits that are set). */
export function podResourceLimits(pod: Pod): ResourceList {
  const limits = aggregate(pod, 'limits');
  for (const [name, amount] of podLevel(pod, 'limits')) limits.set(name, amount);
  for (const [name, quantity] of Object.entries(overheadOf(pod) ?? {})) {
    const limit = limits.get(name);
    const overhead = amountOf(quantity);
    if (limit && limit.nano !== 0n && overhead)
      limits.set(name, { nano: limit.nano + overhead.nano, format: limit.format });
  }
  return asList(limits);
}
