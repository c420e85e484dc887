/**
 * The sandbox DNS config from dnsPolicy / dnsConfig and the node's resolv.conf (upstream
 * kubelet/network/dns GetPodDNS). Pure: the resolv.conf text comes in.
 *
 * ClusterFirst (not hostNetwork) and ClusterFirstWithHostNet → cluster DNS (falls back to the
 * node's when no clusterDNS is configured); Default and ClusterFirst with hostNetwork → the node's;
 * None → only spec.dnsConfig. spec.dnsConfig is then appended (duplicates dropped, options merged).
 */
import type { Pod } from '../../api/types.js';
import type * as cri from '../../cri/types.js';

/** At most three nameservers and 32 search domains reach the pod (upstream limits). */
export const MAX_NAMESERVERS = 3;
export const MAX_SEARCHES = 32;

/** What the node offers. */
export interface NodeDns {
  clusterDNS: string[];
  clusterDomain: string;
  resolvConf: string;
}

/** A parsed resolv.conf. */
export interface ResolvConf {
  servers: string[];
  searches: string[];
  options: string[];
}

/** Parses resolv.conf text (nameserver, search — the last one wins — and options lines). */
export function parseResolvConf(text: string): ResolvConf {
  const out: ResolvConf = { servers: [], searches: [], options: [] };
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    if (!line) continue;
    const [key, ...fields] = line.split(/\s+/);
    if (key === 'nameserver' && fields[0]) out.servers.push(fields[0]);
    else if (key === 'search') out.searches = fields.map((f) => f.replace(/\.$/, ''));
    else if (key === 'options') out.options.push(...fields);
  }
  return out;
}

const unique = (xs: string[]) => [...new Set(xs)];

function mergeOptions(a: string[], b: string[]): string[] {
  const byName = new Map<string, string>();
  for (const o of [...a, ...b]) byName.set(o.split(':')[0], o);
  return [...byName.values()];
}

/** Which kind of DNS the pod gets. */
export function podDnsType(pod: Pod, node: NodeDns): 'cluster' | 'host' | 'none' {
  const policy = (pod.spec.dnsPolicy as string | undefined) ?? 'ClusterFirst';
  if (policy === 'None') return 'none';
  const cluster = policy === 'ClusterFirstWithHostNet' || (policy === 'ClusterFirst' && !pod.spec.hostNetwork);
  return cluster && node.clusterDNS.length > 0 ? 'cluster' : 'host';
}

/** The DNSConfig for the pod's sandbox. */
export function podDnsConfig(pod: Pod, node: NodeDns): cri.DNSConfig {
  const host = parseResolvConf(node.resolvConf);
  const ns = pod.metadata.namespace ?? 'default';
  let cfg: ResolvConf;
  switch (podDnsType(pod, node)) {
    case 'none':
      cfg = { servers: [], searches: [], options: [] };
      break;
    case 'host':
      cfg = host;
      break;
    case 'cluster': {
      const d = node.clusterDomain;
      cfg = {
        servers: [...node.clusterDNS],
        searches: [...(d ? [`${ns}.svc.${d}`, `svc.${d}`, d] : []), ...host.searches],
        options: ['ndots:5'],
      };
    }
  }
  const extra = (pod.spec.dnsConfig ?? {}) as {
    nameservers?: string[];
    searches?: string[];
    options?: { name: string; value?: string }[];
  };
  const servers = unique([...cfg.servers, ...(extra.nameservers ?? [])]).slice(0, MAX_NAMESERVERS);
  const searches = unique([...cfg.searches, ...(extra.searches ?? [])]).slice(0, MAX_SEARCHES);
  const options = mergeOptions(
    cfg.options,
    (extra.options ?? []).map((o) => (o.value !== undefined ? `${o.name}:${o.value}` : o.name)),
  );
  return { servers, searches, options };
}
