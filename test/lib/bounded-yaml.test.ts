/**
 * Bounded decoding of the kubelet's own files (its configuration, drop-ins, kubeconfigs, the
 * credential provider config): hostile or broken text is an error naming the bound, never a hang,
 * a stack overflow or an exhausted heap.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  MAX_CONFIG_BYTES,
  parseYamlBounded,
  readTextBounded,
  readTextBoundedSync,
} from '../../src/lib/bounded-yaml.js';
import { loadConfig } from '../../src/config/load.js';
import { parseFlags } from '../../src/config/flags.js';
import { loadKubeconfig } from '../../src/lib/kubeconfig.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-bounded-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const bomb = [
  'a: &a [x, x, x, x, x, x, x, x, x]',
  ...'bcdefghi'.split('').map((x, i) => `${x}: &${x} [${Array(9).fill(`*${'abcdefgh'[i]}`).join(',')}]`),
].join('\n');

describe('parseYamlBounded', () => {
  it('parses a document within the bounds', () => {
    expect(parseYamlBounded('kind: KubeletConfiguration\nmaxPods: 7\n')).toEqual({
      kind: 'KubeletConfiguration',
      maxPods: 7,
    });
  });
  it('refuses an alias bomb, deep nesting (before the parser overflows its stack), too many values and too much text', () => {
    expect(() => parseYamlBounded(bomb)).toThrow(/alias/i);
    expect(() => parseYamlBounded(`a: ${'['.repeat(40_000)}${']'.repeat(40_000)}`)).toThrow(
      'nested too deeply (more than 100 levels)',
    );
    expect(() =>
      parseYamlBounded(`a:\n${Array.from({ length: 120 }, (_, i) => `${' '.repeat(i + 1)}b${i}:`).join('\n')} x`),
    ).toThrow('nested too deeply (more than 100 levels)');
    expect(() => parseYamlBounded(`a: [${'[],'.repeat(1_100_000)}[]]`, 2 * MAX_CONFIG_BYTES)).toThrow(
      'too many values (more than 1000000)',
    );
    expect(() => parseYamlBounded(`a: ${'x'.repeat(2000)}`, 1000)).toThrow('larger than 1000 bytes');
  });
});

describe('readTextBounded', () => {
  it('refuses a FIFO (without blocking on it) and a file over the limit, before reading it', async () => {
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    await expect(readTextBounded(fifo)).rejects.toThrow('not a regular file');
    expect(() => readTextBoundedSync(fifo)).toThrow('not a regular file');
    const big = join(dir, 'big');
    writeFileSync(big, 'x'.repeat(2000));
    await expect(readTextBounded(big, 1000)).rejects.toThrow('larger than 1000 bytes');
    expect(readTextBoundedSync(big, 4000)).toHaveLength(2000);
  });
});

describe("the kubelet's files", () => {
  it('a config file that is a FIFO, nested too deeply or an alias bomb fails the start with a reason', async () => {
    const fifo = join(dir, 'config-fifo');
    execFileSync('mkfifo', [fifo]);
    await expect(loadConfig(parseFlags(['--config', fifo]))).rejects.toThrow(
      `failed to read kubelet config file "${fifo}", error: open ${fifo}: not a regular file`,
    );
    const deep = join(dir, 'deep.yaml');
    writeFileSync(deep, `kind: KubeletConfiguration\nx: ${'['.repeat(40_000)}${']'.repeat(40_000)}\n`);
    await expect(loadConfig(parseFlags(['--config', deep]))).rejects.toThrow(
      `failed to load Kubelet config file ${deep}, error failed to decode: nested too deeply`,
    );
    const bombFile = join(dir, 'bomb.yaml');
    writeFileSync(bombFile, bomb);
    await expect(loadConfig(parseFlags(['--config', bombFile]))).rejects.toThrow(/failed to decode: .*alias/i);
  });
  it('a kubeconfig nested too deeply is an error naming the file', () => {
    const p = join(dir, 'kubeconfig');
    writeFileSync(p, `clusters: ${'['.repeat(40_000)}${']'.repeat(40_000)}\n`);
    expect(() => loadKubeconfig(p)).toThrow(`kubeconfig ${p}: nested too deeply (more than 100 levels)`);
  });
});
