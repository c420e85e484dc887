/**
 * /exec, /attach, /portForward as plain requests: documentation for the API document and a 400
 * for clients that did not ask for an upgrade. The upgrades themselves are handled before routing
 * (server/streaming-proxy.ts).
 */
import type { FastifyInstance } from 'fastify';
import { badRequest } from '../lib/errors.js';
import { pathSegment, statusResponse } from './schemas.js';

const name = { type: 'string', pattern: pathSegment.source, maxLength: 253 };
const flag = (d: string) => ({ type: 'string', enum: ['0', '1'], description: d });
const streamQuery = {
  type: 'object',
  properties: {
    input: flag('1: attach stdin.'),
    output: flag('1: stream stdout.'),
    error: flag('1: stream stderr (dropped with a TTY).'),
    tty: flag('1: allocate a TTY (resize channel).'),
  },
};
const upgradeDoc =
  "An upgrade: `Upgrade: SPDY/3.1` with `X-Stream-Protocol-Version` (v5/v4/v3/v2.channel.k8s.io, channel.k8s.io; portforward.k8s.io), or `Upgrade: websocket` with `Sec-WebSocket-Protocol` (v5.channel.k8s.io, v4.channel.k8s.io, v4.base64.channel.k8s.io, base64.channel.k8s.io, channel.k8s.io). Answers 101 and proxies to the runtime's streaming server.";
const responses = {
  101: { description: 'Switching Protocols: the session runs on the connection.' },
  400: statusResponse(
    'Not an upgrade, a bad path segment or query (e.g. none of input/output/error), or the container is not running.',
  ),
  404: statusResponse('No such pod (or uid mismatch) or container.'),
};

/** Registers the documented plain-request forms. */
export async function streamingRoutes(app: FastifyInstance): Promise<void> {
  const reject = async () => {
    throw badRequest('Upgrade request required');
  };
  for (const kind of ['exec', 'attach'] as const) {
    const schema = (withUid: boolean) => ({
      summary:
        kind === 'exec' ? 'Run a command in a container (streaming)' : 'Attach to a running container (streaming)',
      tags: ['streaming'],
      description: upgradeDoc,
      params: {
        type: 'object',
        properties: { podNamespace: name, podID: name, ...(withUid ? { uid: name } : {}), containerName: name },
      },
      querystring:
        kind === 'exec'
          ? {
              ...streamQuery,
              properties: {
                ...streamQuery.properties,
                command: {
                  type: 'array',
                  items: { type: 'string' },
                  description: 'The command and its arguments, one `command=` each.',
                },
              },
            }
          : streamQuery,
      response: responses,
    });
    app.route({
      method: ['GET', 'POST'],
      url: `/${kind}/:podNamespace/:podID/:containerName`,
      schema: schema(false),
      handler: reject,
    });
    app.route({
      method: ['GET', 'POST'],
      url: `/${kind}/:podNamespace/:podID/:uid/:containerName`,
      schema: schema(true),
      handler: reject,
    });
  }
  const pf = (withUid: boolean) => ({
    summary: 'Forward ports of a pod (streaming)',
    tags: ['streaming'],
    description: `${upgradeDoc} WebSocket clients name the ports with \`?port=\`.`,
    params: { type: 'object', properties: { podNamespace: name, podID: name, ...(withUid ? { uid: name } : {}) } },
    querystring: {
      type: 'object',
      properties: { port: { type: 'string', description: 'Comma-separated ports (WebSocket only).' } },
    },
    response: responses,
  });
  app.route({ method: ['GET', 'POST'], url: '/portForward/:podNamespace/:podID', schema: pf(false), handler: reject });
  app.route({
    method: ['GET', 'POST'],
    url: '/portForward/:podNamespace/:podID/:uid',
    schema: pf(true),
    handler: reject,
  });
}
