/**
 * POST /run/{podNamespace}/{podID}[/{uid}]/{containerName}?cmd=…: runs a command in a running
 * container to completion (CRI ExecSync) and answers its stdout then stderr. As upstream, `cmd` is
 * split on single spaces and the body is sent as application/json whatever it holds.
 */
import type { FastifyInstance } from 'fastify';
import { badRequest } from '../lib/errors.js';
import type { KubeletHost } from './host.js';
import { invalidPathSegment, pathSegment, statusResponse } from './schemas.js';

const name = { type: 'string', pattern: pathSegment.source, maxLength: 253 };
const schema = (withUid: boolean) => ({
  summary: 'Run a command in a container and return its output (ExecSync)',
  tags: ['streaming'],
  params: {
    type: 'object',
    properties: { podNamespace: name, podID: name, ...(withUid ? { uid: name } : {}), containerName: name },
  },
  querystring: {
    type: 'object',
    required: ['cmd'],
    properties: { cmd: { type: 'string', description: 'The command line, split on single spaces.' } },
  },
  response: {
    200: { description: 'stdout followed by stderr.', content: { 'application/json': { schema: { type: 'string' } } } },
    400: statusResponse('Bad path segment, missing cmd, or the container is not running.'),
    404: statusResponse('No such pod (or uid mismatch) or container.'),
  },
});

/** Registers /run. */
export async function runRoutes(app: FastifyInstance, opts: { host: KubeletHost }): Promise<void> {
  type Req = {
    Params: { podNamespace: string; podID: string; uid?: string; containerName: string };
    Querystring: Record<string, string | string[]>;
  };
  const handler = async (req: import('fastify').FastifyRequest<Req>, reply: import('fastify').FastifyReply) => {
    const { podNamespace, podID, uid, containerName } = req.params;
    const invalid = invalidPathSegment([
      ['podNamespace', podNamespace],
      ['podID', podID],
      ['uid', uid],
      ['containerName', containerName],
    ]);
    if (invalid) throw badRequest(invalid);
    const raw = req.query.cmd;
    const cmd = (Array.isArray(raw) ? raw[0] : raw) ?? '';
    if (!cmd) throw badRequest('cmd is required');
    // A client that leaves cancels the command, as upstream's request context cancels its ExecSync.
    const clientGone = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) clientGone.abort();
    };
    reply.raw.once('close', onClose);
    try {
      const out = await opts.host.runInContainer({
        namespace: podNamespace,
        podName: podID,
        podUid: uid,
        containerName,
        command: cmd.split(' '),
        signal: clientGone.signal,
      });
      return await reply.type('application/json').send(out);
    } finally {
      reply.raw.off('close', onClose);
    }
  };
  app.post<Req>('/run/:podNamespace/:podID/:containerName', { schema: schema(false) }, handler);
  app.post<Req>('/run/:podNamespace/:podID/:uid/:containerName', { schema: schema(true) }, handler);
}
