/**
 * GET /containerLogs/{podNamespace}/{podID}/{containerName}: a container's logs, chunked and
 * flushed on every write; `follow` streams until the container's log ends or the client leaves.
 * Errors before the first byte are Status JSON (400/404/422); path segments are validated.
 */
import type { FastifyInstance } from 'fastify';
import { Transform } from 'node:stream';
import { badRequest } from '../lib/errors.js';
import { nowNs } from '../lib/time.js';
import { parseLogQuery } from './container-logs-query.js';
import { invalidPathSegment, pathSegment, statusResponse, textResponse } from './schemas.js';
import type { KubeletHost } from './host.js';

const name = (description: string) => ({ type: 'string', pattern: pathSegment.source, maxLength: 253, description });
const bool = (description: string) => ({ type: 'boolean', description });
const int = (description: string, minimum: number) => ({ type: 'integer', minimum, description });
const schema = {
  summary: "A container's logs (v1.PodLogOptions)",
  tags: ['logs'],
  description:
    'Chunked text/plain, flushed on every write. Errors before the first byte are Status JSON; the query is decoded and validated as the Go kubelet does.',
  params: {
    type: 'object',
    required: ['podNamespace', 'podID', 'containerName'],
    properties: {
      podNamespace: name('Namespace.'),
      podID: name('Pod name.'),
      containerName: name('Container name (init containers too).'),
    },
  },
  querystring: {
    type: 'object',
    properties: {
      follow: bool("Stream until the container's log ends or the client leaves."),
      previous: bool('The previous terminated instance of the container.'),
      timestamps: bool('Prefix each line with its RFC3339Nano timestamp.'),
      tailLines: int('Only the last N lines.', 0),
      tail: { type: 'string', description: 'Legacy form of tailLines; "all" means no limit.' },
      limitBytes: int('Stop after this many bytes.', 1),
      sinceSeconds: int('Only lines newer than this many seconds (exclusive with sinceTime).', 1),
      sinceTime: { type: 'string', format: 'date-time', description: 'Only lines at or after this RFC3339 time.' },
    },
  },
  response: {
    200: textResponse('The log lines.'),
    400: statusResponse(
      'Undecodable query, bad path segment, or the container is waiting to start / has no previous instance.',
    ),
    404: statusResponse('No such pod or container.'),
    422: statusResponse('Query values out of range (Invalid).'),
  },
};

/** Registers /containerLogs. */
export async function containerLogsRoutes(
  app: FastifyInstance,
  opts: {
    host: KubeletHost;
    /** PodLogsQuerySplitStreams: `stream=Stdout|Stderr` picks the lines. */
    splitStreams?: boolean;
  },
): Promise<void> {
  app.get<{
    Params: { podNamespace: string; podID: string; containerName: string };
    Querystring: Record<string, string | string[]>;
  }>('/containerLogs/:podNamespace/:podID/:containerName', { schema }, async (req, reply) => {
    const { podNamespace: ns, podID: pod, containerName: container } = req.params;
    for (const [what, v] of [
      ['podNamespace', ns],
      ['podID', pod],
      ['containerName', container],
    ] as const)
      if (!v) throw badRequest(`Missing ${what}.`);
    const invalid = invalidPathSegment([
      ['podNamespace', ns],
      ['podID', pod],
      ['containerName', container],
    ]);
    if (invalid) throw badRequest(invalid);
    const options = parseLogQuery(req.query, nowNs(), { splitStreams: opts.splitStreams });
    const ac = new AbortController();
    req.raw.on('close', () => ac.abort());
    reply.raw.on('close', () => ac.abort());
    // The host writes into `body`; the first chunk marks the stream as started.
    let started = false;
    let onFirst!: () => void;
    const first = new Promise<void>((resolve) => {
      onFirst = resolve;
    });
    const body = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        if (!started) {
          started = true;
          onFirst();
        }
        cb(null, chunk);
      },
    });
    const done = opts.host
      .getContainerLogs({
        namespace: ns,
        podName: pod,
        containerName: container,
        options,
        out: body,
        signal: ac.signal,
      })
      .finally(() => {
        if (!body.writableEnded) body.end();
      });
    // Wait for the first byte or the end: errors before any output become a Status reply.
    await Promise.race([first, done.catch(() => undefined)]);
    if (!started) await done;
    done.catch((err) => req.log.warn({ err: String(err) }, 'log stream ended with an error'));
    body.on('close', () => ac.abort());
    ac.signal.addEventListener(
      'abort',
      () => {
        if (!body.destroyed) body.destroy();
      },
      { once: true },
    );
    return reply.type('text/plain').header('Cache-Control', 'no-cache').send(body);
  });
}
