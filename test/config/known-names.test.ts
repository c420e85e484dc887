/** The gates the code reads are the gates the config loader calls implemented (no false "has no effect" warning). */
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { implementedFeatureGates } from '../../src/config/known-names.js';

/** Every `featureGates?.<Name>` in the sources under `dir`. */
function gatesRead(dir: string): Set<string> {
  const found = new Set<string>();
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile() && entry.name.endsWith('.ts'))
      for (const m of readFileSync(join(entry.parentPath, entry.name), 'utf8').matchAll(/featureGates\?\.(\w+)/g))
        found.add(m[1]);
  return found;
}

describe('implementedFeatureGates', () => {
  it('names every gate the sources read', () => {
    const read = gatesRead(join(import.meta.dirname, '../../src'));
    expect(read.size).toBeGreaterThan(5);
    expect([...read].filter((g) => !implementedFeatureGates.has(g))).toEqual([]);
  });
});
