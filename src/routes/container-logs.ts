/**
 * GET /containerLogs/{podNamespace}/{podID}/{containerName}: a container's logs, chunked and
 * flushed on every write; `follow` streams until the container's log ends or the client leaves.
 * Errors before the first byte are Status JSON (400/404/422); path segments are validated.
 */
import type { FastifyInstance } from 'fastify';
import { PassThrough, Writable } from 'node:stream';
import { badRequest } from '../lib/errors.js';
import { nowNs } from '../lib/time.js';
import { parseLogQuery } from './container-logs-query.js';
import type { KubeletHost } from './host.js';

const segment = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** Registers /containerLogs. */
export async function containerLogsRoutes(app: FastifyInstance, opts: { host: KubeletHost }): Promise<void> {
  app.get<{ Params: { ns: string; pod: string; container: string }; Querystring: Record<string, string | string[]> }>(
    '/containerLogs/:ns/:pod/:container',
    async (req, reply) => {
      const { ns, pod, container } = req.params;
      for (const [what, v] of [['podNamespace', ns], ['podID', pod], ['containerName', container]] as const) {
        if (!v) throw badRequest(`Missing ${what}.`);
        if (!segment.test(v) || v.length > 253) throw badRequest(`invalid ${what} "${v}"`);
      }
      const options = parseLogQuery(req.query, nowNs());
      const ac = new AbortController();
      req.raw.on('close', () => ac.abort());
      reply.raw.on('close', () => ac.abort());
      const body = new PassThrough();
      let started = false;
      let onFirst!: () => void;
      const first = new Promise<void>((resolve) => { onFirst = resolve; });
      const out = new Writable({
        write(chunk: Buffer, _enc, cb) {
          started = true;
          onFirst();
          if (body.write(chunk)) cb();
          else { const go = () => { body.off('close', go); body.off('drain', go); cb(); }; body.once('drain', go); body.once('close', go); }
        },
        final(cb) { body.end(); cb(); },
      });
      const done = opts.host.getContainerLogs({ namespace: ns, podName: pod, containerName: container, options, out, signal: ac.signal }).finally(() => { if (!out.writableEnded) out.end(); });
      // Wait for the first byte or the end: errors before any output become a Status reply.
      await Promise.race([first, done.catch(() => undefined)]);
      if (!started) await done;
      done.catch((err) => req.log.warn({ err: String(err) }, 'log stream ended with an error'));
      body.on('close', () => ac.abort());
      return reply.type('text/plain').header('Cache-Control', 'no-cache').send(body);
    },
  );
}
