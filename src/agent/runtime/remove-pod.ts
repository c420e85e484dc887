/** The end of a pod in the runtime: its containers, sandboxes, log directory and legacy log links go. */
import { rm } from 'node:fs/promises';
import type { RuntimeService } from '../../cri/services.js';
import type { PodRuntimeStatus } from './pod-runtime-status.js';
import { legacyLogSymlink, removeContainerLogs } from './logs/legacy-log-links.js';

/** Removes a pod's runtime objects, its log directory and its containers' legacy log links (idempotent). */
export async function removePodFromRuntime(
  runtime: RuntimeService,
  status: PodRuntimeStatus,
  logs: { podLogDir: string; containerLogsDir?: string },
): Promise<void> {
  const { containerLogsDir } = logs;
  await Promise.all(
    status.containers.map(async (c) => {
      await runtime.removeContainer(c.id);
      if (containerLogsDir)
        await removeContainerLogs({
          link: legacyLogSymlink(containerLogsDir, c.id, c.name, status.name, status.namespace),
        });
    }),
  );
  await Promise.all(
    status.sandboxes.map(async (s) => {
      await runtime.stopPodSandbox(s.id);
      await runtime.removePodSandbox(s.id);
    }),
  );
  await rm(logs.podLogDir, { recursive: true, force: true });
}
