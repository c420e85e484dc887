/**
 * The OpenAPI 3.1 document of the node API, generated from the route schemas: each port's
 * routes are registered on a bare Fastify instance with an inert host, collected with the
 * onRoute hook and turned into paths. `openapi/node-api.json` is this output, checked in; a test
 * fails when it drifts.
 */
import Fastify, { type FastifyInstance, type RouteOptions } from 'fastify';
import { inertHost } from '../routes/inert-host.js';
import { componentSchemas } from '../routes/schemas.js';
import { healthzPortRoutes, readOnlyRoutes, schemasAsDocumentation, secureRoutes } from './servers.js';

const host = inertHost();

interface Collected {
  method: string;
  url: string;
  schema: Record<string, unknown>;
  port: string;
}

async function collect(port: string, register: (app: FastifyInstance) => Promise<void>): Promise<Collected[]> {
  const app = Fastify({ schemaController: schemasAsDocumentation });
  const out: Collected[] = [];
  app.addHook('onRoute', (r: RouteOptions) => {
    const schema = (r.schema ?? {}) as Record<string, unknown>;
    if (schema.hide) return;
    for (const method of [r.method].flat())
      if (method !== 'HEAD') out.push({ method: method.toLowerCase(), url: r.url, schema, port });
  });
  await register(app);
  await app.ready();
  await app.close();
  return out;
}

/** Routes that lack a schema (neither documented nor hidden): a test asserts there are none. */
export async function undocumentedRoutes(): Promise<string[]> {
  return (await allRoutes())
    .filter((r) => !r.schema.summary)
    .map((r) => `${r.method.toUpperCase()} ${r.url} (${r.port})`);
}

async function allRoutes(): Promise<Collected[]> {
  return [
    ...(await collect('10250', (app) =>
      secureRoutes(app, {
        host: host,
        enableDebuggingHandlers: true,
        debugFlags: { enabled: true, setVerbosity: () => {} },
        profiling: { enabled: true, commandLine: [] },
        zpages: {
          component: 'kubelet',
          binaryVersion: '',
          runtimeVersion: '',
          startedAtMs: 0,
          nowMs: () => 0,
          flags: {},
        },
      }),
    )),
    ...(await collect('10255', (app) => readOnlyRoutes(app, { host }))),
    ...(await collect('10248', (app) => healthzPortRoutes(app, { host }))),
  ];
}

const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

function parameters(schema: Record<string, unknown>): unknown[] {
  const out: unknown[] = [];
  for (const [where, key] of [
    ['path', 'params'],
    ['query', 'querystring'],
  ] as const) {
    const s = schema[key] as { properties?: Record<string, unknown>; required?: string[] } | undefined;
    for (const [name, prop] of Object.entries(s?.properties ?? {})) {
      const { description, ...rest } = prop as { description?: string };
      out.push({
        name,
        in: where,
        required: where === 'path' || (s?.required ?? []).includes(name),
        ...(description ? { description } : {}),
        schema: rest,
      });
    }
  }
  return out;
}

/** Builds the document. */
export async function buildOpenApiDocument(version: string): Promise<Record<string, unknown>> {
  const paths: Record<string, Record<string, Record<string, unknown>>> = {};
  for (const r of await allRoutes()) {
    const path = toOpenApiPath(r.url);
    const op = (paths[path] ??= {})[r.method];
    if (op) {
      (op['x-ports'] as string[]).push(r.port);
      continue;
    }
    const { summary, description, tags, response } = r.schema as {
      summary?: string;
      description?: string;
      tags?: string[];
      response?: Record<string, unknown>;
    };
    const params = parameters(r.schema);
    paths[path][r.method] = {
      summary,
      ...(description ? { description } : {}),
      ...(tags ? { tags } : {}),
      ...(params.length ? { parameters: params } : {}),
      responses: {
        ...response,
        ...(r.port === '10250'
          ? {
              401: { description: 'No valid credentials.' },
              403: {
                description:
                  'Denied by the authorizer: Forbidden (user=…, verb=…, resource=nodes, subresource(s)=[…]).',
              },
            }
          : {}),
      },
      'x-ports': [r.port],
    };
  }
  const sorted = Object.fromEntries(
    Object.keys(paths)
      .sort()
      .map((p) => [p, paths[p]]),
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'tskubelet node API',
      version,
      description:
        'The kubelet HTTP API. x-ports lists the ports serving each operation: 10250 (TLS; x509 client certificates, authorization per request), 10255 (read-only, plain HTTP), 10248 (healthz, loopback).',
    },
    servers: [
      { url: 'https://{node}:10250', variables: { node: { default: 'localhost' } } },
      { url: 'http://{node}:10255', variables: { node: { default: 'localhost' } } },
    ],
    components: {
      schemas: componentSchemas,
      securitySchemes: {
        clientCertificate: {
          type: 'mutualTLS',
          description: 'An x509 client certificate signed by authentication.x509.clientCAFile.',
        },
      },
    },
    paths: sorted,
  };
}
