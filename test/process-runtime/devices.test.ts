/**
 * The process runtime has no device cgroup or /dev of its own: a device a container asks for (a plugin's, a raw block
 * volume) is its host node bound at the container's path.
 */
import { describe, expect, it } from 'vitest';
import type * as cri from '../../src/cri/types.js';
import { processRuntimeFixture, runSandbox } from './runtime-fixture.js';

const { dir, runtime } = processRuntimeFixture('tsk-devices-');

describe('process runtime devices', () => {
  it('binds each device node at its container path, read-only unless its permissions allow writes', async () => {
    const { sandboxId, sandboxConfig } = await runSandbox(runtime, dir, 'u');
    const config: cri.ContainerConfig = {
      metadata: { name: 'main', attempt: 0 },
      image: { image: 'busybox' },
      command: ['true'],
      devices: [
        { container_path: '/dev/xvda', host_path: '/dev/null', permissions: 'mrw' },
        { container_path: '/dev/ro', host_path: '/dev/zero', permissions: 'r' },
      ],
    };
    const id = await runtime.createContainer(sandboxId, config, sandboxConfig);
    expect((await runtime.containerStatus(id)).status.mounts).toEqual([
      { container_path: '/dev/xvda', host_path: '/dev/null', readonly: false },
      { container_path: '/dev/ro', host_path: '/dev/zero', readonly: true },
    ]);
  });
});
