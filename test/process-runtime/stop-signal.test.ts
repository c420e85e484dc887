/**
 * The embedded runtime stops a container with its config's stop signal (ContainerStopSignals), else
 * SIGTERM, and reports that signal in the container's status, as containerd does.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as cri from '../../src/cri/types.js';
import { killSignalOf, stopSignalOf } from '../../src/process-runtime/stop-signal.js';
import { processRuntimeFixture, runSandbox } from './runtime-fixture.js';

const { dir, runtime } = processRuntimeFixture('tsk-stop-signal-');

describe('stop signals', () => {
  it("are the kernel's numbers, real-time ones as glibc counts them", () => {
    expect(killSignalOf('SIGUSR1')).toBe(10);
    expect(killSignalOf('SIGCLD')).toBe(17);
    expect(killSignalOf('SIGRTMIN')).toBe(34);
    expect(killSignalOf('SIGRTMINPLUS1')).toBe(35);
    expect(killSignalOf('SIGRTMAXMINUS1')).toBe(63);
    expect(killSignalOf('SIGRTMAX')).toBe(64);
    expect(killSignalOf('SIGNOPE')).toBeUndefined();
    expect(stopSignalOf({})).toBe('SIGTERM');
    expect(stopSignalOf({ stop_signal: 'RUNTIME_DEFAULT' })).toBe('SIGTERM');
    expect(stopSignalOf({ stop_signal: 'SIGQUIT' })).toBe('SIGQUIT');
  });

  it("stop a container with its config's signal, else SIGTERM, and its status names it", async () => {
    const { sandboxId, sandboxConfig } = await runSandbox(runtime, dir, 'u-stop-signal');
    const trapped = join(dir, 'trapped');
    const start = async (name: string, stopSignal?: string) => {
      const config: cri.ContainerConfig = {
        metadata: { name, attempt: 0 },
        image: { image: 'busybox' },
        // Exits 0 on SIGUSR1 (noting it), is killed by SIGTERM (143).
        command: ['sh', '-c', `trap 'echo ${name} >> ${trapped}; exit 0' USR1; while :; do sleep 0.1; done`],
        log_path: `${name}/0.log`,
        ...(stopSignal ? { stop_signal: stopSignal } : {}),
      };
      const id = await runtime.createContainer(sandboxId, config, sandboxConfig);
      await runtime.startContainer(id);
      return id;
    };
    const usr1 = await start('usr1', 'SIGUSR1');
    const plain = await start('plain');
    expect((await runtime.containerStatus(usr1)).status.stop_signal).toBe('SIGUSR1');
    expect((await runtime.containerStatus(plain)).status.stop_signal).toBe('SIGTERM');
    await new Promise((r) => setTimeout(r, 300)); // the traps are set
    await runtime.stopContainer(usr1, 30);
    await runtime.stopContainer(plain, 30);
    expect((await runtime.containerStatus(usr1)).status).toMatchObject({ state: 'CONTAINER_EXITED', exit_code: 0 });
    expect((await runtime.containerStatus(plain)).status).toMatchObject({ state: 'CONTAINER_EXITED', exit_code: 143 });
    expect(readFileSync(trapped, 'utf8')).toBe('usr1\n');
  }, 30_000);
});
