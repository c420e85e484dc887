/**
 * GET /logs/ and /logs/{path}: the node's log directory (upstream: http.FileServer over
 * /var/log): a directory answers an HTML listing (`<pre><a href="…">…</a></pre>`), a file its
 * bytes. Paths never leave the directory: `..`, NUL and symlinks pointing outside are refused
 * (404, as a missing file), which is stricter than upstream for symlinks.
 *
 * With the node log query on (enableSystemLogQuery; the NodeLogQuery gate, GA in v1.36, not turned
 * off), `GET /logs/?query=…` answers service logs (journald, else files by name) or one file, as
 * upstream: a bad parameter is 400, a query that breaks a rule (or names a path besides its query)
 * 406, with upstream's plain-text messages; a request without query parameters is the file server
 * above.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createReadStream } from 'node:fs';
import { PassThrough, type Writable } from 'node:stream';
import { constants as zlib, createGzip } from 'node:zlib';
import { readdir, stat } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { textResponse } from './schemas.js';
import { compareStrings } from '../lib/compare.js';
import { resolveInside } from '../lib/fs-util.js';
import { aggregateMessage } from '../lib/aggregate-message.js';
import { parseNodeLogQuery, validateNodeLogQuery, type NodeLogQuery, type QueryParams } from './node-log-query.js';
import { copyServiceLogs, type JournalSources } from './node-log-journal.js';

const schema = {
  summary: 'Node log files (a debugging endpoint, secure port only)',
  tags: ['logs'],
  params: {
    type: 'object',
    properties: {
      '*': { type: 'string', description: 'A path below the log directory; a directory answers a listing.' },
    },
  },
  // Untyped: upstream reads the first value of a repeated parameter and answers its own errors.
  querystring: {
    type: 'object',
    description: 'The node log query (enableSystemLogQuery; otherwise ignored).',
    properties: {
      query: {
        description:
          'Services (journald units, else files by name) or one file (a value with a slash); repeatable, at most 4 services.',
      },
      sinceTime: { description: 'RFC 3339 time from which to show service logs.' },
      untilTime: { description: 'RFC 3339 time until which to show service logs.' },
      tailLines: { description: 'The last N lines of service logs (0 to 100000).' },
      boot: { description: 'The boot to read: 0 the current one, -1 the one before, …' },
      pattern: { description: 'A regular expression service log lines must match (journalctl --grep).' },
    },
  },
  response: {
    200: {
      description: "A file's bytes (text/plain) or a directory listing (text/html).",
      content: { 'text/plain': { schema: { type: 'string' } }, 'text/html': { schema: { type: 'string' } } },
    },
    301: { description: 'A directory asked without its trailing slash.' },
    400: textResponse("A query parameter that does not parse (upstream's field error)."),
    404: textResponse('"404 page not found"'),
    406: textResponse('A query that breaks a rule, or a path given besides a query.'),
  },
};

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Go's http.Error: the message and a newline, as plain text. */
const httpError = (reply: FastifyReply, code: number, message: string) =>
  reply.code(code).type('text/plain; charset=utf-8').header('X-Content-Type-Options', 'nosniff').send(`${message}\n`);

/** What stat says of the file a query names (securejoin'd under `root`), in Go's words; undefined when it exists. */
async function statProblem(root: string, file: string): Promise<string | undefined> {
  const full = join(root, posix.normalize(`/${file.replaceAll('\\', '/')}`));
  const err = await stat(full).then(
    () => undefined,
    (e: NodeJS.ErrnoException) => e,
  );
  if (!err) return undefined;
  const reason: Record<string, string> = {
    ENOENT: 'no such file or directory',
    ENOTDIR: 'not a directory',
    EACCES: 'permission denied',
    ENAMETOOLONG: 'file name too long',
    ERR_INVALID_ARG_VALUE: 'invalid argument',
  };
  return `stat ${JSON.stringify(full).slice(1, -1)}: ${reason[err.code ?? ''] ?? 'invalid argument'}`;
}

/** Answers service logs: journald's or their files', gzip-compressed when asked (upstream's journalServer). */
function serveServices(
  req: FastifyRequest,
  reply: FastifyReply,
  q: NodeLogQuery,
  journal: JournalSources,
): FastifyReply {
  const gzip = req.headers['accept-encoding'] === 'gzip';
  const out: Writable = gzip ? createGzip({ level: zlib.Z_BEST_SPEED }) : new PassThrough();
  const gone = new AbortController();
  reply.raw.on('close', () => gone.abort());
  copyServiceLogs(q, out, journal, gone.signal)
    .catch((err: unknown) => out.write(`\nerror: ${String(err)}\n`))
    .finally(() => out.end());
  if (gzip) reply.header('Content-Encoding', 'gzip');
  return reply.type('text/plain;charset=UTF-8').send(out);
}

/** Registers /logs and /logs/* over `root`; `query` turns the node log query on. */
export async function nodeLogsRoutes(
  app: FastifyInstance,
  opts: { root: string; query?: { journalctl?: string } },
): Promise<void> {
  const notFound = (reply: FastifyReply) =>
    reply.code(404).type('text/plain; charset=utf-8').send('404 page not found\n');
  const { params: _params, ...rootSchema } = schema;
  const journal: JournalSources = { logDir: opts.root, journalctl: opts.query?.journalctl ?? 'journalctl' };
  app.get('/logs', { schema: rootSchema }, async (_req, reply) => reply.redirect('/logs/', 301));
  app.get<{ Params: { '*': string } }>('/logs/*', { schema }, async (req, reply) => {
    let rel = req.params['*'] ?? '';
    if (opts.query) {
      const { query, errors } = parseNodeLogQuery(req.query as QueryParams);
      if (errors.length) return httpError(reply, 400, aggregateMessage(errors));
      if (query) {
        if (rel !== '' && rel !== '/') return httpError(reply, 406, 'path not allowed in query mode');
        const invalid = validateNodeLogQuery(
          query,
          query.files.length === 1 ? await statProblem(opts.root, query.files[0]) : undefined,
        );
        if (invalid.length) return httpError(reply, 406, aggregateMessage(invalid));
        if (query.services.length) return serveServices(req, reply, query, journal);
        rel = query.files[0].replaceAll('\\', '/');
      }
    }
    const target = await resolveInside(opts.root, rel);
    if (!target) return notFound(reply);
    const st = await stat(target).catch(() => undefined);
    if (!st) return notFound(reply);
    if (st.isDirectory()) {
      if (rel && !rel.endsWith('/')) return reply.redirect(`${posix.basename(rel)}/`, 301);
      const entries = (await readdir(target, { withFileTypes: true })).sort((a, b) => compareStrings(a.name, b.name));
      const links = entries.map((e) => {
        const n = e.isDirectory() ? `${e.name}/` : e.name;
        return `<a href="${escapeHtml(encodeURI(n))}">${escapeHtml(n)}</a>`;
      });
      return reply
        .type('text/html; charset=utf-8')
        .send(`<pre>\n${links.join('\n')}${links.length ? '\n' : ''}</pre>\n`);
    }
    if (!st.isFile()) return notFound(reply);
    // Exactly the size stated in Content-Length, even while the file grows.
    if (st.size === 0) return reply.type('text/plain; charset=utf-8').header('Content-Length', 0).send('');
    return reply
      .type('text/plain; charset=utf-8')
      .header('Content-Length', st.size)
      .send(createReadStream(target, { start: 0, end: st.size - 1 }));
  });
}
