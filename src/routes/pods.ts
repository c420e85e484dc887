/** GET /pods: the pods the kubelet wants, as a v1 PodList. */
import type { FastifyInstance } from 'fastify';
import type { Pod, PodList } from '../api/types.js';
import { methodNotAllowed } from '../server/status-errors.js';
import type { KubeletHost } from './host.js';
import { jsonResponse } from './schemas.js';

const podsSchema = {
  summary: 'The pods this kubelet runs, with their latest status',
  tags: ['pods'],
  response: { 200: jsonResponse('The desired pods (static and API pods) as a v1 PodList.', 'PodList') },
};
const runningPodsSchema = {
  summary: 'The pods as the container runtime has them',
  tags: ['pods'],
  description: 'Metadata and running containers only, derived from the runtime (CRI) state; a debugging endpoint (secure port only).',
  response: { 200: jsonResponse('Runtime pods as a v1 PodList.', 'PodList') },
};

/** A v1 PodList's JSON up to its items (JSON.stringify's order and spacing). */
const POD_LIST_HEAD = JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [] }).slice(0, -2);

/** Registers /pods (and /pods/). */
export async function podsRoutes(app: FastifyInstance, opts: { host: KubeletHost }): Promise<void> {
  // The serialized list is cached, as the bytes sent, until the host says the pods changed; then
  // only the pods that changed are serialized again (the host gives an unchanged pod as the same object).
  let cache: { version: string; body: Buffer } | undefined;
  const podJson = new WeakMap<Pod, string>();
  const json = (p: Pod) => {
    let j = podJson.get(p);
    if (j === undefined) podJson.set(p, (j = JSON.stringify(p)));
    return j;
  };
  const podListJson = (): Buffer => {
    const version = opts.host.podsVersion();
    if (cache?.version !== version) cache = { version, body: Buffer.from(`${POD_LIST_HEAD}${opts.host.getPods().map(json).join(',')}]}`) };
    return cache.body;
  };
  for (const url of ['/pods', '/pods/']) {
    app.get(url, { schema: podsSchema }, async (_req, reply) => reply.type('application/json').send(podListJson()));
    methodNotAllowed(app, url, ['GET']);
  }
}

/** GET /runningpods/: the pods as the container runtime has them. */
export async function runningPodsRoutes(app: FastifyInstance, opts: { host: KubeletHost }): Promise<void> {
  for (const url of ['/runningpods', '/runningpods/']) {
    app.get(url, { schema: runningPodsSchema }, async (_req, reply) => {
      const body: PodList = { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: await opts.host.getRunningPods() };
      return reply.type('application/json').send(JSON.stringify(body));
    });
    methodNotAllowed(app, url, ['GET']);
  }
}
