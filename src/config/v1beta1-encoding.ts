/**
 * The configuration as Go encodes a v1beta1 KubeletConfiguration (/configz): a field tagged `omitempty` that is not
 * a pointer or a struct is left out at its zero value (false, 0, "", an empty list or map), as upstream's
 * encoding/json leaves it; a pointer field (`failSwapOn`, `seccompDefault`, …) and a struct (`authentication`,
 * `memorySwap`, durations) are written whatever their value. The upstream e2e harness writes what /configz served
 * back as the kubelet's config file, so the view is also what the next start reads.
 */

/** The top-level fields of v1beta1 that are `omitempty` and neither pointers nor structs (types.go). */
const OMITTED_WHEN_ZERO: ReadonlySet<string> = new Set([
  'staticPodPath',
  'podLogsDir',
  'staticPodURL',
  'staticPodURLHeader',
  'address',
  'port',
  'readOnlyPort',
  'tlsCertFile',
  'tlsPrivateKeyFile',
  'tlsCipherSuites',
  'tlsCurvePreferences',
  'tlsMinVersion',
  'rotateCertificates',
  'serverTLSBootstrap',
  'registryBurst',
  'imagePullCredentialsVerificationPolicy',
  'preloadedImagesVerificationAllowlist',
  'eventBurst',
  'enableContentionProfiling',
  'healthzBindAddress',
  'clusterDomain',
  'clusterDNS',
  'nodeLeaseDurationSeconds',
  'kubeletCgroups',
  'systemCgroups',
  'cgroupRoot',
  'cgroupDriver',
  'cpuManagerPolicy',
  'cpuManagerPolicyOptions',
  'memoryManagerPolicy',
  'topologyManagerPolicy',
  'topologyManagerScope',
  'topologyManagerPolicyOptions',
  'qosReserved',
  'hairpinMode',
  'maxPods',
  'podCIDR',
  'runOnce',
  'maxOpenFiles',
  'contentType',
  'kubeAPIBurst',
  'evictionHard',
  'evictionSoft',
  'evictionSoftGracePeriod',
  'evictionMaxPodGracePeriod',
  'evictionMinimumReclaim',
  'podsPerCore',
  'protectKernelDefaults',
  'featureGates',
  'containerLogMaxSize',
  'configMapAndSecretChangeDetectionStrategy',
  'systemReserved',
  'kubeReserved',
  'reservedSystemCPUs',
  'showHiddenMetricsForVersion',
  'systemReservedCgroup',
  'kubeReservedCgroup',
  'enforceNodeAllocatable',
  'allowedUnsafeSysctls',
  'volumePluginDir',
  'providerID',
  'kernelMemcgNotification',
  'shutdownGracePeriodByPodPriority',
  'reservedMemory',
  'memoryReservationPolicy',
  'registerWithTaints',
  'imageServiceEndpoint',
]);

/** The same inside the structs: `authentication.x509.clientCAFile`, `authorization.mode`, `memorySwap.swapBehavior`. */
const NESTED_OMITTED_WHEN_ZERO: readonly (readonly string[])[] = [
  ['authentication', 'x509', 'clientCAFile'],
  ['authorization', 'mode'],
  ['memorySwap', 'swapBehavior'],
];

/** Go's zero values of what JSON can hold (a nil pointer is left out whatever its tag). Pure. */
function isZero(value: unknown): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === 'object' && Object.keys(value).length === 0;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `record` without the field at `path` when it is zero, copied along the path. Pure. */
function omitZeroAt(record: Record<string, unknown>, [name, ...rest]: readonly string[]): Record<string, unknown> {
  if (name === undefined || !(name in record)) return record;
  if (rest.length > 0) {
    const child = record[name];
    return isRecord(child) ? { ...record, [name]: omitZeroAt(child, rest) } : record;
  }
  if (!isZero(record[name])) return record;
  const { [name]: _omitted, ...kept } = record;
  return kept;
}

/** `config` as upstream encodes a v1beta1 KubeletConfiguration. Pure: `config` is not changed. */
export function v1beta1Encoding(config: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (value === undefined || value === null) continue;
    if (OMITTED_WHEN_ZERO.has(key) && isZero(value)) continue;
    out[key] = value;
  }
  for (const path of NESTED_OMITTED_WHEN_ZERO) out = omitZeroAt(out, path);
  return out;
}
