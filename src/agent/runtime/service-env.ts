/**
 * Service link environment variables (upstream envvars.FromServices): for each service with a
 * cluster IP, FOO_SERVICE_HOST / FOO_SERVICE_PORT / FOO_SERVICE_PORT_<NAME> and the Docker link
 * variables FOO_PORT, FOO_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}. Which services: those of the
 * pod's namespace when enableServiceLinks (default true), plus the apiserver's own `kubernetes`
 * service in `default` always. Pure.
 */

/** A Service as the API returns it (the fields used). */
export interface ServiceLike {
  metadata: { name: string; namespace?: string };
  spec?: { clusterIP?: string; ports?: { name?: string; port: number; protocol?: string }[] };
}

const envName = (s: string) => s.toUpperCase().replace(/-/g, '_');

/** The variables for `services` (later services do not override earlier names). */
export function serviceEnv(services: ServiceLike[]): Record<string, string> {
  const out: Record<string, string> = {};
  const set = (k: string, v: string) => {
    if (!(k in out)) out[k] = v;
  };
  for (const svc of services) {
    const ip = svc.spec?.clusterIP;
    const ports = svc.spec?.ports ?? [];
    if (!ip || ip === 'None' || !ports.length) continue;
    const n = envName(svc.metadata.name);
    set(`${n}_SERVICE_HOST`, ip);
    set(`${n}_SERVICE_PORT`, String(ports[0].port));
    for (const p of ports) if (p.name) set(`${n}_SERVICE_PORT_${envName(p.name)}`, String(p.port));
    ports.forEach((p, i) => {
      const proto = (p.protocol ?? 'TCP').toUpperCase();
      const url = `${proto.toLowerCase()}://${ip}:${p.port}`;
      const prefix = `${n}_PORT_${p.port}_${proto}`;
      if (i === 0) set(`${n}_PORT`, url);
      set(prefix, url);
      set(`${prefix}_PROTO`, proto.toLowerCase());
      set(`${prefix}_PORT`, String(p.port));
      set(`${prefix}_ADDR`, ip);
    });
  }
  return out;
}

/** The services whose variables a pod gets (upstream getServiceEnvVarMap). */
export function servicesForPod(
  namespace: string,
  o: { enableServiceLinks: boolean; inNamespace: ServiceLike[]; masterService: ServiceLike | undefined },
): ServiceLike[] {
  const list = o.enableServiceLinks
    ? o.inNamespace.filter((s) => !(namespace === 'default' && s.metadata.name === 'kubernetes'))
    : [];
  return o.masterService ? [o.masterService, ...list] : list;
}
