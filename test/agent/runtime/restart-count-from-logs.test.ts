/** upstream calcRestartCountByLogDir: the next restart count after the highest `<n>.log` (rotated ones too). */
import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { restartCountFromLogs } from '../../../src/agent/runtime/logs/restart-count-from-logs.js';

describe('restartCountFromLogs', () => {
  it('is one past the highest log number; rotated logs count; other names and directories do not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tsk-rc-'));
    try {
      expect(await restartCountFromLogs(join(dir, 'missing'))).toBe(0);
      expect(await restartCountFromLogs(dir)).toBe(0);
      writeFileSync(join(dir, '0.log'), '');
      expect(await restartCountFromLogs(dir)).toBe(1);
      writeFileSync(join(dir, '2.log.20261125-120000'), '');
      writeFileSync(join(dir, '1.log'), '');
      expect(await restartCountFromLogs(dir)).toBe(3);
      writeFileSync(join(dir, 'x9.log'), '');
      writeFileSync(join(dir, '7.txt'), '');
      mkdirSync(join(dir, '8.log'));
      expect(await restartCountFromLogs(dir)).toBe(3);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
