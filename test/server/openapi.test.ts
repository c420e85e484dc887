/** openapi/node-api.json is generated from the route schemas; it must not drift. */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApiDocument, undocumentedRoutes } from '../../src/server/openapi.js';
import { TSKUBELET_VERSION } from '../../src/version.js';

describe('openapi/node-api.json', () => {
  it('matches what the route schemas generate (run `npm run openapi` after changing a route)', async () => {
    const checkedIn = JSON.parse(
      readFileSync(join(import.meta.dirname, '..', '..', 'openapi', 'node-api.json'), 'utf8'),
    );
    expect(checkedIn).toEqual(await buildOpenApiDocument(TSKUBELET_VERSION));
  });
  it('has every route documented or explicitly hidden', async () => {
    expect(await undocumentedRoutes()).toEqual([]);
  });
  it('documents the log query parameters and the ports each path is on', async () => {
    const doc = (await buildOpenApiDocument('x')) as {
      paths: Record<string, Record<string, { parameters?: { name: string; in: string }[]; 'x-ports': string[] }>>;
    };
    const logs = doc.paths['/containerLogs/{podNamespace}/{podID}/{containerName}'].get;
    expect(
      logs
        .parameters!.filter((p) => p.in === 'query')
        .map((p) => p.name)
        .sort(),
    ).toEqual(['follow', 'limitBytes', 'previous', 'sinceSeconds', 'sinceTime', 'tail', 'tailLines', 'timestamps']);
    expect(logs['x-ports']).toEqual(['10250']);
    expect(doc.paths['/pods'].get['x-ports']).toEqual(['10250', '10255']);
    expect(doc.paths['/healthz'].get['x-ports']).toEqual(['10250', '10255', '10248']);
  });
});
