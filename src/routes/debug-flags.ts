/**
 * PUT /debug/flags/v: sets the log verbosity of the running kubelet, as upstream's
 * StringFlagPutHandler(logs.GlogSetter) (enableDebugFlagsHandler, on by default with the debugging
 * handlers). The body is the level as Go's strconv.ParseInt reads it (no spaces, no newline);
 * the answers are upstream's plain-text lines: 200 "successfully set klog.logging.verbosity to 4",
 * 400 for a body that is not an int32, 406 for another method; 405 "flags endpoint is disabled."
 * when the handler is off.
 */
import type { FastifyInstance } from 'fastify';
import { hidden } from './schemas.js';
import { goQuote } from '../lib/go-quote.js';
import { sendPlainText } from '../server/status-errors.js';

const PATH = '/debug/flags/v';
/** Bodies longer than this are refused (413) before they are read: a level is a few digits. */
const BODY_LIMIT = 1024;
const INT32 = 2 ** 31;

/** klog's Level.Set: the level, or upstream's error text. */
export function parseVerbosity(body: string): { ok: true; level: number } | { ok: false; message: string } {
  const fail = (why: string) => ({
    ok: false as const,
    message: `failed set klog.logging.verbosity ${body}: strconv.ParseInt: parsing ${goQuote(body)}: ${why}`,
  });
  if (!/^[+-]?[0-9]+$/.test(body)) return fail('invalid syntax');
  const n = Number(body);
  if (n < -INT32 || n >= INT32) return fail('value out of range');
  return { ok: true, level: n };
}

const schema = {
  summary: 'Set the log verbosity',
  tags: ['debug'],
  description:
    'PUT the level (`--v`) as the body; it applies at once to every log line. Other methods: 406. A debugging endpoint (secure port only).',
  response: {
    200: {
      description: '`successfully set klog.logging.verbosity to <level>`',
      content: { 'text/plain': { schema: { type: 'string' } } },
    },
    400: {
      description: 'The body is not an int32 (strconv.ParseInt).',
      content: { 'text/plain': { schema: { type: 'string' } } },
    },
  },
};

/** Registers the handler; `setVerbosity` applies a level. Disabled: every method answers 405. */
export async function debugFlagsRoutes(
  app: FastifyInstance,
  opts: { enabled: boolean; setVerbosity(level: number): void },
): Promise<void> {
  // Any content type (curl -d sends a form type): the body is read as text, as upstream reads it raw.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: BODY_LIMIT }, (_req, body, done) => done(null, body));
  if (!opts.enabled) {
    app.all(PATH, { schema: hidden }, (_req, reply) => sendPlainText(reply, 405, 'flags endpoint is disabled.'));
    return;
  }
  app.put(PATH, { schema, bodyLimit: BODY_LIMIT }, (req, reply) => {
    const parsed = parseVerbosity(typeof req.body === 'string' ? req.body : '');
    if (!parsed.ok) return sendPlainText(reply, 400, parsed.message);
    opts.setVerbosity(parsed.level);
    return sendPlainText(reply, 200, `successfully set klog.logging.verbosity to ${req.body as string}`);
  });
  app.route({
    method: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
    url: PATH,
    schema: hidden,
    handler: (_req, reply) => sendPlainText(reply, 406, 'unsupported http method'),
  });
}
