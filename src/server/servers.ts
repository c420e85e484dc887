/**
 * The kubelet's HTTP servers (Fastify):
 * - secure (10250, TLS): authn → authz on every request, then all routes incl. debugging ones;
 * - read-only (10255, plain): /pods and /healthz only; debugging paths answer 405;
 * - healthz (10248, plain, loopback by default): /healthz only.
 */
import Fastify, { LogController, type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Logger } from '../lib/logger.js';
import type { KubeletHost } from '../routes/host.js';
import { podsRoutes, runningPodsRoutes } from '../routes/pods.js';
import { healthzRoutes } from '../routes/healthz.js';
import { containerLogsRoutes } from '../routes/container-logs.js';
import { configzRoutes } from '../routes/configz.js';
import { zpagesRoutes, type ZpagesOptions } from '../routes/zpages.js';
import { streamingRoutes } from '../routes/streaming.js';
import { runRoutes } from '../routes/run.js';
import { checkpointRoutes } from '../routes/checkpoint.js';
import { nodeLogsRoutes } from '../routes/node-logs.js';
import { debugFlagsRoutes } from '../routes/debug-flags.js';
import { pprofRoutes, type PprofOptions } from '../routes/pprof.js';
import { createProfiler, type Profiler } from './profiler.js';
import { statsRoutes } from '../routes/stats.js';
import { answerClientError, installErrorHandlers, sendPlainText, sendStatus } from './status-errors.js';
import { hidden } from '../routes/schemas.js';
import type { Server as HttpsServer } from 'node:https';
import type { SecureContextOptions } from 'node:tls';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Authenticator } from './authn/authenticator.js';
import type { Authorizer } from './authz/authorizer.js';
import { authFilter } from './auth-filter.js';
import { audit, runAuditOf } from './audit.js';
import { handleStreamingUpgrade } from './streaming-proxy.js';
import { reloadTlsOnChange, tlsOptions, type TlsFiles } from './tls.js';
import { answerAndClose, applyConnectionLimits } from './limits.js';

/** As Go's TLS server: a plain HTTP request on the TLS port gets a plain-text 400. */
function answerPlainHttpWith400(server: HttpsServer): void {
  server.on('tlsClientError', (err: NodeJS.ErrnoException, tlsSocket: { _parent?: Socket; destroy(): void }) => {
    const raw = tlsSocket._parent;
    if (err.code === 'ERR_SSL_HTTP_REQUEST' && raw && !raw.destroyed)
      answerAndClose(raw, 'HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n');
    else tlsSocket.destroy();
  });
}

function base(
  logger: Logger,
  https?: SecureContextOptions & { requestCert: true; rejectUnauthorized: false },
): FastifyInstance {
  const app = Fastify({
    loggerInstance: logger.child({ component: 'http' }) as never,
    logController: new LogController({ disableRequestLogging: true }),
    // Long enough for any valid path segment (a pod name is up to 253 characters); routes validate lengths with Status
    // errors.
    routerOptions: { maxParamLength: 2048 },
    // Malformed URLs (bad %-escapes, over-long parameters) answer a Kubernetes Status like every other error.
    frameworkErrors: (err: Error, _req: unknown, reply: import('fastify').FastifyReply) =>
      sendStatus(reply, 'BadRequest', err.message),
    // Requests the HTTP parser refuses (headers over the limit, malformed) too.
    clientErrorHandler: answerClientError,
    schemaController: schemasAsDocumentation,
    ...(https ? { https } : {}),
  } as never) as unknown as FastifyInstance;
  installErrorHandlers(app);
  applyConnectionLimits(app.server);
  return app;
}

/**
 * Route schemas are documentation (they generate openapi/); handlers validate with upstream
 * messages. Given as the instance's compilers, so Fastify never loads its default ones (Ajv and
 * fast-json-stringify), which scripts/build.mjs leaves out of the bundle.
 */
/** /debug/pprof's options; the profiler is main's when it started heap sampling early. */
type ProfilingOptions = Omit<PprofOptions, 'profiler'> & { profiler?: Profiler };

export const schemasAsDocumentation = {
  compilersFactory: {
    buildValidator: () => () => () => true,
    buildSerializer: () => () => (data: unknown) => JSON.stringify(data),
  },
  // Fastify types a validator as Ajv's function (with its $async and schema fields).
} as unknown as NonNullable<FastifyServerOptions['schemaController']>;

const debuggingPrefixes = [
  '/containerLogs',
  '/exec',
  '/attach',
  '/portForward',
  '/run',
  '/runningpods',
  '/logs',
  '/configz',
  '/debug',
  '/checkpoint',
];

