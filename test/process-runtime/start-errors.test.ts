/**
 * A container whose set-up fails before its command runs has not started: StartContainer fails
 * with the step and the tool's error, and the container is `StartError` with exit code 128, as
 * containerd reports runc's start errors — not an `Error` exit 127 of the command.
 */
import { describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as cri from '../../src/cri/types.js';
import { setUpFailureIn } from '../../src/process-runtime/set-up-failure.js';
import { setUpProgress } from '../../src/process-runtime/container-launch.js';
import { processRuntimeFixture, runSandbox } from './runtime-fixture.js';

const { dir, runtime } = processRuntimeFixture('tsk-start-errors-');

describe('a set-up failure in the log', () => {
  it('is the failed step with the error before it, partial lines joined; none without the line', () => {
    const log = [
      '2026-11-29T05:00:00.000000000Z stdout F hello',
      '2026-11-29T05:00:00.000000001Z stderr P mount: /srv: mount point ',
      '2026-11-29T05:00:00.000000002Z stderr F is not a directory.',
      '2026-11-29T05:00:00.000000002Z stderr F        dmesg(1) may have more information after failed mount system call.',
      '2026-11-29T05:00:00.000000003Z stderr F tskubelet-process-runtime: set-up failed: mount /data at /srv',
      '',
    ].join('\n');
    expect(setUpFailureIn(log)).toBe('mount /data at /srv: mount: /srv: mount point is not a directory.');
    expect(setUpFailureIn(log.split('\n').slice(3).join('\n'))).toBe('mount /data at /srv');
    expect(setUpFailureIn('2026-11-29T05:00:00Z stderr F sh: exit 127\n')).toBeUndefined();
    // A TTY container's log is all stdout.
    expect(
      setUpFailureIn('2026-11-29T05:00:00Z stdout F tskubelet-process-runtime: set-up failed: working dir /srv\n'),
    ).toBe('working dir /srv');
  });
});

describe("a starting process's progress", () => {
  // Regression: an empty cmdline, read while the process was between the two programs of an
  // exec, was taken for an end; the start then waited 10 s for an exit that did not come.
  it('is still in its set-up when its cmdline is empty but it is no zombie', () => {
    expect(setUpProgress('', () => false)).toBe('setting-up');
    expect(setUpProgress('', () => true)).toBe('ended');
    expect(setUpProgress(undefined, () => false)).toBe('ended');
    expect(setUpProgress('/bin/sh\0-c\0script\0cgroup-join\0/sys/x\0--\0sleep\0', () => false)).toBe('setting-up');
    expect(setUpProgress(['sleep', '3600', ''].join('\0'), () => false)).toBe('running');
  });
});

describe.runIf(process.getuid?.() === 0)('process runtime start errors', () => {
  it('reports a mount that cannot be made as StartError with the reason, and the container never runs', async () => {
    const { sandboxId, sandboxConfig } = await runSandbox(runtime, dir, 'u-start-errors');
    // A file cannot be bound over a directory.
    const file = join(dir, 'a-file');
    writeFileSync(file, 'x');
    const target = join(dir, 'a-directory');
    mkdirSync(target);
    const ran = join(dir, 'ran');
    const config: cri.ContainerConfig = {
      metadata: { name: 'main', attempt: 0 },
      image: { image: 'busybox' },
      command: ['sh', '-c', `touch ${ran}`],
      log_path: 'main/0.log',
      mounts: [{ container_path: target, host_path: file }],
    };
    const id = await runtime.createContainer(sandboxId, config, sandboxConfig);
    await expect(runtime.startContainer(id)).rejects.toThrow(
      new RegExp(`^failed to start container process: mount ${file} at ${target}: mount: `),
    );
    const { status } = await runtime.containerStatus(id);
    expect(status).toMatchObject({ state: 'CONTAINER_EXITED', exit_code: 128, reason: 'StartError' });
    expect(status.message).toMatch(/^failed to start container process: mount .* at .*: mount: /);
    expect(() => readFileSync(ran)).toThrow();
  });
});
