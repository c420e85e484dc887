/**
 * /healthz, /healthz/ping, /healthz/log and /healthz/<check> (upstream healthz handlers):
 * "ok" when every check passes, 500 listing the failure otherwise; `?verbose` lists each check.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { HealthCheck, KubeletHost } from './host.js';
import { builtinChecks, healthzAll, healthzOne, type HealthzAnswer } from './healthz-answer.js';
import { textResponse } from './schemas.js';

const healthzSchema = {
  summary: 'Overall health',
  tags: ['health'],
  querystring: {
    type: 'object',
    properties: {
      verbose: { type: 'string', description: 'Present: list every check as [+]name ok / [-]name failed.' },
    },
  },
  response: {
    200: textResponse('"ok", or the verbose list ending in "healthz check passed".'),
    500: textResponse('The verbose list with the failed checks (reasons withheld) ending in "healthz check failed".'),
  },
};
const healthzCheckSchema = {
  summary: 'One health check (ping, log, syncloop, …)',
  tags: ['health'],
  params: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
  response: {
    200: textResponse('"ok"'),
    404: textResponse('No such check.'),
    500: textResponse('"internal server error: <reason>"'),
  },
};

/** Registers the healthz routes for `host`'s checks plus ping and log. */
export async function healthzRoutes(app: FastifyInstance, opts: { host: KubeletHost }): Promise<void> {
  const checks = (): HealthCheck[] => [...builtinChecks, ...opts.host.healthChecks()];
  const send = (req: FastifyRequest, reply: FastifyReply, a: HealthzAnswer) => {
    for (const f of a.failed) req.log.warn({ check: f.name, reason: f.reason }, 'healthz check failed');
    if (a.run) opts.host.observeHealthchecks?.('healthz', a.run);
    return reply.code(a.status).type('text/plain; charset=utf-8').send(a.body);
  };
  app.get('/healthz', { schema: healthzSchema }, (req, reply) =>
    send(req, reply, healthzAll(checks(), Object.prototype.hasOwnProperty.call(req.query as object, 'verbose'))),
  );
  app.get<{ Params: { name: string } }>('/healthz/:name', { schema: healthzCheckSchema }, (req, reply) =>
    send(req, reply, healthzOne(checks(), req.params.name)),
  );
}
