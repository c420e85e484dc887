#!/usr/bin/env node
// Checks the import directions of shared/DESIGN.md and that there are no import cycles in src/.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, dirname, relative, resolve } from 'node:path';

const src = resolve('src');
const files = [];
const walk = (d) => {
  for (const n of readdirSync(d)) {
    const p = join(d, n);
    if (statSync(p).isDirectory()) walk(p);
    else if (p.endsWith('.ts')) files.push(p);
  }
};
walk(src);
const area = (f) => relative(src, f).split('/')[0];
const graph = new Map();
const errors = [];
const forbidden = [
  ['agent', 'server'],
  ['agent', 'routes'],
  ['routes', 'agent'],
  ['process-runtime', 'agent'],
  ['streaming', 'agent'],
  ['streaming', 'server'],
  ['streaming', 'routes'],
  ['streaming', 'process-runtime'],
  ['cri', 'agent'],
  ['lib', 'agent'],
];
for (const f of files) {
  const text = readFileSync(f, 'utf8');
  const deps = [];
  for (const m of text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]/g)) {
    const target = resolve(dirname(f), m[1].replace(/\.js$/, '.ts'));
    deps.push(target);
    const [a, b] = [area(f), area(target)];
    if (forbidden.some(([x, y]) => x === a && y === b))
      errors.push(`${relative(src, f)} imports ${relative(src, target)} (${a} → ${b} is not allowed)`);
    if (a === 'agent' && b === 'process-runtime' && relative(src, f) !== 'agent/compose-runtime.ts')
      errors.push(`${relative(src, f)} imports the process runtime (only agent/compose-runtime.ts may)`);
  }
  graph.set(f, deps);
}
const state = new Map();
const stack = [];
const visit = (f) => {
  state.set(f, 1);
  stack.push(f);
  for (const d of graph.get(f) ?? []) {
    if (state.get(d) === 1)
      errors.push(`import cycle: ${[...stack.slice(stack.indexOf(d)), d].map((x) => relative(src, x)).join(' → ')}`);
    else if (!state.get(d) && graph.has(d)) visit(d);
  }
  stack.pop();
  state.set(f, 2);
};
for (const f of files) if (!state.get(f)) visit(f);
if (errors.length) {
  console.error(errors.join('\n'));
  process.exit(1);
}
console.log(`imports ok (${files.length} files)`);
