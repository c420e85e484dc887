/**
 * KubeletHost: the one narrow interface the HTTP routes see. The agent's composition provides
 * it; routes never reach into managers. All methods are safe to call concurrently.
 */
import type { Writable } from 'node:stream';
import type { Pod } from '../api/types.js';

/** v1.PodLogOptions after validation (sinceSeconds/sinceTime turned into sinceNs). */
export interface ContainerLogOptions { follow?: boolean; previous?: boolean; timestamps?: boolean; tailLines?: number; limitBytes?: number; sinceNs?: bigint }

/** A named health check; `check` returns an error message when unhealthy. */
export interface HealthCheck { name: string; check(): string | undefined }

/** What routes may ask of the kubelet. */
export interface KubeletHost {
  /** The node name this kubelet serves. */
  readonly nodeName: string;
  /** The pods the kubelet wants, with their latest status. */
  getPods(): Pod[];
  /** Changes whenever `getPods()` would answer differently; lets callers cache what they derive. */
  podsVersion(): string;
  /** One desired pod by namespace and name. */
  getPodByName(namespace: string, name: string): Pod | undefined;
  /** Pods as the container runtime has them. May block on the runtime. */
  getRunningPods(): Promise<Pod[]>;
  /** Streams a container's logs to `out`; rejects with a KubeletError before writing anything when it cannot. */
  getContainerLogs(req: { namespace: string; podName: string; containerName: string; options: ContainerLogOptions; out: Writable; signal: AbortSignal }): Promise<void>;
  /** Health checks for /healthz (ping and log are built in). */
  healthChecks(): HealthCheck[];
}
