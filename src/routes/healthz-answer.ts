/**
 * The healthz decision (upstream healthz handlers), shared by the Fastify routes on 10250/10255
 * and the plain HTTP server of the healthz port: "ok" when every check passes, 500 listing the
 * failures otherwise; `verbose` lists each check; `/healthz/<name>` runs one check.
 */
import type { HealthCheck } from './host.js';

/** ping and log always pass; the host adds its own. */
export const builtinChecks: readonly HealthCheck[] = [
  { name: 'ping', check: () => undefined },
  { name: 'log', check: () => undefined },
];

/** An answer: status, plain-text body, and the checks that failed (for the log). */
export interface HealthzAnswer {
  status: 200 | 400 | 404 | 500;
  body: string;
  failed: { name: string; reason: string }[];
  /** A run of every check (/healthz itself): each one's result, for the component SLIs. */
  run?: { name: string; ok: boolean }[];
}

/** /healthz over `checks` (`verbose`: list each). */
export function healthzAll(checks: readonly HealthCheck[], verbose: boolean): HealthzAnswer {
  const results = checks.map((c) => ({ name: c.name, err: c.check() }));
  const failed = results.flatMap((r) => (r.err ? [{ name: r.name, reason: r.err }] : []));
  const run = results.map((r) => ({ name: r.name, ok: !r.err }));
  if (!failed.length && !verbose) return { status: 200, body: 'ok', failed, run };
  const lines = results.map((r) => (r.err ? `[-]${r.name} failed: reason withheld` : `[+]${r.name} ok`));
  return failed.length
    ? { status: 500, body: `${lines.join('\n')}\nhealthz check failed\n`, failed, run }
    : { status: 200, body: `${lines.join('\n')}\nhealthz check passed\n`, failed, run };
}

/** /healthz/<name>: one check, 404 when there is no such check. */
export function healthzOne(checks: readonly HealthCheck[], name: string): HealthzAnswer {
  const c = checks.find((x) => x.name === name);
  if (!c) return { status: 404, body: '404 page not found\n', failed: [] };
  const err = c.check();
  return err
    ? { status: 500, body: `internal server error: ${err}\n`, failed: [{ name, reason: err }] }
    : { status: 200, body: 'ok', failed: [] };
}

/**
 * The healthz port's routing (a bare mux, as upstream): /healthz, /healthz/<name>, 404 elsewhere;
 * a URL or escape that cannot be parsed is a 400. Never throws.
 */
export function healthzRoute(checks: readonly HealthCheck[], rawUrl: string): HealthzAnswer {
  let path: string;
  let verbose: boolean;
  try {
    const url = new URL(rawUrl, 'http://healthz');
    path = url.pathname === '/healthz' ? '' : decodeURIComponent(url.pathname);
    verbose = url.searchParams.has('verbose');
  } catch {
    return { status: 400, body: '400 Bad Request\n', failed: [] };
  }
  if (path === '') return healthzAll(checks, verbose);
  if (path.startsWith('/healthz/') && !path.slice(9).includes('/')) return healthzOne(checks, path.slice(9));
  return { status: 404, body: '404 page not found\n', failed: [] };
}
