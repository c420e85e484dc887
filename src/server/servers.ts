/**
 * The kubelet's HTTP servers (Fastify):
 * - secure (10250, TLS): authn → authz on every request, then all routes incl. debugging ones;
 * - read-only (10255, plain): /pods and /healthz only; debugging paths answer 405;
 * - healthz (10248, plain, loopback by default): /healthz only.
 */
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { Logger } from '../lib/logger.js';
import type { KubeletHost } from '../routes/host.js';
import { podsRoutes, runningPodsRoutes } from '../routes/pods.js';
import { healthzRoutes } from '../routes/healthz.js';
import { containerLogsRoutes } from '../routes/container-logs.js';
import { installErrorHandlers, sendStatus } from './status-errors.js';
import { hidden } from '../routes/schemas.js';
import type { Authenticator } from './authn/authenticator.js';
import { requestAttributes, type Authorizer } from './authz/authorizer.js';

function base(logger: Logger, https?: { key: Buffer; cert: Buffer; ca?: Buffer }): FastifyInstance {
  const app = Fastify({
    loggerInstance: logger.child({ component: 'http' }) as never,
    logController: new LogController({ disableRequestLogging: true }),
    ...(https ? { https: { key: https.key, cert: https.cert, ca: https.ca, requestCert: true, rejectUnauthorized: false } } : {}),
  } as never) as unknown as FastifyInstance;
  installErrorHandlers(app);
  // Route schemas are documentation (they generate openapi/); handlers validate with upstream messages.
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  return app;
}

const debuggingPrefixes = ['/containerLogs', '/exec', '/attach', '/portForward', '/run', '/runningpods', '/logs', '/configz', '/debug', '/checkpoint'];

/** The secure server on 10250. */
export async function buildSecureServer(opts: { host: KubeletHost; logger: Logger; tls: { key: Buffer; cert: Buffer; ca?: Buffer }; authenticator: Authenticator; authorizer: Authorizer; enableDebuggingHandlers: boolean }): Promise<FastifyInstance> {
  const app = base(opts.logger, opts.tls);
  app.addHook('onRequest', async (req, reply) => {
    const user = await opts.authenticator.authenticate(req);
    if (!user) return reply.code(401).type('text/plain; charset=utf-8').send('Unauthorized');
    const attrs = requestAttributes(user, req.method, req.url, opts.host.nodeName);
    const d = await opts.authorizer.authorize(attrs);
    if (!d.allowed) {
      return reply.code(403).type('text/plain; charset=utf-8').send(`Forbidden (user=${user.name}, verb=${attrs.verb}, resource=${attrs.resource}, subresource(s)=[${attrs.subresource}])`);
    }
  });
  await secureRoutes(app, opts);
  return app;
}

/** The read-only server on 10255. */
export async function buildReadOnlyServer(opts: { host: KubeletHost; logger: Logger }): Promise<FastifyInstance> {
  const app = base(opts.logger);
  await readOnlyRoutes(app, opts);
  return app;
}

/** The healthz server on 10248. */
export async function buildHealthzServer(opts: { host: KubeletHost; logger: Logger }): Promise<FastifyInstance> {
  const app = base(opts.logger);
  await healthzPortRoutes(app, opts);
  return app;
}

const debugDisabled = (app: FastifyInstance, path: string) => app.all(path, { schema: hidden }, (_r, reply) => sendStatus(reply, 'MethodNotAllowed', 'Debug endpoints are disabled.'));

/** The routes of the secure port (no authn/authz: that is the server's hook). */
export async function secureRoutes(app: FastifyInstance, opts: { host: KubeletHost; enableDebuggingHandlers: boolean }): Promise<void> {
  await app.register(healthzRoutes, { host: opts.host });
  await app.register(podsRoutes, { host: opts.host });
  if (opts.enableDebuggingHandlers) {
    await app.register(runningPodsRoutes, { host: opts.host });
    await app.register(containerLogsRoutes, { host: opts.host });
  } else {
    for (const p of debuggingPrefixes) debugDisabled(app, `${p}/*`);
  }
}

/** The routes of the read-only port: /pods and /healthz; debugging paths answer 405. */
export async function readOnlyRoutes(app: FastifyInstance, opts: { host: KubeletHost }): Promise<void> {
  await app.register(healthzRoutes, { host: opts.host });
  await app.register(podsRoutes, { host: opts.host });
  for (const p of debuggingPrefixes) { debugDisabled(app, p); debugDisabled(app, `${p}/*`); }
}

/** The routes of the healthz port. */
export async function healthzPortRoutes(app: FastifyInstance, opts: { host: KubeletHost }): Promise<void> {
  await app.register(healthzRoutes, { host: opts.host });
}
