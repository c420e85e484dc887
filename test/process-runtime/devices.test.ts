/** The process runtime has no device cgroup or /dev of its own: a container asking for devices (a raw block volume) is refused with a clear message. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProcessRuntime } from '../../src/process-runtime/runtime.js';
import { silentLogger as logger } from '../../src/lib/logger.js';
import type * as cri from '../../src/cri/types.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-devices-'));
const runtime = new ProcessRuntime({
  stateDir: join(dir, 'state'),
  podIP: '127.0.0.1',
  mode: 'in-process',
  logger,
  version: 'test',
});
beforeAll(() => runtime.start());
afterAll(async () => {
  await runtime.shutdown(0);
  rmSync(dir, { recursive: true, force: true });
});

describe('process runtime devices', () => {
  it('refuses CreateContainer with devices and creates nothing', async () => {
    const sandboxConfig: cri.PodSandboxConfig = {
      metadata: { name: 'p', namespace: 'ns', uid: 'u', attempt: 0 },
      log_directory: join(dir, 'logs'),
    };
    const sandboxId = await runtime.runPodSandbox(sandboxConfig);
    const config: cri.ContainerConfig = {
      metadata: { name: 'main', attempt: 0 },
      image: { image: 'busybox' },
      command: ['true'],
      devices: [{ container_path: '/dev/xvda', host_path: '/dev/null', permissions: 'mrw' }],
    };
    await expect(runtime.createContainer(sandboxId, config, sandboxConfig)).rejects.toThrow(
      'devices (raw block volumes) are not supported by the process runtime',
    );
    expect(await runtime.listContainers({ pod_sandbox_id: sandboxId })).toEqual([]);
  });
});
