/**
 * The status patch the Go kubelet sends (statusutil.PatchPodStatus → strategicpatch
 * CreateTwoWayMergePatch between the status the apiserver has and the new one), pure:
 * - fields gone from the new status are sent as null, so nothing stale survives (a `reason`
 *   left on a condition that turned True, a field the kubelet no longer reports);
 * - lists with a patchMergeKey (conditions by type, podIPs / hostIPs / addresses by ip or
 *   type) send only new or changed items (the key plus what changed), `{"$patch":"delete"}` for
 *   items that went away (a dead sandbox's IP), and `$setElementOrder/<list>` with the new order;
 * - other lists (containerStatuses, images…) are atomic: sent whole when they differ.
 * `mergePodStatus` first keeps the conditions other writers own (readiness gates, DisruptionTarget)
 * and the start time the apiserver has, and holds back a terminal phase while containers could
 * run, as upstream's status manager does.
 */
import { isTerminalPhase, type PodCondition, type PodStatus } from '../../api/types.js';
import { deepEqual } from '../../lib/deep-equal.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** patchMergeKey of the status lists of Pod and Node (k8s.io/api struct tags). */
export const STATUS_MERGE_KEYS: Record<string, string> = {
  conditions: 'type',
  podIPs: 'ip',
  hostIPs: 'ip',
  addresses: 'type',
  resourceClaimStatuses: 'name',
};

function listPatch(key: string, oldList: unknown[], newList: unknown[]): unknown[] {
  const out: unknown[] = [];
  const oldBy = new Map(oldList.filter(isObj).map((o) => [o[key], o]));
  const newKeys = new Set(newList.filter(isObj).map((o) => o[key]));
  for (const n of newList) {
    if (!isObj(n)) continue;
    const o = oldBy.get(n[key]);
    if (!o) {
      out.push(n);
      continue;
    }
    const d = twoWayMergePatch(o, n);
    if (Object.keys(d).length) out.push({ [key]: n[key], ...d });
  }
  for (const o of oldList) if (isObj(o) && !newKeys.has(o[key])) out.push({ [key]: o[key], $patch: 'delete' });
  return out;
}

/** The strategic-merge patch that turns `oldObj` into `newObj` ({} when they are equal). */
export function twoWayMergePatch(oldObj: Obj, newObj: Obj, mergeKeys: Record<string, string> = STATUS_MERGE_KEYS): Obj {
  const patch: Obj = {};
  // null and absent are the same (a Go field that is nil or zero): neither side's null alone makes a patch.
  for (const k of Object.keys(oldObj)) if (!(k in newObj) && oldObj[k] != null) patch[k] = null;
  for (const [k, nv] of Object.entries(newObj)) {
    if (nv == null) {
      if (oldObj[k] != null) patch[k] = null;
      continue;
    }
    const ov = oldObj[k];
    if (deepEqual(ov, nv)) continue;
    const key = mergeKeys[k];
    if (key && Array.isArray(nv)) {
      const items = listPatch(key, Array.isArray(ov) ? ov : [], nv);
      if (
        items.length ||
        !deepEqual(
          (Array.isArray(ov) ? ov : []).map((x) => (x as Obj)[key]),
          nv.map((x) => (x as Obj)[key]),
        )
      ) {
        patch[`$setElementOrder/${k}`] = nv.map((x) => ({ [key]: (x as Obj)[key] }));
        if (items.length) patch[k] = items;
      }
    } else if (isObj(nv) && isObj(ov)) {
      const d = twoWayMergePatch(ov, nv, {});
      if (Object.keys(d).length) patch[k] = d;
    } else patch[k] = nv;
  }
  return patch;
}

/**
 * The pod condition types the kubelet owns (upstream PodConditionsByKubelet + PodReadyToStartContainers, the resize and
 * restart-all ones).
 */
export const KUBELET_CONDITIONS = new Set([
  'PodScheduled',
  'Ready',
  'Initialized',
  'ContainersReady',
  'PodReadyToStartContainers',
  'PodResizePending',
  'PodResizeInProgress',
  'AllContainersRestarting',
]);

/**
 * Upstream mergePodStatus: the kubelet's status, keeping the conditions others own from the API's.
 * A pod is not reported Succeeded or Failed while its containers could still run (its worker has
 * not stopped them: `couldHaveRunningContainers`): until then the API's phase, reason and message
 * stay, and a new DisruptionTarget condition waits with the phase.
 */
export function mergePodStatus(
  apiStatus: PodStatus | undefined,
  kubelet: PodStatus,
  couldHaveRunningContainers = false,
): PodStatus {
  const held = couldHaveRunningContainers && isTerminalPhase(kubelet.phase) && !isTerminalPhase(apiStatus?.phase);
  const others = (apiStatus?.conditions ?? []).filter((c) => !KUBELET_CONDITIONS.has(c.type));
  const mine = (kubelet.conditions ?? []).filter(
    (c) =>
      KUBELET_CONDITIONS.has(c.type) ||
      (!others.some((o) => o.type === c.type) && !(held && c.type === 'DisruptionTarget')),
  );
  const conditions: PodCondition[] = [...others, ...mine];
  const out: PodStatus = { ...kubelet, ...(conditions.length ? { conditions } : {}) };
  // Once the apiserver has a start time it stays (upstream's status manager never changes it).
  if (apiStatus?.startTime) out.startTime = apiStatus.startTime;
  // Not the kubelet's: the resource claim controller's and the scheduler's (upstream mergePodStatus).
  const claims = apiStatus as { resourceClaimStatuses?: unknown; extendedResourceClaimStatus?: unknown } | undefined;
  const carried = out as typeof claims & PodStatus;
  delete carried.resourceClaimStatuses;
  delete carried.extendedResourceClaimStatus;
  if (claims?.resourceClaimStatuses) carried.resourceClaimStatuses = claims.resourceClaimStatuses;
  if (claims?.extendedResourceClaimStatus) carried.extendedResourceClaimStatus = claims.extendedResourceClaimStatus;
  if (held) {
    out.phase = apiStatus?.phase ?? 'Pending';
    out.reason = apiStatus?.reason;
    out.message = apiStatus?.message;
  }
  return out;
}
