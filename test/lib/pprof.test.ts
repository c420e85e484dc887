/**
 * The kubelet's profiles in Go's pprof format, read by the real `go tool pprof` (Debian's golang-go):
 * a CPU profile of this process names the function that burned the CPU, a heap profile the function
 * that holds the memory. The profiler is the one /debug/pprof uses (V8's inspector in-process).
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Profile } from 'pprof-format';
import { createProfiler } from '../../src/server/profiler.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-pprof-'));

/** `go tool pprof -top` of `profile`, with `args` before the file. */
function pprofTop(profile: Buffer, ...args: string[]): string {
  const file = join(dir, `profile-${Date.now()}.pb.gz`);
  writeFileSync(file, profile);
  return execFileSync('go', ['tool', 'pprof', '-top', ...args, file], {
    encoding: 'utf8',
    env: { ...process.env, HOME: dir, PPROF_TMPDIR: dir },
  });
}

function spinForProfile(untilMs: number): number {
  let x = 0;
  while (Date.now() < untilMs) for (let i = 0; i < 10_000; i++) x += Math.sqrt(i);
  return x;
}

const retained: unknown[] = [];
function retainForProfile(): void {
  for (let i = 0; i < 200_000; i++) retained.push({ index: i, text: `retained-${i}` });
}

describe('the profiler through go tool pprof', () => {
  const profiler = createProfiler();

  it('a CPU profile names the function that burned the CPU, with Go sample types and duration', async () => {
    const taking = profiler.cpu(1, new AbortController().signal);
    const end = Date.now() + 900;
    while (Date.now() < end) {
      spinForProfile(Date.now() + 50);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const profile = await taking;
    const top = pprofTop(profile);
    expect(top).toContain('Type: cpu');
    expect(top).toMatch(/Duration: 1(\.\d+)?s/);
    const spinLine = top.split('\n').find((line) => line.includes('spinForProfile'));
    // The spinning function has most of the samples (its flat% is the first percentage on its line).
    expect(Number(/([\d.]+)%/.exec(spinLine ?? '')?.[1])).toBeGreaterThan(50);
    const decoded = Profile.decode(gunzipSync(profile));
    const strings = decoded.stringTable.strings;
    expect(decoded.sampleType.map((t) => `${strings[Number(t.type)]}/${strings[Number(t.unit)]}`)).toEqual([
      'samples/count',
      'cpu/nanoseconds',
    ]);
    expect(Number(decoded.period)).toBe(10_000_000);
  }, 20_000);

  it('one CPU profile at a time; one ended early by its client frees the profiler', async () => {
    const leaving = new AbortController();
    const first = profiler.cpu(30, leaving.signal);
    await expect(profiler.cpu(1, new AbortController().signal)).rejects.toThrow('cpu profiling already in use');
    leaving.abort();
    await first;
    const again = await profiler.cpu(0.2, new AbortController().signal);
    expect(pprofTop(again)).toContain('Type: cpu');
  }, 20_000);

  it('a heap profile names the function that holds the live memory', async () => {
    await profiler.heap(); // sampling starts with the first heap profile
    const baseline = process.memoryUsage().heapUsed;
    retainForProfile();
    const held = process.memoryUsage().heapUsed - baseline;
    const top = pprofTop(await profiler.heap());
    expect(top).toContain('Type: inuse_space');
    const line = top.split('\n').find((text) => text.includes('retainForProfile'));
    // ~200,000 objects of a few dozen bytes: the profile's estimate for the function is the megabytes they hold.
    const [, amount, unit] = /^\s*([\d.]+)(kB|MB)/.exec(line ?? '') ?? [];
    expect(unit).toBe('MB');
    const estimate = Number(amount) * 2 ** 20;
    expect(estimate).toBeGreaterThan(held / 2);
    expect(estimate).toBeLessThan(held * 2);
    expect(retained.length).toBe(200_000);
  }, 20_000);
});

process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
