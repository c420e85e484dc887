/**
 * /healthz, /healthz/ping, /healthz/log and /healthz/<check> (upstream healthz handlers):
 * "ok" when every check passes, 500 listing the failure otherwise; `?verbose` lists each check.
 */
import type { FastifyInstance } from 'fastify';
import type { HealthCheck, KubeletHost } from './host.js';
import { textResponse } from './schemas.js';

const healthzSchema = {
  summary: 'Overall health', tags: ['health'],
  querystring: { type: 'object', properties: { verbose: { type: 'string', description: 'Present: list every check as [+]name ok / [-]name failed.' } } },
  response: { 200: textResponse('"ok", or the verbose list ending in "healthz check passed".'), 500: textResponse('The verbose list with the failed checks (reasons withheld) ending in "healthz check failed".') },
};
const healthzCheckSchema = {
  summary: 'One health check (ping, log, syncloop, …)', tags: ['health'],
  params: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
  response: { 200: textResponse('"ok"'), 404: textResponse('No such check.'), 500: textResponse('"internal server error: <reason>"') },
};

/** Registers the healthz routes for `host`'s checks plus ping and log. */
export async function healthzRoutes(app: FastifyInstance, opts: { host: KubeletHost }): Promise<void> {
  const checks = (): HealthCheck[] => [{ name: 'ping', check: () => undefined }, { name: 'log', check: () => undefined }, ...opts.host.healthChecks()];
  app.get('/healthz', { schema: healthzSchema }, async (req, reply) => {
    const results = checks().map((c) => ({ name: c.name, err: c.check() }));
    const failed = results.filter((r) => r.err);
    const verbose = Object.prototype.hasOwnProperty.call(req.query as object, 'verbose');
    reply.type('text/plain; charset=utf-8');
    if (!failed.length && !verbose) return 'ok';
    const lines = results.map((r) => (r.err ? `[-]${r.name} failed: reason withheld` : `[+]${r.name} ok`));
    if (failed.length) {
      for (const f of failed) req.log.warn({ check: f.name, reason: f.err }, 'healthz check failed');
      return reply.code(500).send(`${lines.join('\n')}\nhealthz check failed\n`);
    }
    return `${lines.join('\n')}\nhealthz check passed\n`;
  });
  app.get<{ Params: { name: string } }>('/healthz/:name', { schema: healthzCheckSchema }, async (req, reply) => {
    const c = checks().find((x) => x.name === req.params.name);
    reply.type('text/plain; charset=utf-8');
    if (!c) return reply.code(404).send('404 page not found\n');
    const err = c.check();
    return err ? reply.code(500).send(`internal server error: ${err}\n`) : 'ok';
  });
}
