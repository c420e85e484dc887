/**
 * A process runtime of a test file's own (in-process, in a temporary state dir), started before its tests and shut down
 * after.
 */
import { afterAll, beforeAll } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as cri from '../../src/cri/types.js';
import { ProcessRuntime } from '../../src/process-runtime/runtime.js';
import { silentLogger as logger } from '../../src/lib/logger.js';

export function processRuntimeFixture(prefix: string): { dir: string; runtime: ProcessRuntime } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
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
  return { dir, runtime };
}

/**
 * A pod sandbox on `runtime` for pod `uid` (name p, namespace ns), its logs under `logsParent`/logs; `extra` joins its
 * config.
 */
export async function runSandbox(
  runtime: ProcessRuntime,
  logsParent: string,
  uid: string,
  extra: Partial<cri.PodSandboxConfig> = {},
): Promise<{ sandboxId: string; sandboxConfig: cri.PodSandboxConfig }> {
  const sandboxConfig: cri.PodSandboxConfig = {
    metadata: { name: 'p', namespace: 'ns', uid, attempt: 0 },
    log_directory: join(logsParent, 'logs'),
    ...extra,
  };
  return { sandboxId: await runtime.runPodSandbox(sandboxConfig), sandboxConfig };
}
