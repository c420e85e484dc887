// `npm run build`: bundles the CLI from src/main.ts into dist/ (esbuild; type checking is
// `npm run typecheck`). One ES module per entry and per lazily imported part (--splitting), so
// start-up loads a few files instead of ~300 modules and their node_modules, and what the
// configuration does not use (the apiserver client, the PKI code, the daemon) is still not loaded.
// node-pty stays external (a native addon), and so do three parts of Fastify the kubelet never
// runs. Source maps beside the chunks: run with --enable-source-maps for stack traces into src/.
import { build } from 'esbuild';
import { rmSync } from 'node:fs';

const outdir = process.argv[2] ?? 'dist';
rmSync(outdir, { recursive: true, force: true });
await build({
  // The CLI, and each worker thread's module (lib/worker-task.ts finds it beside the chunks).
  entryPoints: { main: 'src/main.ts', 'decode-worker': 'src/agent/podconfig/decode-worker.ts' },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Fastify's default schema compilers (Ajv, fast-json-stringify) and its inject() are never used
  // by the kubelet (src/server/servers.ts gives its own compilers; tests inject from src/): left
  // out, their ~0.5 MB of source is not parsed into the heap. They stay resolvable in
  // node_modules (Fastify's dependencies) should anything ever require them.
  external: ['node-pty', '@fastify/ajv-compiler', '@fastify/fast-json-stringify-compiler', 'light-my-request'],
  // ES builds where a package has one: a dynamic import() then yields its named exports, as it
  // does from src/ under tsx.
  mainFields: ['module', 'main'],
  // CommonJS dependencies call require(); an ES module has none of its own.
  banner: {
    js: "import { createRequire as __tskRequire } from 'node:module'; const require = __tskRequire(import.meta.url);",
  },
  sourcemap: 'linked',
  // V8 keeps each loaded chunk's source text in the heap (functions compile lazily from it):
  // whitespace, comments and syntax minified, ~1.4 MiB less heap at idle. Identifiers are kept, so
  // stack traces and logged errors still name our functions (minifying them too saved ~1 MiB more).
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});
