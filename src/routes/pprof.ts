/**
 * /debug/pprof on the secure port, as upstream's profiling handler (enableProfilingHandler, on by
 * default with the debugging handlers) answers it for the profiles a Node.js process has:
 * `profile` (CPU, `?seconds=`, 30 by default), `heap` (live objects; `?gc=1` collects the garbage
 * first), `cmdline`, and the index.
 * Profiles are Go's pprof format, so `go tool pprof https+insecure://…/debug/pprof/profile` or
 * `kubectl get --raw /api/v1/nodes/<node>/proxy/debug/pprof/heap > heap.pb.gz` work as with the Go
 * kubelet. Go's runtime profiles (goroutine, block, mutex, threadcreate, allocs, trace, symbol)
 * answer as an unknown profile does upstream: 404 `Unknown profile`. Disabled: 405
 * `profiling endpoint is disabled.`
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { hidden } from './schemas.js';
import { CpuProfileBusyError, type Profiler } from '../server/profiler.js';
import { sendPlainText } from '../server/status-errors.js';

const BASE = '/debug/pprof';
/** The kubelet server's WriteTimeout upstream (4 h): a longer profile is refused, as Go's pprof refuses it. */
const MAX_PROFILE_SECONDS = 4 * 60 * 60;
const DEFAULT_PROFILE_SECONDS = 30;

const DESCRIPTIONS: Record<string, string> = {
  cmdline: 'The command line invocation of the current program',
  heap: 'A sampling of memory allocations of live objects.',
  profile:
    'CPU profile. You can specify the duration in the seconds GET parameter. After you get the profile file, use the go tool pprof command to investigate the profile.',
};

/** Go's pprof reading of `seconds` and `gc` (strconv.Atoi): the integer when above 0, else 0. */
export function positiveInteger(value: string | undefined): number {
  const parsed = /^[+-]?\d+$/.test(value ?? '') ? Number(value) : 0;
  return parsed > 0 ? parsed : 0;
}

/** The index page (Go's pprof.Index, for the profiles there are). */
export function indexPage(): string {
  const rows = Object.keys(DESCRIPTIONS)
    .map((name) => `<tr><td><a href='${name}'>${name}</a></td></tr>`)
    .join('\n');
  const descriptions = Object.entries(DESCRIPTIONS)
    .map(([name, text]) => `<li><div class=profile-name>${name}: </div> ${text}</li>`)
    .join('\n');
  return `<html>
<head>
<title>/debug/pprof/</title>
</head>
<body>
/debug/pprof/
<br>
Types of profiles available:
<table>
<thead><td>Profile</td></thead>
${rows}
</table>
<br>
<p>
Profile Descriptions:
<ul>
${descriptions}
</ul>
</p>
</body>
</html>
`;
}

/** As Go's pprof serveError. */
function pprofError(reply: FastifyReply, code: number, message: string): FastifyReply {
  return sendPlainText(reply.header('X-Go-Pprof', '1'), code, message);
}

function sendProfile(reply: FastifyReply, name: string, body: Buffer): FastifyReply {
  return reply
    .code(200)
    .header('X-Content-Type-Options', 'nosniff')
    .header('Content-Disposition', `attachment; filename="${name}"`)
    .type('application/octet-stream')
    .send(body);
}

const schema = {
  summary: 'Profiles of the kubelet (pprof)',
  tags: ['debug'],
  description:
    '`profile` (CPU, `?seconds=`, default 30, at most 14400), `heap` (live objects; `?gc=1` collects the garbage first), `cmdline`; the index without a name. Go pprof format (gzip). Other names: 404 `Unknown profile`. A debugging endpoint (secure port only); `enableProfilingHandler: false` answers 405.',
  response: {
    200: {
      description: 'The profile (pprof, gzip), the command line (NUL-separated) or the index (HTML).',
      content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    },
    404: { description: '`Unknown profile`', content: { 'text/plain': { schema: { type: 'string' } } } },
  },
};

/** What /debug/pprof serves: whether it is on, the profiler, and the command line `cmdline` shows. */
export interface PprofOptions {
  enabled: boolean;
  profiler: Profiler;
  commandLine: readonly string[];
}

/** Registers /debug/pprof and its profiles; disabled, every method answers 405. */
export async function pprofRoutes(app: FastifyInstance, opts: PprofOptions): Promise<void> {
  if (!opts.enabled) {
    for (const path of [BASE, `${BASE}/*`])
      app.all(path, { schema: hidden }, (_req, reply) => sendPlainText(reply, 405, 'profiling endpoint is disabled.'));
    return;
  }
  const index = (_req: unknown, reply: FastifyReply) => reply.type('text/html; charset=utf-8').send(indexPage());
  app.get(BASE, { schema: hidden }, index);
  app.get<{ Params: { '*': string }; Querystring: { seconds?: string; gc?: string } }>(
    `${BASE}/*`,
    { schema },
    async (req, reply) => {
      const name = req.params['*'];
      if (name === '') return index(req, reply);
      if (name === 'cmdline')
        return reply
          .header('X-Content-Type-Options', 'nosniff')
          .type('text/plain; charset=utf-8')
          .send(opts.commandLine.join('\u0000'));
      // Go's gc: an integer above 0 collects the garbage first, so the profile holds only what is live.
      if (name === 'heap')
        return sendProfile(
          reply,
          'heap',
          await opts.profiler.heap({ collectGarbage: positiveInteger(req.query.gc) > 0 }),
        );
      if (name !== 'profile') return pprofError(reply, 404, 'Unknown profile');
      const seconds = positiveInteger(req.query.seconds) || DEFAULT_PROFILE_SECONDS;
      if (seconds > MAX_PROFILE_SECONDS)
        return pprofError(reply, 400, "profile duration exceeds server's WriteTimeout");
      // The profile ends early when the client goes, as Go's does.
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      try {
        return sendProfile(reply, 'profile', await opts.profiler.cpu(seconds, gone.signal));
      } catch (err) {
        if (err instanceof CpuProfileBusyError)
          return pprofError(reply, 500, `Could not enable CPU profiling: ${err.message}`);
        throw err;
      }
    },
  );
}
