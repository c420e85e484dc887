/** protectKernelDefaults: upstream's kernel settings checked under a /proc/sys laid out in a directory. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KERNEL_DEFAULTS, kernelDefaultsErrors } from '../../../src/agent/node-setup/kernel-tunables.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-sysctl-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const write = (flag: string, v: string) => {
  mkdirSync(dirname(join(dir, flag)), { recursive: true });
  writeFileSync(join(dir, flag), `${v}\n`);
};

describe('kernel defaults', () => {
  it('none when every setting matches; each one that differs named with both values, as upstream', async () => {
    for (const [flag, v] of KERNEL_DEFAULTS) write(flag, String(v));
    expect(await kernelDefaultsErrors(dir)).toEqual([]);
    write('vm/overcommit_memory', '0');
    write('kernel/panic', '1');
    expect(await kernelDefaultsErrors(dir)).toEqual([
      'invalid kernel flag: vm/overcommit_memory, expected value: 1, actual value: 0',
      'invalid kernel flag: kernel/panic, expected value: 10, actual value: 1',
    ]);
    rmSync(join(dir, 'vm/panic_on_oom'));
    expect((await kernelDefaultsErrors(dir))[1]).toBe('cannot read kernel flag vm/panic_on_oom: ENOENT');
  });
});
