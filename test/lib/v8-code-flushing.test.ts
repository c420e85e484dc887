/** V8's code flushing as the kubelet sets it: rarely run code leaves the heap, and an operator's own flags win. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CODE_FLUSHING_FLAGS, codeFlushingFlags } from '../../src/lib/v8-code-flushing.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-flush-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A process started with `nodeFlags` that sets what codeFlushingFlags decides for them (as applyCodeFlushing does;
 * `apply: false`: nothing), runs a function once, then makes old-generation garbage until V8 has run six full
 * collections of its own (a forced gc() does not age code). Whether V8 discarded that function's compiled code, as
 * its trace says. Plain JavaScript, no loader: tsx's module hooks make V8 keep the function's code now and then.
 */
function rarelyRunFunctionFlushed(o: { apply: boolean; nodeFlags?: string[] }): boolean {
  const nodeFlags = o.nodeFlags ?? [];
  const flags = o.apply ? codeFlushingFlags(nodeFlags).join(' ') : '';
  const script = join(dir, `probe-${o.apply}-${nodeFlags.join('')}.mjs`);
  writeFileSync(
    script,
    `import { PerformanceObserver, constants } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
if (${JSON.stringify(flags)}) setFlagsFromString(${JSON.stringify(flags)});
globalThis.rarelyRun = function rarelyRun(n) { let s = 0; for (let i = 0; i < n; i++) s += i; return s; };
globalThis.rarelyRun(10);
let majors = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
}).observe({ entryTypes: ['gc'] });
let kept = [];
for (let i = 0; majors < 6 && i < 5e7; i++) {
  kept.push({ i, s: 'x' + i });
  if (kept.length > 2e5) { kept = []; await new Promise((r) => setImmediate(r)); }
}
`,
  );
  // --always-sparkplug: the function gets baseline code, which V8 keeps (with its bytecode) unless told to flush it.
  const run = spawnSync(process.execPath, ['--always-sparkplug', '--trace-flush-bytecode', ...nodeFlags, script], {
    encoding: 'utf8',
    timeout: 60_000,
    maxBuffer: 64 * 2 ** 20,
  });
  expect(run.status, run.stderr).toBe(0);
  return /discarding compiled metadata for \S+ <SharedFunctionInfo rarelyRun>/.test(run.stdout);
}

describe('V8 code flushing', () => {
  it('sets baseline-code flushing and an age of two collections, but for flags the process was started with', () => {
    expect(codeFlushingFlags([])).toEqual([...CODE_FLUSHING_FLAGS]);
    expect(codeFlushingFlags(['--max-semi-space-size=1', '--bytecode-old-age=5'])).toEqual(['--flush-baseline-code']);
    expect(codeFlushingFlags(['--no-flush-baseline-code', '--bytecode_old_age=3'])).toEqual([]);
  });

  it('discards the compiled code of a function not run for a few collections', () => {
    expect(rarelyRunFunctionFlushed({ apply: true })).toBe(true);
    // V8's defaults keep it, and so does the age alone: its baseline code is never flushed.
    expect(rarelyRunFunctionFlushed({ apply: false })).toBe(false);
    expect(rarelyRunFunctionFlushed({ apply: false, nodeFlags: ['--bytecode-old-age=2'] })).toBe(false);
    // An operator's --no-flush-baseline-code is kept.
    expect(rarelyRunFunctionFlushed({ apply: true, nodeFlags: ['--no-flush-baseline-code'] })).toBe(false);
  });
});
