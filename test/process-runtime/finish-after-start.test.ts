/**
 * A container never finishes before it started: a command that ends at once can exit before the runtime has recorded
 * its start (the start is recorded once its set-up is over), and the exit file of a detached container is dated by a
 * coarser clock. Seen in the pods of the fast-delete test (test/e2e/fast-delete.test.ts): `startedAt` a second after
 * `finishedAt`.
 */
import { describe, expect, it } from 'vitest';
import type * as cri from '../../src/cri/types.js';
import { finishedAtNs } from '../../src/process-runtime/records.js';
import { processRuntimeFixture, runSandbox } from './runtime-fixture.js';

const { dir, runtime } = processRuntimeFixture('tsk-finish-after-start-');

describe("a container's finish time", () => {
  it('is its start time when the exit was dated before it; otherwise as recorded', () => {
    expect(finishedAtNs({ startedAtNs: '2000', finishedAtNs: '1000' })).toBe(2000n);
    expect(finishedAtNs({ startedAtNs: '1000', finishedAtNs: '2000' })).toBe(2000n);
    // Never started (a start error), or not finished yet.
    expect(finishedAtNs({ startedAtNs: '0', finishedAtNs: '1000' })).toBe(1000n);
    expect(finishedAtNs({ startedAtNs: '1000', finishedAtNs: '0' })).toBe(0n);
  });

  it('is not before its start for commands that end at once', async () => {
    const { sandboxId, sandboxConfig } = await runSandbox(runtime, dir, 'u-finish-after-start');
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const config: cri.ContainerConfig = {
        metadata: { name: `c${i}`, attempt: 0 },
        image: { image: 'busybox' },
        command: ['/bin/false'],
        log_path: `c${i}/0.log`,
      };
      const id = await runtime.createContainer(sandboxId, config, sandboxConfig);
      await runtime.startContainer(id);
      ids.push(id);
    }
    const statuses = async () => Promise.all(ids.map(async (id) => (await runtime.containerStatus(id)).status));
    for (let t = 0; t < 100 && (await statuses()).some((s) => s.state !== 'CONTAINER_EXITED'); t++)
      await new Promise((r) => setTimeout(r, 50));
    for (const s of await statuses()) {
      expect(s).toMatchObject({ state: 'CONTAINER_EXITED', exit_code: 1 });
      expect(s.finished_at, s.metadata.name).toBeGreaterThanOrEqual(s.started_at);
    }
  });
});
