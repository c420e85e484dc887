/**
 * Upstream's locked feature gates as of v1.36: GA (or deprecated) gates whose value can no longer
 * be changed. Setting one to the other value stops the kubelet at start, as upstream's
 * featuregate.SetFromMap does, so a config that would not start a Go kubelet v1.36.2 does not start
 * tskubelet either. Read from upstream's pkg/features/kube_features.go at v1.36 (only gates still
 * registered there: a removed gate is an "unrecognized feature gate" upstream, which tskubelet
 * accepts with a warning). Pure.
 */

/**
 * Gate → the value it is locked to. Besides those, the gates locked in v1.34 and v1.35 whose removal upstream's
 * kube_features.go schedules after v1.36 (so still registered, and locked, in v1.36).
 */
export const LOCKED_FEATURE_GATES: ReadonlyMap<string, boolean> = new Map([
  ['AllowOverwriteTerminationGracePeriodSeconds', false],
  ['AuthorizeNodeWithSelectors', true],
  ['DisableAllocatorDualWrite', true],
  // Locked on in v1.36 (kubernetes/kubernetes#136673): the Node's kubeProxyVersion is never written.
  ['DisableNodeKubeProxyVersion', true],
  ['DRAAdminAccess', true],
  ['DynamicResourceAllocation', true],
  ['ExecProbeTimeout', true],
  // Locked off in v1.36 (kubernetes/kubernetes#136400): the gitRepo volume plugin cannot be turned back on.
  ['GitRepoVolumeDriver', false],
  ['ImageMaximumGCAge', true],
  ['InPlacePodVerticalScaling', true],
  ['JobManagedBy', true],
  ['JobPodReplacementPolicy', true],
  ['KubeletCgroupDriverFromCRI', true],
  ['KubeletTracing', true],
  ['LogarithmicScaleDown', true],
  ['MatchLabelKeysInPodAffinity', true],
  ['MemoryManager', true],
  ['MultiCIDRServiceAllocator', true],
  // GA and locked on in v1.36 (kubernetes/kubernetes#136230).
  ['MutableCSINodeAllocatableCount', true],
  ['NFTablesProxyMode', true],
  ['NodeInclusionPolicyInPodTopologySpread', true],
  ['NodeSwap', true],
  ['OrderedNamespaceDeletion', true],
  ['PodLifecycleSleepAction', true],
  ['PodLifecycleSleepActionAllowZero', true],
  ['PodObservedGenerationTracking', true],
  ['PreferSameTrafficDistribution', true],
  ['RecoverVolumeExpansionFailure', true],
  ['RelaxedDNSSearchValidation', true],
  ['RelaxedEnvironmentVariableValidation', true],
  ['SchedulerQueueingHints', true],
  ['SeparateTaintEvictionController', true],
  ['SupplementalGroupsPolicy', true],
  ['SystemdWatchdog', true],
  ['UserNamespacesSupport', true],
  ['VolumeAttributesClass', true],
  ['WinDSR', true],
  ['WinOverlay', true],
]);

/** Upstream's error for the first gate (in name order) set against its lock; undefined when none is. */
export function lockedGateError(gates: Readonly<Record<string, boolean>> | undefined): string | undefined {
  for (const name of Object.keys(gates ?? {}).sort()) {
    const locked = LOCKED_FEATURE_GATES.get(name);
    if (locked !== undefined && gates![name] !== locked)
      return `failed to set feature gates from initial flags-based config: cannot set feature gate ${name} to ${gates![name]}, feature is locked to ${locked}`;
  }
  return undefined;
}
