/**
 * Wiring of the container runtime: the embedded process runtime (in-process) when no endpoint is
 * configured, else a CRI gRPC client for the endpoint (containerd, or `tskubelet process-runtime`);
 * either way instrumented for kubelet_runtime_operations_*. Also the images image GC must keep:
 * --pod-infra-container-image and the runtime's own sandbox image.
 */
import { join } from 'node:path';
import type { Logger } from '../lib/logger.js';
import { createCriClient } from '../cri/client.js';
import type { CriRuntime } from '../cri/services.js';
import { ProcessRuntime } from '../process-runtime/runtime.js';
import { ProcessImages } from '../process-runtime/images.js';
import { instrumentCri, type KubeletMetrics } from './metrics/kubelet-metrics.js';

/** The runtime the agent talks to, and the embedded one when it is in-process. */
export interface ComposedRuntime {
  runtime: CriRuntime;
  processRuntime?: ProcessRuntime;
}

/** Picks and instruments the runtime (`given` wins: tests pass their own). */
export function composeRuntime(
  cfg: { containerRuntimeEndpoint: string; rootDir: string; nodeIP: string; version: string; streamingIdleTimeoutMs?: number },
  o: { logger: Logger; metrics: KubeletMetrics; given?: CriRuntime },
): ComposedRuntime {
  let processRuntime: ProcessRuntime | undefined;
  let runtime: CriRuntime;
  if (o.given) runtime = o.given;
  else if (cfg.containerRuntimeEndpoint) runtime = createCriClient(cfg.containerRuntimeEndpoint);
  else {
    processRuntime = new ProcessRuntime({
      stateDir: join(cfg.rootDir, 'process-runtime'),
      podIP: cfg.nodeIP,
      mode: 'in-process',
      logger: o.logger,
      version: cfg.version,
      streamingIdleTimeoutMs: cfg.streamingIdleTimeoutMs,
    });
    runtime = { runtime: processRuntime, images: new ProcessImages(cfg.rootDir) };
  }
  return { runtime: instrumentCri(runtime, o.metrics), processRuntime };
}

/** The sandbox image a CRI runtime reports in its verbose Status info (containerd: config.sandboxImage). */
export function sandboxImageFromInfo(info: Record<string, string> | undefined): string | undefined {
  try {
    return (JSON.parse(info?.config ?? '{}') as { sandboxImage?: string }).sandboxImage || undefined;
  } catch {
    return undefined;
  }
}

/** Images image GC never removes; asked of the runtime once (again after a failure). */
export function protectedImages(runtime: CriRuntime, podInfraContainerImage: string | undefined): () => Promise<string[]> {
  let cached: Promise<string[]> | undefined;
  const given = [podInfraContainerImage].filter((x): x is string => !!x);
  return () =>
    (cached ??= runtime.runtime.status(true).then(
      (s) => [...given, sandboxImageFromInfo(s.info)].filter((x): x is string => !!x),
      () => {
        cached = undefined;
        return given;
      },
    ));
}
