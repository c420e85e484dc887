/**
 * GET /configz: the effective KubeletConfiguration as `{"kubeletconfig": {...}}`, typed with its `kind` and
 * `apiVersion` as v1.36 serves it (kubernetes/kubernetes#136044; upstream's NodeConformance spec "Kubelet Endpoints
 * should return APIVersion and Kind fields in /configz" decodes it into the v1beta1 type and checks both), its fields
 * as config/configz-view.ts puts them.
 */
import type { FastifyInstance } from 'fastify';
import { methodNotAllowed } from '../server/status-errors.js';
import { jsonResponse } from './schemas.js';

const schema = {
  summary: 'The running configuration',
  tags: ['config'],
  description: 'A debugging endpoint (secure port only).',
  response: {
    200: jsonResponse(
      '`{"kubeletconfig": KubeletConfiguration}` (kubelet.config.k8s.io/v1beta1, with its kind and apiVersion).',
      'Configz',
    ),
  },
};

/**
 * Registers /configz serving `config`, the v1beta1 view (free of secrets: the configuration holds paths, not keys).
 */
export async function configzRoutes(app: FastifyInstance, opts: { config: Record<string, unknown> }): Promise<void> {
  const { apiVersion: _a, kind: _k, ...rest } = opts.config;
  const body = JSON.stringify({
    kubeletconfig: { kind: 'KubeletConfiguration', apiVersion: 'kubelet.config.k8s.io/v1beta1', ...rest },
  });
  app.get('/configz', { schema }, async (_req, reply) => reply.type('application/json').send(body));
  methodNotAllowed(app, '/configz', ['GET']);
}
