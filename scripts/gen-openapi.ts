/** Writes openapi/node-api.json from the route schemas (`npm run openapi`). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApiDocument } from '../src/server/openapi.js';
import { TSKUBELET_VERSION } from '../src/version.js';

const file = join(import.meta.dirname, '..', 'openapi', 'node-api.json');
writeFileSync(file, JSON.stringify(await buildOpenApiDocument(TSKUBELET_VERSION), null, 2) + '\n');
console.log(`wrote ${file}`);
