/**
 * Regression (reliability issue, defect 7): the process runtime's state follows its containers.
 * A container removed while its exit is being recorded, or while it is being started, leaves no
 * state file (they stayed as EXITED 143 until the runtime's next start) and no process.
 */
import { describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type * as cri from '../../src/cri/types.js';
import { countProcesses } from '../e2e/helpers.js';
import { processRuntimeFixture, runSandbox } from './runtime-fixture.js';

const { dir, runtime } = processRuntimeFixture('tsk-statefollow-');
const stateDir = join(dir, 'state');
const marker = `state-follow-${process.pid}`;

const stateFiles = () => readdirSync(join(stateDir, 'containers')).filter((n) => n.endsWith('.json'));

describe('container state files', () => {
  it('are gone with containers removed as they exit or as they start', async () => {
    const { sandboxId, sandboxConfig } = await runSandbox(runtime, dir, 'u');
    const config = (i: number): cri.ContainerConfig => ({
      metadata: { name: `c${i}`, attempt: 0 },
      image: { image: 'busybox' },
      command: ['sh', '-c', `sleep 100; echo ${marker}`],
      log_path: `c${i}.log`,
    });
    for (let round = 0; round < 10; round++) {
      const running = await runtime.createContainer(sandboxId, config(2 * round), sandboxConfig);
      await runtime.startContainer(running);
      const starting = await runtime.createContainer(sandboxId, config(2 * round + 1), sandboxConfig);
      // Removed while its exit is recorded; the other removed while it starts.
      await Promise.all([
        runtime.removeContainer(running),
        runtime.startContainer(starting).catch(() => undefined),
        runtime.removeContainer(starting),
      ]);
    }
    await new Promise((r) => setTimeout(r, 500));
    expect(await runtime.listContainers()).toEqual([]);
    expect(stateFiles()).toEqual([]);
    expect(countProcesses(marker)).toBe(0);
    await runtime.stopPodSandbox(sandboxId);
    await runtime.removePodSandbox(sandboxId);
  }, 60_000);
});