/** What the secure server needs. */
export interface SecureServerOptions {
  host: KubeletHost;
  logger: Logger;
  tls: TlsFiles;
  authenticator: Authenticator;
  authorizer: Authorizer;
  enableDebuggingHandlers: boolean;
  /** /logs/ (enableSystemLogHandler, default true) and the directory it serves (default /var/log). */
  enableSystemLogHandler?: boolean;
  systemLogDir?: string;
  /** The node log query on /logs/ (enableSystemLogQuery). */
  systemLogQuery?: boolean;
  /** What /configz serves: the effective configuration as v1beta1 (config/configz-view.ts). */
  configz?: Record<string, unknown>;
  /** What /statusz and /flagz show (without the paths, which the server knows). */
  zpages?: Omit<ZpagesOptions, 'paths'>;
  /** /debug/flags/v (enableDebugFlagsHandler) and what sets the log level. */
  debugFlags?: { enabled: boolean; setVerbosity(level: number): void };
  /** /debug/pprof (enableProfilingHandler): the kubelet's own profiles; a profiler of its own without one. */
  profiling?: ProfilingOptions;
  /** How often the TLS files are checked for changes (ms). */
  tlsReloadIntervalMs?: number;
  /** PodLogsQuerySplitStreams (alpha, off in v1.36): /containerLogs' `stream=Stdout|Stderr` picks the lines. */
  splitLogStreams?: boolean;
}

/**
 * The secure server on 10250. Every request, matched route or not:
 *  1. authenticate → 401 `Unauthorized` (no or bad credentials);
 *  2. map to attributes and authorize → 403 `Forbidden (…)`, 500 when the authorizer fails;
 *  3. route.
 */
export async function buildSecureServer(opts: SecureServerOptions): Promise<FastifyInstance> {
  const app = base(opts.logger, await tlsOptions(opts.tls));
  const filter = {
    authenticator: opts.authenticator,
    authorizer: opts.authorizer,
    nodeName: opts.host.nodeName,
    log: opts.logger.child({ component: 'auth' }),
  };
  app.addHook('onRequest', async (req, reply) => {
    const r = await authFilter(filter, {
      method: req.method,
      url: req.url,
      headers: req.headers,
      socket: req.raw.socket,
    });
    if (!r.ok) return reply.code(r.code).type('text/plain; charset=utf-8').send(r.body);
    const run = req.method === 'POST' ? runAuditOf(req.url, r.user) : undefined;
    if (run) audit(opts.logger, { ...run, remote: req.ip });
  });
  answerPlainHttpWith400(app.server as unknown as HttpsServer);
  // Upgraded connections leave the HTTP server's bookkeeping; they are closed with the server.
  const upgraded = new Set<Duplex>();
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    void handleStreamingUpgrade(
      {
        filter,
        host: opts.host,
        enabled: opts.enableDebuggingHandlers,
        log: opts.logger,
        audit: (r) => audit(opts.logger, r),
      },
      req,
      socket as Socket,
      head,
    );
  });
  app.addHook('preClose', async () => {
    for (const s of upgraded) s.destroy();
  });
  const stop = reloadTlsOnChange(app.server as unknown as HttpsServer, opts.tls, {
    logger: opts.logger,
    intervalMs: opts.tlsReloadIntervalMs,
  });
  app.addHook('onClose', async () => stop());
  await secureRoutes(app, opts);
  return app;
}

/** The read-only server on 10255. */
export async function buildReadOnlyServer(opts: { host: KubeletHost; logger: Logger }): Promise<FastifyInstance> {
  const app = base(opts.logger);
  await readOnlyRoutes(app, opts);
  return app;
}

// As upstream (http.Error): plain text, 405.
const debugDisabled = (app: FastifyInstance, path: string) =>
  app.all(path, { schema: hidden }, (_r, reply) => sendPlainText(reply, 405, 'Debug endpoints are disabled.'));

