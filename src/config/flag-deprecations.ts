/**
 * Which kubelet flags upstream marks deprecated, and the reason pflag prints when one is given (`Flag --address has
 * been deprecated, <reason>`) and `--help` shows. Every flag that sets a KubeletConfiguration field is deprecated in
 * favour of the config file (upstream's AddKubeletConfigFlags marks the whole set, and every flag added to it is
 * deprecated on creation); a few KubeletFlags carry reasons of their own. Pure.
 */
import { configFlags } from './config-flags.js';

/** Upstream's reason for the flags that set a KubeletConfiguration field. */
export const CONFIG_FILE_FLAG_DEPRECATION =
  "This parameter should be set via the config file specified by the Kubelet's --config flag. See https://kubernetes.io/docs/tasks/administer-cluster/kubelet-config-file/ for more information.";

/** Upstream's config-file flags that tskubelet accepts without implementing them (known-names.ts), and logging's. */
const OTHER_CONFIG_FILE_FLAGS: ReadonlySet<string> = new Set([
  'contention-profiling',
  'enable-controller-attach-detach',
  'hairpin-mode',
  'kernel-memcg-notification',
  'kube-api-content-type',
  'log-flush-frequency',
  'log-json-info-buffer-size',
  'log-json-split-stream',
  'log-text-info-buffer-size',
  'log-text-split-stream',
  'logging-format',
  'make-iptables-util-chains',
  'qos-reserved',
  'volume-plugin-dir',
]);

/** The container garbage collection flags, which eviction replaced. */
const GARBAGE_COLLECTION_FLAGS: ReadonlySet<string> = new Set([
  'maximum-dead-containers',
  'maximum-dead-containers-per-container',
  'minimum-container-ttl-duration',
]);

/** Why upstream deprecates the flag `name`, or undefined when it does not. */
export function flagDeprecation(name: string): string | undefined {
  if (name in configFlags || OTHER_CONFIG_FILE_FLAGS.has(name)) return CONFIG_FILE_FLAG_DEPRECATION;
  if (GARBAGE_COLLECTION_FLAGS.has(name))
    return 'Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.';
  return undefined;
}
