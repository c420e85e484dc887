/**
 * Upstream's MachineInfo setter on the Node the apiserver has: capacity keeps what others put
 * there (an operator's `example.com/dongle`, advertised by PATCHing the Node's status, as the
 * "Advertise Extended Resources for a Node" task does) while the kubelet's own figures win for
 * what it measures, and allocatable follows capacity for those others' resources — the kubelet
 * reserves none of them; an extended resource gone from capacity leaves allocatable too. Pure.
 */
type Resources = Record<string, string>;

/** The capacity and allocatable to report, given the apiserver's (`api`) and the kubelet's own (`mine`). */
export function withAdvertisedResources(
  api: { capacity?: unknown },
  mine: { capacity?: unknown; allocatable?: unknown },
): { capacity: Resources; allocatable: Resources } {
  const capacity: Resources = {
    ...(api.capacity as Resources | undefined),
    ...(mine.capacity as Resources | undefined),
  };
  const allocatable: Resources = { ...(mine.allocatable as Resources | undefined) };
  for (const [k, v] of Object.entries(capacity)) if (!(k in allocatable)) allocatable[k] = v;
  return { capacity, allocatable };
}
