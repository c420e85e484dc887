/**
 * The CDI annotations a container gets for a claim's devices (upstream cm/dra/cdi, copied there
 * from the CDI library): for runtimes that read CDI device names from annotations rather than
 * CRI's CDI_devices field, `cdi.k8s.io/<driver>_<claim UID>` = the devices, comma-separated.
 * A driver name and claim UID that make no annotation name, or a device that is not a qualified
 * CDI name (`vendor/class=name`), is an error with upstream's message: the claim's preparation
 * fails, as upstream's does. Pure.
 */

const MAX_NAME_LENGTH = 63;
const ANNOTATION_PREFIX = 'cdi.k8s.io/';

const isLetter = (c: string) => /^[A-Za-z]$/.test(c);
const isAlphaNumeric = (c: string) => /^[A-Za-z0-9]$/.test(c);
/** Go's %q for the names here (printable ASCII). */
const quoted = (s: string) => JSON.stringify(s);

/** The annotation key of the driver's devices of a claim (upstream annotationKey). */
function annotationKey(driver: string, claimUid: string): string {
  if (!driver) throw new Error('invalid plugin name, empty');
  if (!claimUid) throw new Error('invalid deviceID, empty');
  const name = `${driver}_${claimUid.replaceAll('/', '_')}`;
  if (name.length > MAX_NAME_LENGTH) throw new Error(`invalid plugin+deviceID ${quoted(name)}, too long`);
  if (!isAlphaNumeric(name[0]))
    throw new Error(`invalid name ${quoted(name)}, first '${name[0]}' should be alphanumeric`);
  if (name.length > 2)
    for (const c of name.slice(1, -1))
      // Upstream's message, its spelling included.
      if (!isAlphaNumeric(c) && !'_-.'.includes(c))
        throw new Error(`invalid name ${quoted(name)}, invalid charcter '${c}'`);
  const last = name[name.length - 1];
  if (!isAlphaNumeric(last)) throw new Error(`invalid name ${quoted(name)}, last '${last}' should be alphanumeric`);
  return ANNOTATION_PREFIX + name;
}

/** Checks one part of a qualified device name: first character, middle characters, last character. */
function checkPart(
  value: string,
  first: (c: string) => boolean,
  middle: string,
  messages: { empty: string; first: string; middle: (c: string) => string; last: string },
): void {
  if (!value) throw new Error(messages.empty);
  if (!first(value[0])) throw new Error(messages.first);
  if (value.length === 1) return;
  for (const c of value.slice(1, -1))
    if (!isAlphaNumeric(c) && !middle.includes(c)) throw new Error(messages.middle(c));
  if (!isAlphaNumeric(value[value.length - 1])) throw new Error(messages.last);
}

/** Checks that `device` is a qualified CDI device name, `vendor/class=name` (upstream parseQualifiedName). */
function checkQualifiedName(device: string): void {
  const unqualified = (what: string) => new Error(`unqualified device ${quoted(device)}, missing ${what}`);
  const equals = device.startsWith('/') ? -1 : device.indexOf('=');
  const kind = equals > 0 ? device.slice(0, equals) : '';
  const name = equals > 0 ? device.slice(equals + 1) : '';
  const slash = kind.indexOf('/');
  const vendor = slash > 0 && slash < kind.length - 1 ? kind.slice(0, slash) : '';
  const klass = vendor ? kind.slice(slash + 1) : '';
  if (!vendor || !name) throw unqualified('vendor');
  if (!klass) throw unqualified('class');
  const invalid = (err: unknown) => new Error(`invalid device ${quoted(device)}: ${(err as Error).message}`);
  try {
    checkPart(vendor, isLetter, '_-.', {
      empty: 'invalid (empty) vendor name',
      first: `invalid vendor ${quoted(vendor)}, should start with letter`,
      middle: (c) => `invalid character '${c}' in vendor name ${quoted(vendor)}`,
      last: `invalid vendor ${quoted(vendor)}, should end with a letter or digit`,
    });
    checkPart(klass, isLetter, '_-', {
      empty: 'invalid (empty) device class',
      first: `invalid class ${quoted(klass)}, should start with letter`,
      middle: (c) => `invalid character '${c}' in device class ${quoted(klass)}`,
      last: `invalid class ${quoted(klass)}, should end with a letter or digit`,
    });
    checkPart(name, isAlphaNumeric, '_-.:', {
      empty: 'invalid (empty) device name',
      first: `invalid class ${quoted(name)}, should start with a letter or digit`,
      middle: (c) => `invalid character '${c}' in device name ${quoted(name)}`,
      last: `invalid name ${quoted(name)}, should end with a letter or digit`,
    });
  } catch (err) {
    throw invalid(err);
  }
}

/**
 * The annotation for `devices` of `driver` prepared for the claim `claimUid` (upstream
 * GenerateAnnotations): undefined without devices; throws with upstream's message when the
 * annotation cannot be made.
 */
export function cdiAnnotation(
  driver: string,
  claimUid: string,
  devices: readonly string[],
): { key: string; value: string } | undefined {
  if (!devices.length) return undefined;
  try {
    const key = annotationKey(driver, claimUid);
    devices.forEach(checkQualifiedName);
    return { key, value: devices.join(',') };
  } catch (err) {
    throw new Error(`can't generate CDI annotations: ${(err as Error).message}`, { cause: err });
  }
}
