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
  description:
    'Metadata and running containers only, derived from the runtime (CRI) state; a debugging endpoint (secure port only).',
  response: { 200: jsonResponse('Runtime pods as a v1 PodList.', 'PodList') },
};

/** A v1 PodList's JSON up to its items (JSON.stringify's order and spacing), its separator and its end. */
const POD_LIST_HEAD = Buffer.from(
  JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [] }).slice(0, -2),
);
const COMMA = Buffer.from(',');
const POD_LIST_END = Buffer.from(']}');

/**
 * `s` as UTF-8 in a buffer of its own. Buffer.from puts short strings in a shared 8 KiB slab, which
 * a buffer kept as long as its pod would keep alive whole.
 */
function unpooled(s: string): Buffer {
  const b = Buffer.allocUnsafeSlow(Buffer.byteLength(s));
  b.write(s);
  return b;
}

/** Registers /pods (and /pods/). */
export async function podsRoutes(app: FastifyInstance, opts: { host: KubeletHost }): Promise<void> {
  // The serialized list is cached, as the bytes sent, until the host says the pods changed; then
  // only the pods that changed are serialized again (the host gives an unchanged pod as the same
  // object) and the list is the pods' bytes copied together: encoding the whole list's text again
  // on each change cost more than everything else in serving it.
  let cache: { version: string; body: Buffer } | undefined;
  const podJson = new WeakMap<Pod, Buffer>();
  const json = (p: Pod) => {
    let j = podJson.get(p);
    if (j === undefined) podJson.set(p, (j = unpooled(JSON.stringify(p))));
    return j;
  };
  const podListJson = (): Buffer => {
    const version = opts.host.podsVersion();
    if (cache?.version !== version) {
      const parts: Buffer[] = [POD_LIST_HEAD];
      opts.host.getPods().forEach((p, i) => parts.push(...(i ? [COMMA, json(p)] : [json(p)])));
      parts.push(POD_LIST_END);
      cache = { version, body: Buffer.concat(parts) };
    }
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
      const body: PodList = {
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: {},
        items: await opts.host.getRunningPods(),
      };
      return reply.type('application/json').send(JSON.stringify(body));
    });
    methodNotAllowed(app, url, ['GET']);
  }
}
