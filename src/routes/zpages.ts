/**
 * GET /statusz and /flagz, component-base's z-pages as the kubelet serves them (debugging handlers,
 * secure port; authorized as nodes/statusz and nodes/flagz): plain text for people, with a warning
 * that it is not machine parseable and a separator chosen at random per process so scripts do not
 * come to depend on it; for programs, the structured page (`config.k8s.io` `Statusz` / `Flagz`,
 * v1alpha1 since v1.35 and v1beta1, as JSON or YAML) to an Accept that names its group, version and
 * kind. A request that accepts neither gets 406 (plain `application/json` included, as upstream).
 */
import { rfc3339 } from '../lib/time.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomInt } from 'node:crypto';
import { stringify as stringifyYaml } from 'yaml';
import { sendPlainText } from '../server/status-errors.js';

const DELIMITERS = [':', ': ', '=', ' '];
const WARNING =
  'Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.';
const NOT_ACCEPTABLE = 'media type not acceptable, must be: text/plain';

/** What the pages show. */
export interface ZpagesOptions {
  /** The component's name in the header (`kubelet`). */
  component: string;
  /** The Kubernetes version it stands in for, without the `v` (`1.36.2`). */
  binaryVersion: string;
  /** The runtime in the place of Go's version (`node v20.…`). */
  runtimeVersion: string;
  startedAtMs: number;
  nowMs: () => number;
  /** The top-level paths served (`/pods`, `/stats`, …). */
  paths: string[];
  /** Flag name → value in effect (config/flagz.ts). */
  flags: Record<string, string>;
}

/**
 * Whether an Accept header admits text/plain without parameters other than charset=utf-8 (upstream
 * AcceptableMediaType).
 */
export function acceptsPlainText(accept: string | undefined): boolean {
  if (!accept) return true;
  return accept.split(',').some((entry) => {
    const [type = '', ...params] = entry.split(';').map((part) => part.trim());
    const [major, minor] = type.toLowerCase().split('/');
    if (!((major === 'text' || major === '*') && (minor === 'plain' || minor === '*'))) return false;
    const named = params.filter((p) => !/^q=/i.test(p));
    return named.length === 0 || (named.length === 1 && /^charset=utf-8$/i.test(named[0]));
  });
}

/** The versions of the structured pages served (`application/json;v=…;g=config.k8s.io;as=…`). */
const STRUCTURED_VERSIONS = ['v1alpha1', 'v1beta1'];
const STRUCTURED_GROUP = 'config.k8s.io';
/** The media types of the structured pages (YAML since v1.36, kubernetes/kubernetes#135309). */
const STRUCTURED_FORMATS = new Map<string, 'json' | 'yaml'>([
  ['application/json', 'json'],
  ['application/yaml', 'yaml'],
]);

/**
 * What an Accept header gets for the page of `kind` (`Statusz`, `Flagz`): its entries in order,
 * the first one served wins — the structured page in the version it names, or text. Undefined:
 * none is served (406). Pure.
 */
export function negotiateZpage(
  accept: string | undefined,
  kind: 'Statusz' | 'Flagz',
): { format: 'text' } | { format: 'json' | 'yaml'; version: string } | undefined {
  if (!accept) return { format: 'text' };
  for (const entry of accept.split(',')) {
    if (acceptsPlainText(entry)) return { format: 'text' };
    const [type = '', ...params] = entry.split(';').map((part) => part.trim());
    const format = STRUCTURED_FORMATS.get(type.toLowerCase());
    if (!format) continue;
    const named = new Map(params.map((p) => p.split('=').map((x) => x.trim()) as [string, string]));
    const version = named.get('v');
    if (
      named.get('g') === STRUCTURED_GROUP &&
      named.get('as') === kind &&
      version &&
      STRUCTURED_VERSIONS.includes(version)
    )
      return { format, version };
  }
  return undefined;
}

/** The top-level paths served, each once, sorted (`/pods`, `/stats`, …). Pure. */
const topLevelPaths = (paths: readonly string[]) => [...new Set(paths.map((p) => `/${p.split('/')[1]}`))].sort();

/** The structured /statusz (config.k8s.io Statusz). Pure. */
export function statuszObject(o: ZpagesOptions, version: string): object {
  const [major, minor] = o.binaryVersion.split('.');
  return {
    kind: 'Statusz',
    apiVersion: `${STRUCTURED_GROUP}/${version}`,
    metadata: { name: o.component },
    startTime: rfc3339(o.startedAtMs),
    uptimeSeconds: Math.floor((o.nowMs() - o.startedAtMs) / 1000),
    goVersion: o.runtimeVersion,
    binaryVersion: o.binaryVersion,
    emulationVersion: `${major}.${minor}`,
    paths: topLevelPaths(o.paths),
  };
}

