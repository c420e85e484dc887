/**
 * The audit trail of the secure port: every exec / attach / port-forward / run request that got
 * past authentication and authorization is logged at the default verbosity with who asked, the
 * pod, the container and the command (never stdin or output), so an operator can answer "who ran
 * what on this node". One line per session, component "audit".
 */
import type { Logger } from '../lib/logger.js';
import type { UserInfo } from './authn/authenticator.js';
import { decodedPathSegments } from '../routes/schemas.js';

/** One audited action. */
export interface AuditRecord {
  verb: 'exec' | 'attach' | 'portforward' | 'run';
  user: UserInfo;
  namespace: string;
  pod: string;
  container?: string;
  command?: string[];
  ports?: number[];
  remote?: string;
}

/** Writes `r` to the audit log. */
export function audit(log: Logger, r: AuditRecord): void {
  log.info(
    {
      component: 'audit',
      verb: r.verb,
      user: r.user.name,
      groups: r.user.groups,
      namespace: r.namespace,
      pod: r.pod,
      container: r.container,
      command: r.command,
      ports: r.ports,
      remote: r.remote,
    },
    `${r.user.name} ${r.verb} ${r.namespace}/${r.pod}${r.container ? `/${r.container}` : ''}${r.command ? ` ${JSON.stringify(r.command)}` : ''}`,
  );
}

/** The audit record of a /run request path (`/run/{ns}/{pod}[/{uid}]/{container}?cmd=…`), or undefined. Pure. */
export function runAuditOf(rawUrl: string, user: UserInfo): AuditRecord | undefined {
  const url = new URL(rawUrl, 'http://x');
  const parts = decodedPathSegments(url.pathname, (raw) => raw);
  if (parts[0] !== 'run' || parts.length < 4 || parts.length > 5) return undefined;
  return {
    verb: 'run',
    user,
    namespace: parts[1],
    pod: parts[2],
    container: parts[parts.length - 1],
    command: (url.searchParams.get('cmd') ?? '').split(' '),
  };
}
