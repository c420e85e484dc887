/**
 * The servers' route schemas are documentation: Fastify gets the kubelet's own compilers at
 * construction, so it never loads its default ones (Ajv and fast-json-stringify, ~0.5 MB of
 * source in the heap of every kubelet), and the build leaves them out of dist/. Checked in a fresh
 * process, whose module cache shows what the servers loaded; a route's schema still serves.
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../e2e/helpers.js';

const script = `
import { createRequire } from 'node:module';
import { buildReadOnlyServer } from './src/server/servers.ts';
import { inertHost } from './src/routes/inert-host.ts';
import { silentLogger } from './src/lib/logger.ts';
const app = await buildReadOnlyServer({ host: inertHost(), logger: silentLogger });
await app.listen({ port: 0, host: '127.0.0.1' });
const response = await fetch('http://127.0.0.1:' + app.server.address().port + '/pods');
const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => /node_modules\\/(ajv|@fastify\\/(ajv|fast-json-stringify)-compiler)\\//.test(k));
await app.close();
console.log(JSON.stringify({ status: response.status, body: await response.json(), loaded }));
`;

describe("the servers' schema compilers", () => {
  it('serve routes without loading Ajv or fast-json-stringify', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: repoRoot,
      encoding: 'utf8',
    });
    const result = JSON.parse(out) as { status: number; body: { kind: string }; loaded: string[] };
    expect(result.status).toBe(200);
    expect(result.body.kind).toBe('PodList');
    expect(result.loaded).toEqual([]);
  }, 30_000);
});

describe('the build', () => {
  it("leaves Fastify's default compilers out of dist/", () => {
    const dist = join(repoRoot, 'dist');
    const bundled = readdirSync(dist)
      .filter((f) => f.endsWith('.js'))
      .filter((f) => /\bclass Ajv\b|ajv\/dist\/compile/.test(readFileSync(join(dist, f), 'utf8')));
    expect(bundled).toEqual([]);
  });
});
