/**
 * A pod's host name and domain (upstream GeneratePodHostNameAndDomain) and the name its sandbox's
 * kernel gets (GetNodenameForKernel: the FQDN with setHostnameAsFQDN). Pure; the messages are
 * upstream's, so a pod that cannot have its name fails with the same event text.
 */
import type { Pod } from '../../api/types.js';
import { regexError } from '../../api/validation-messages.js';

/**
 * What the pod is called on its own network: `hostname`, and `domain` (`<subdomain>.<ns>.svc.<cluster domain>`, ""
 * without a subdomain).
 */
export type PodHostName = { ok: true; hostname: string; domain: string } | { ok: false; message: string };

const HOSTNAME_MAX = 63;
const SUBDOMAIN_MAX = 253;
/** The kernel's nodename field: 64 bytes with the terminating NUL, as upstream counts it. */
const FQDN_MAX = 64;
const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const labelRe = new RegExp(`^${LABEL}$`);
const subdomainRe = new RegExp(`^${LABEL}(\\.${LABEL})*$`);

/** apimachinery's IsDNS1123Label: the reasons `value` is not a DNS label (none when it is). */
export function dns1123LabelErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > HOSTNAME_MAX) errs.push(`must be no more than ${HOSTNAME_MAX} characters`);
  if (!labelRe.test(value))
    errs.push(
      subdomainRe.test(value)
        ? 'must not contain dots'
        : regexError(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and " +
              'end with an alphanumeric character',
            LABEL,
            'my-name',
            '123-abc',
          ),
    );
  return errs;
}

/**
 * The pod's host name (spec.hostname, else its name, cut to 63 characters without a trailing '-' or '.') and domain.
 */
export function podHostNameAndDomain(pod: Pod, clusterDomain: string): PodHostName {
  const spec = pod.spec as { hostname?: string; subdomain?: string; hostnameOverride?: string };
  // spec.hostnameOverride (HostnameOverride) is the whole name: no subdomain, no domain.
  if (spec.hostnameOverride !== undefined && spec.hostnameOverride !== null) {
    const errs = dns1123SubdomainErrors(spec.hostnameOverride);
    if (errs.length)
      return {
        ok: false,
        message: `pod HostnameOverride "${spec.hostnameOverride}" is not a valid DNS subdomain: ${errs.join(';')}`,
      };
    return truncated(pod, spec.hostnameOverride, '');
  }
  let hostname = pod.metadata.name!;
  if (spec.hostname) {
    const errs = dns1123LabelErrors(spec.hostname);
    if (errs.length)
      return { ok: false, message: `pod Hostname "${spec.hostname}" is not a valid DNS label: ${errs.join(';')}` };
    hostname = spec.hostname;
  }
  let domain = '';
  if (spec.subdomain) {
    const errs = dns1123LabelErrors(spec.subdomain);
    if (errs.length)
      return { ok: false, message: `pod Subdomain "${spec.subdomain}" is not a valid DNS label: ${errs.join(';')}` };
    domain = `${spec.subdomain}.${pod.metadata.namespace}.svc.${clusterDomain}`;
  }
  return truncated(pod, hostname, domain);
}

/** `hostname` cut to 63 characters without a trailing '-' or '.' (upstream truncatePodHostnameIfNeeded). */
function truncated(pod: Pod, hostname: string, domain: string): PodHostName {
  if (hostname.length <= HOSTNAME_MAX) return { ok: true, hostname, domain };
  const cut = hostname.slice(0, HOSTNAME_MAX).replace(/[-.]+$/, '');
  if (!cut) return { ok: false, message: `hostname for pod "${pod.metadata.name}" was invalid: "${hostname}"` };
  return { ok: true, hostname: cut, domain };
}

/** apimachinery's IsDNS1123Subdomain: the reasons `value` is not a DNS subdomain (none when it is). */
export function dns1123SubdomainErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > SUBDOMAIN_MAX) errs.push(`must be no more than ${SUBDOMAIN_MAX} characters`);
  if (!subdomainRe.test(value))
    errs.push(
      regexError(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must " +
          'start and end with an alphanumeric character',
        `${LABEL}(\\.${LABEL})*`,
        'example.com',
      ),
    );
  return errs;
}

/**
 * The sandbox's kernel host name: "" for a hostNetwork pod (the node's), the FQDN with setHostnameAsFQDN and a domain,
 * else the host name.
 */
export function sandboxHostname(
  pod: Pod,
  clusterDomain: string,
): { ok: true; hostname: string } | { ok: false; message: string } {
  if (pod.spec.hostNetwork) return { ok: true, hostname: '' };
  const name = podHostNameAndDomain(pod, clusterDomain);
  if (!name.ok) return name;
  if (!name.domain || (pod.spec as { setHostnameAsFQDN?: boolean }).setHostnameAsFQDN !== true)
    return { ok: true, hostname: name.hostname };
  const fqdn = `${name.hostname}.${name.domain}`;
  if (fqdn.length > FQDN_MAX)
    return {
      ok: false,
      message: `failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (${FQDN_MAX} characters is the max, ${fqdn.length} characters requested)`,
    };
  return { ok: true, hostname: fqdn };
}
