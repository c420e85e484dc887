/**
 * GET /logs/ and /logs/{path}: the node's log directory (upstream: http.FileServer over
 * /var/log): a directory answers an HTML listing (`<pre><a href="…">…</a></pre>`), a file its
 * bytes. Paths never leave the directory: `..`, NUL and symlinks pointing outside are refused
 * (404, as a missing file), which is stricter than upstream for symlinks.
 */
import type { FastifyInstance } from 'fastify';
import { createReadStream } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { join, posix, sep } from 'node:path';
import { textResponse } from './schemas.js';
import { compareStrings } from '../lib/compare.js';

const schema = {
  summary: 'Node log files (a debugging endpoint, secure port only)',
  tags: ['logs'],
  params: { type: 'object', properties: { '*': { type: 'string', description: 'A path below the log directory; a directory answers a listing.' } } },
  response: {
    200: {
      description: "A file's bytes (text/plain) or a directory listing (text/html).",
      content: { 'text/plain': { schema: { type: 'string' } }, 'text/html': { schema: { type: 'string' } } },
    },
    301: { description: 'A directory asked without its trailing slash.' },
    404: textResponse('"404 page not found"'),
  },
};

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Resolves a request path inside `root`, or undefined when it would leave it (pure but for realpath). */
export async function resolveInside(root: string, requested: string): Promise<string | undefined> {
  if (requested.includes('\0')) return undefined;
  const clean = posix.normalize(`/${requested}`);
  if (clean.split('/').includes('..')) return undefined;
  const rootReal = await realpath(root).catch(() => undefined);
  if (!rootReal) return undefined;
  const target = await realpath(join(rootReal, clean)).catch(() => undefined);
  if (!target || (target !== rootReal && !target.startsWith(rootReal + sep))) return undefined;
  return target;
}

/** Registers /logs and /logs/* over `root`. */
export async function nodeLogsRoutes(app: FastifyInstance, opts: { root: string }): Promise<void> {
  const notFound = (reply: import('fastify').FastifyReply) => reply.code(404).type('text/plain; charset=utf-8').send('404 page not found\n');
  const { params: _params, ...rootSchema } = schema;
  app.get('/logs', { schema: rootSchema }, async (_req, reply) => reply.redirect('/logs/', 301));
  app.get<{ Params: { '*': string } }>('/logs/*', { schema }, async (req, reply) => {
    const rel = req.params['*'] ?? '';
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
      return reply.type('text/html; charset=utf-8').send(`<pre>\n${links.join('\n')}${links.length ? '\n' : ''}</pre>\n`);
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
