/**
 * POST /checkpoint/{podNamespace}/{podID}/{containerName}[?timeout=seconds]: checkpoints a
 * container through the runtime (upstream's ContainerCheckpoint, beta and on by default) and
 * answers `{"items":["<archive path>"]}`. As upstream: 404 for an unknown pod or container and
 * for a timeout that is not a number, 500 naming the container when the runtime fails (a runtime
 * without CheckpointContainer, such as containerd 1.6, fails every request).
 */
import type { FastifyInstance } from 'fastify';
import { badRequest, isCode, KubeletError, messageOf, notFound } from '../lib/errors.js';
import type { KubeletHost } from './host.js';
import { invalidPathSegment, pathSegment, statusResponse } from './schemas.js';

const name = { type: 'string', pattern: pathSegment.source, maxLength: 253 };
const schema = {
  summary: 'Checkpoint a container (CRI CheckpointContainer) into <root-dir>/checkpoints',
  tags: ['debugging'],
  params: { type: 'object', properties: { podNamespace: name, podID: name, containerName: name } },
  querystring: {
    type: 'object',
    properties: { timeout: { type: 'string', description: 'Seconds the runtime may take (the last value counts).' } },
  },
  response: {
    200: {
      description: 'The archive written.',
      content: {
        'application/json': {
          schema: { type: 'object', properties: { items: { type: 'array', items: { type: 'string' } } } },
        },
      },
    },
    400: statusResponse('Bad path segment.'),
    404: statusResponse('No such pod or container, or a timeout that is not a number.'),
    500: statusResponse('The runtime could not checkpoint the container.'),
  },
};

/** Registers /checkpoint. */
export async function checkpointRoutes(app: FastifyInstance, opts: { host: KubeletHost }): Promise<void> {
  type Req = {
    Params: { podNamespace: string; podID: string; containerName: string };
    Querystring: Record<string, string | string[]>;
  };
  app.post<Req>('/checkpoint/:podNamespace/:podID/:containerName', { schema }, async (req, reply) => {
    const { podNamespace, podID, containerName } = req.params;
    const invalid = invalidPathSegment([
      ['podNamespace', podNamespace],
      ['podID', podID],
      ['containerName', containerName],
    ]);
    if (invalid) throw badRequest(invalid);
    const raw = req.query.timeout;
    const last = Array.isArray(raw) ? raw[raw.length - 1] : raw;
    let timeoutSeconds: number | undefined;
    if (last !== undefined) {
      if (!/^[+-]?\d{1,18}$/.test(last)) throw notFound('cannot parse value of timeout parameter');
      timeoutSeconds = Number(last);
    }
    if (!opts.host.checkpointContainer) throw notFound('pod does not exist');
    let location: string;
    try {
      location = await opts.host.checkpointContainer({
        namespace: podNamespace,
        podName: podID,
        containerName,
        timeoutSeconds,
      });
    } catch (err) {
      if (isCode(err, 'NotFound')) throw err;
      throw new KubeletError(
        'Internal',
        `checkpointing of ${podNamespace}/${podID}/${containerName} failed (${messageOf(err)})`,
        { cause: err },
      );
    }
    return reply.type('application/json').send({ items: [location] });
  });
}
