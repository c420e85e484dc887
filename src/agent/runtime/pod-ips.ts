/** A pod's IPs as the kubelet reports them (status.podIPs, the downward API's status.podIPs). */
import { isIP } from 'node:net';
import type { Pod } from '../../api/types.js';
import type { RuntimeSandbox } from './pod-runtime-status.js';

/**
 * A pod's IPs as upstream's sortPodIPs orders them: the first of the node's primary family (that
 * of `nodeIP`; IPv4 when it has none), then the first of the other family; at most one of each. Pure.
 */
export function sortPodIPs(ips: readonly string[], nodeIP: string): string[] {
  const primaryFamily = isIP(nodeIP) === 6 ? 6 : 4;
  const primary = ips.find((ip) => isIP(ip) === primaryFamily);
  const secondary = ips.find((ip) => isIP(ip) === 10 - primaryFamily);
  return [primary, secondary].filter((ip): ip is string => ip !== undefined);
}

/** The IPs of `pod`: the node's for a hostNetwork pod, else its ready sandbox's, sorted as upstream. Pure. */
export function podIPsOf(
  pod: Pod,
  sandbox: Pick<RuntimeSandbox, 'ready' | 'ip' | 'additionalIps'> | undefined,
  nodeIP: string,
): string[] {
  if (pod.spec.hostNetwork) return nodeIP ? [nodeIP] : [];
  return sandbox?.ready ? sortPodIPs([sandbox.ip, ...(sandbox.additionalIps ?? [])], nodeIP) : [];
}
