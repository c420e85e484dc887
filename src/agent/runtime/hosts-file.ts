/**
 * The kubelet-managed /etc/hosts of a pod (upstream kubelet_pods.go managedHostsFileContent).
 * Pure: the node's /etc/hosts text comes in for hostNetwork pods, the pod's host name and domain
 * (pod-hostname.ts) for the others.
 */
import type { Pod } from '../../api/types.js';

/** The file's content. */
export function hostsFileContent(
  pod: Pod,
  o: { podIPs: string[]; hostname: string; domain: string; nodeHostsFile?: string },
): string {
  let out: string;
  if (pod.spec.hostNetwork) {
    out = `# Kubernetes-managed hosts file (host network).\n${o.nodeHostsFile ?? ''}`;
    if (!out.endsWith('\n')) out += '\n';
  } else {
    out =
      '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n';
    for (const ip of o.podIPs)
      out += o.domain ? `${ip}\t${o.hostname}.${o.domain}\t${o.hostname}\n` : `${ip}\t${o.hostname}\n`;
  }
  const aliases = pod.spec.hostAliases ?? [];
  if (aliases.length) {
    out += '\n# Entries added by HostAliases.\n';
    for (const a of aliases) out += `${a.ip}\t${(a.hostnames ?? []).join('\t')}\n`;
  }
  return out;
}
