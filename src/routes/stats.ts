/**
 * /stats/summary (GET, and POST as upstream, `only_cpu_and_memory=true`), /metrics,
 * /metrics/resource, /metrics/cadvisor, /metrics/probes and /spec/: upstream's default handlers,
 * served on the secure port (authorized as the stats / metrics subresources) and on the read-only
 * port. Everything comes from memory: a request never waits for a sample.
 */
import type { FastifyInstance } from 'fastify';
import { methodNotAllowed, sendStatus } from '../server/status-errors.js';
import type { KubeletHost, MetricsKind } from './host.js';
import { jsonResponse, statusResponse, textResponse } from './schemas.js';

const PROM_TEXT = 'text/plain; version=0.0.4; charset=utf-8';
const SLIS =
  "The component SLIs: each /healthz check's last result and count (kubernetes_healthcheck, kubernetes_healthchecks_total)";
const summarySchema = {
  summary: 'Node and pod resource usage (stats/v1alpha1 Summary)',
  tags: ['stats'],
  querystring: {
    type: 'object',
    properties: { only_cpu_and_memory: { type: 'boolean', description: 'Only cpu and memory at every level.' } },
  },
  response: {
    200: jsonResponse('The Summary.', 'Summary'),
    503: statusResponse('No stats sample taken yet (right after start-up).'),
  },
};
const metricsSchema = (summary: string) => ({
  summary,
  tags: ['metrics'],
  response: { 200: textResponse('Prometheus text exposition format 0.0.4.') },
});

/** Registers the stats, metrics and spec routes. */
export async function statsRoutes(app: FastifyInstance, opts: { host: KubeletHost }): Promise<void> {
  const summary = async (req: { query: unknown }, reply: import('fastify').FastifyReply) => {
    const q = req.query as Record<string, string | undefined>;
    const s = opts.host.statsSummary({
      onlyCpuAndMemory: q.only_cpu_and_memory === 'true' || q.only_cpu_and_memory === '1',
    });
    if (!s) return sendStatus(reply, 'Unavailable', 'stats are not available yet: the first sample is being taken');
    return reply.type('application/json').send(JSON.stringify(s));
  };
  app.get('/stats/summary', { schema: summarySchema }, summary);
  app.post('/stats/summary', { schema: summarySchema }, summary);
  methodNotAllowed(app, '/stats/summary', ['GET', 'POST']);
  const metrics: [string, MetricsKind, string][] = [
    ['/metrics', 'kubelet', "The kubelet's own metrics (kubelet_*, rest_client_*, process_*)"],
    [
      '/metrics/resource',
      'resource',
      'Resource metrics for metrics-server (node, pod and container cpu and memory, with timestamps)',
    ],
    ['/metrics/cadvisor', 'cadvisor', "Container metrics under cAdvisor's names (container_*, machine_*)"],
    ['/metrics/probes', 'probes', 'Probe results (prober_probe_total)'],
  ];
  for (const [url, kind, what] of metrics) {
    app.get(url, { schema: metricsSchema(what) }, async (_req, reply) =>
      reply.type(PROM_TEXT).send(await opts.host.metricsText(kind)),
    );
    methodNotAllowed(app, url, ['GET']);
  }
  // The component SLIs, with upstream's reset (metrics.HandlerWithReset): a DELETE starts them again.
  app.get('/metrics/slis', { schema: metricsSchema(SLIS) }, async (_req, reply) =>
    reply.type(PROM_TEXT).send(await opts.host.metricsText('slis')),
  );
  app.delete(
    '/metrics/slis',
    {
      schema: {
        summary: 'Resets the component SLIs',
        tags: ['metrics'],
        response: { 200: textResponse('"metrics reset"') },
      },
    },
    async (_req, reply) => {
      opts.host.resetMetrics?.('slis');
      return reply.type('text/plain; charset=utf-8').send('metrics reset\n');
    },
  );
  methodNotAllowed(app, '/metrics/slis', ['GET', 'DELETE']);
  for (const url of ['/spec', '/spec/']) {
    app.get(
      url,
      {
        schema: {
          summary: 'Machine information (cAdvisor MachineInfo)',
          tags: ['stats'],
          response: { 200: jsonResponse('The machine.', 'MachineInfo') },
        },
      },
      async (_req, reply) => reply.type('application/json').send(JSON.stringify(opts.host.machineSpec())),
    );
    methodNotAllowed(app, url, ['GET']);
  }
}