/** The routes of the secure port (no authn/authz: that is the server's hook). */
export async function secureRoutes(
  app: FastifyInstance,
  opts: {
    host: KubeletHost;
    enableDebuggingHandlers: boolean;
    configz?: Record<string, unknown>;
    zpages?: Omit<ZpagesOptions, 'paths'>;
    enableSystemLogHandler?: boolean;
    systemLogDir?: string;
    systemLogQuery?: boolean;
    splitLogStreams?: boolean;
    /** enableDebugFlagsHandler (default on) and what sets the log level. */
    debugFlags?: { enabled: boolean; setVerbosity(level: number): void };
    /** /debug/pprof (enableProfilingHandler, default on). */
    profiling?: ProfilingOptions;
  },
): Promise<void> {
  countRequests(app, opts.host, 'readwrite');
  await app.register(healthzRoutes, { host: opts.host });
  await app.register(podsRoutes, { host: opts.host });
  await app.register(statsRoutes, { host: opts.host });
  if (opts.enableDebuggingHandlers) {
    await app.register(runningPodsRoutes, { host: opts.host });
    await app.register(containerLogsRoutes, { host: opts.host, splitStreams: opts.splitLogStreams });
    await app.register(configzRoutes, { config: opts.configz ?? {} });
    await app.register(streamingRoutes);
    await app.register(runRoutes, { host: opts.host });
    await app.register(checkpointRoutes, { host: opts.host });
    if (opts.enableSystemLogHandler ?? true)
      await app.register(nodeLogsRoutes, {
        root: opts.systemLogDir ?? '/var/log',
        query: opts.systemLogQuery ? {} : undefined,
      });
    await app.register(debugFlagsRoutes, opts.debugFlags ?? { enabled: false, setVerbosity: () => {} });
    const profiler = opts.profiling?.profiler ?? createProfiler();
    await app.register(pprofRoutes, { enabled: false, commandLine: [], ...opts.profiling, profiler });
    // Started once whoever asks first; main asks before the agent starts.
    if (opts.profiling?.enabled) void profiler.startHeapSampling().catch(() => {});
    if (opts.zpages)
      await app.register(zpagesRoutes, {
        ...opts.zpages,
        paths: [...LABELLED_PATHS, 'statusz', 'flagz'].map((p) => `/${p}`),
      });
  } else {
    for (const p of debuggingPrefixes) debugDisabled(app, `${p}/*`);
  }
}

/** The first path segments upstream labels requests with; any other is "other". */
const LABELLED_PATHS = new Set([
  'pods',
  'runningpods',
  'stats',
  'metrics',
  'spec',
  'healthz',
  'containerLogs',
  'logs',
  'configz',
  'run',
  'exec',
  'attach',
  'portForward',
  'debug',
  'checkpoint',
]);

const inflight = Symbol('counted in flight');

/**
 * kubelet_http_requests_total / _duration_seconds when a request is answered, and
 * kubelet_http_inflight_requests from its arrival to its answer (or its client going away):
 * path is the first segment, as upstream labels it.
 */
function countRequests(app: FastifyInstance, host: KubeletHost, serverType: 'readonly' | 'readwrite'): void {
  const labelsOf = (req: FastifyRequest) => {
    const first = req.url.split('?')[0].split('/')[1] ?? '';
    const path = LABELLED_PATHS.has(first) ? first : 'other';
    return {
      method: req.method,
      path,
      serverType,
      longRunning: path === 'containerLogs' && /follow=(true|1)/.test(req.url),
    };
  };
  type Counted = FastifyRequest & { [inflight]?: ReturnType<typeof labelsOf> };
  /** Ends a request's time in flight; its labels, computed once on arrival (undefined: already ended). */
  const done = (req: Counted) => {
    const labels = req[inflight];
    if (labels) host.recordHttpInflight(labels, -1);
    req[inflight] = undefined;
    return labels;
  };
  app.addHook('onRequest', async (req: Counted) => {
    req[inflight] = labelsOf(req);
    host.recordHttpInflight(req[inflight], 1);
  });
  app.addHook('onRequestAbort', async (req) => void done(req));
  app.addHook('onResponse', async (req, reply) => {
    host.recordHttpRequest({ ...(done(req) ?? labelsOf(req)), seconds: reply.elapsedTime / 1000 });
  });
}

/** The routes of the read-only port: /pods and /healthz; debugging paths answer 405. */
export async function readOnlyRoutes(app: FastifyInstance, opts: { host: KubeletHost }): Promise<void> {
  countRequests(app, opts.host, 'readonly');
  await app.register(healthzRoutes, { host: opts.host });
  await app.register(podsRoutes, { host: opts.host });
  await app.register(statsRoutes, { host: opts.host });
  for (const p of debuggingPrefixes) {
    debugDisabled(app, p);
    debugDisabled(app, `${p}/*`);
  }
}

/** The routes of the healthz port (documentation: the port itself is served by healthz-server.ts). */
export async function healthzPortRoutes(app: FastifyInstance, opts: { host: KubeletHost }): Promise<void> {
  await app.register(healthzRoutes, { host: opts.host });
}