/** The structured /flagz (config.k8s.io Flagz): flag name → value. Pure. */
export function flagzObject(o: Pick<ZpagesOptions, 'component' | 'flags'>, version: string): object {
  return {
    kind: 'Flagz',
    apiVersion: `${STRUCTURED_GROUP}/${version}`,
    metadata: { name: o.component },
    flags: Object.fromEntries(
      Object.keys(o.flags)
        .sort()
        .map((name) => [name, o.flags[name]]),
    ),
  };
}

/** Go's time.UnixDate layout in UTC: `Mon Jan _2 15:04:05 UTC 2006`. Pure. */
export function unixDate(ms: number): string {
  const d = new Date(ms);
  const day = d.toUTCString().slice(0, 3);
  const month = d.toUTCString().slice(8, 11);
  const date = String(d.getUTCDate()).padStart(2, ' ');
  const time = d.toISOString().slice(11, 19);
  return `${day} ${month} ${date} ${time} UTC ${d.getUTCFullYear()}`;
}

/** Upstream's uptime text: `0 hr 00 min 30 sec`. Pure. */
export function uptimeText(seconds: number): string {
  const s = Math.floor(seconds);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${Math.floor(s / 3600)} hr ${two(Math.floor(s / 60) % 60)} min ${two(s % 60)} sec`;
}

/** The /statusz body. Pure. */
export function statuszText(o: ZpagesOptions, delimiter: string): string {
  const [major, minor] = o.binaryVersion.split('.');
  const paths = topLevelPaths(o.paths).join(' ');
  return [
    '',
    `${o.component} statusz`,
    WARNING,
    '',
    `Started${delimiter} ${unixDate(o.startedAtMs)}`,
    `Up${delimiter} ${uptimeText((o.nowMs() - o.startedAtMs) / 1000)}`,
    `Go version${delimiter} ${o.runtimeVersion}`,
    `Binary version${delimiter} ${o.binaryVersion}`,
    `Emulation version${delimiter} ${major}.${minor}`,
    `Paths${delimiter} ${paths}`,
    '',
  ].join('\n');
}

/** The /flagz body: each flag and its value, sorted by name. Pure. */
export function flagzText(o: Pick<ZpagesOptions, 'component' | 'flags'>, delimiter: string): string {
  const lines = Object.keys(o.flags)
    .sort()
    .map((name) => `${name}${delimiter}${o.flags[name]}`);
  return ['', `${o.component} flags`, WARNING, '', ...lines, ''].join('\n');
}

const schema = (summary: string, kind: string) => ({
  summary,
  tags: ['debug'],
  description: `Plain text for people, not machine parseable (the separator changes between runs); the structured page to \`Accept: application/json;v=v1beta1;g=config.k8s.io;as=${kind}\` (or v1alpha1; application/yaml alike). A debugging endpoint (secure port only).`,
  response: {
    200: {
      description: summary,
      content: {
        'text/plain': { schema: { type: 'string' } },
        'application/json': { schema: { type: 'object' } },
        'application/yaml': { schema: { type: 'string' } },
      },
    },
  },
});

/** Registers /statusz and /flagz. */
export async function zpagesRoutes(app: FastifyInstance, opts: ZpagesOptions): Promise<void> {
  const delimiter = DELIMITERS[randomInt(DELIMITERS.length)];
  const flagz = flagzText(opts, delimiter);
  const page =
    (kind: 'Statusz' | 'Flagz', text: () => string, structured: (version: string) => object) =>
    (req: FastifyRequest, reply: FastifyReply) => {
      const served = negotiateZpage(req.headers.accept, kind);
      if (!served) return sendPlainText(reply, 406, NOT_ACCEPTABLE);
      if (served.format === 'json')
        return reply.type('application/json').send(JSON.stringify(structured(served.version)));
      // As sigs.k8s.io/yaml writes an object: its keys sorted.
      if (served.format === 'yaml')
        return reply.type('application/yaml').send(stringifyYaml(structured(served.version), { sortMapEntries: true }));
      return reply.type('text/plain; charset=utf-8').send(text());
    };
  app.get(
    '/statusz',
    { schema: schema('The component’s status', 'Statusz') },
    page(
      'Statusz',
      () => statuszText(opts, delimiter),
      (version) => statuszObject(opts, version),
    ),
  );
  app.get(
    '/flagz',
    { schema: schema('The flags in effect', 'Flagz') },
    page(
      'Flagz',
      () => flagz,
      (version) => flagzObject(opts, version),
    ),
  );
}
