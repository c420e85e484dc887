/**
 * The CDI annotations a container gets for a claim's devices (upstream cm/dra/cdi, copied there
 * from the CDI library): for runtimes that read CDI device names from annotations rather than
 * CRI's CDI_devices field, `cdi.k8s.io/<driver>_<claim UID>` = the devices, comma-separated.
 * Undefined for a driver name and UID too long or badly formed for an annotation name (upstream
 * fails the claim's preparation there; the CRI field still carries the devices). Pure.
 */

const MAX_NAME_LENGTH = 63;
const ANNOTATION_PREFIX = 'cdi.k8s.io/';
const NAME = /^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$/;

/** The annotation for `devices` of `driver` prepared for the claim `claimUid`, or undefined. */
export function cdiAnnotation(
  driver: string,
  claimUid: string,
  devices: readonly string[],
): { key: string; value: string } | undefined {
  if (!driver || !claimUid || !devices.length) return undefined;
  const name = `${driver}_${claimUid.replaceAll('/', '_')}`;
  if (name.length > MAX_NAME_LENGTH || !NAME.test(name)) return undefined;
  return { key: `${ANNOTATION_PREFIX}${name}`, value: devices.join(',') };
}
