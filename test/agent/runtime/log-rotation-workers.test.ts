/** containerLogMaxWorkers: how many container logs are rotated at once (upstream's worker pool). */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContainerLogManager } from '../../../src/agent/runtime/logs/log-rotation.js';
import type { RuntimeService } from '../../../src/cri/services.js';
import { realClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-log-workers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Rotates four oversized logs with `maxWorkers`; the most reopen calls seen in flight at once. */
async function peakRotations(maxWorkers: number | undefined, name: string): Promise<number> {
  const ids = ['a', 'b', 'c', 'd'];
  for (const id of ids) writeFileSync(join(dir, `${name}-${id}.log`), 'x'.repeat(8192));
  let inFlight = 0;
  let peak = 0;
  const runtime = {
    listContainers: async () => ids.map((id) => ({ id, state: 'CONTAINER_RUNNING' })),
    containerStatus: async (id: string) => ({ status: { log_path: join(dir, `${name}-${id}.log`) } }),
    reopenContainerLog: async () => {
      peak = Math.max(peak, ++inFlight);
      await new Promise((r) => setTimeout(r, 50));
      inFlight--;
    },
  } as unknown as RuntimeService;
  await new ContainerLogManager({
    runtime,
    clock: realClock,
    logger: createLogger({ level: 'fatal' }),
    maxSizeBytes: 4096,
    maxFiles: 3,
    intervalMs: 10_000,
    maxWorkers,
  }).rotateOnce();
  return peak;
}

describe('container log rotation workers', () => {
  it('rotate one log at a time by default, and up to containerLogMaxWorkers at once', async () => {
    expect(await peakRotations(undefined, 'one')).toBe(1);
    expect(await peakRotations(2, 'two')).toBe(2);
    expect(await peakRotations(8, 'eight')).toBe(4);
  });
});
