/**
 * KubeletHost: the one narrow interface the HTTP routes see. The agent's composition provides
 * it; routes never reach into managers. All methods are safe to call concurrently.
 */
import type { Writable } from 'node:stream';
import type { Pod } from '../api/types.js';
import type { StreamRequest } from '../streaming/stream-request.js';

/** v1.PodLogOptions after validation (sinceSeconds/sinceTime turned into sinceNs). */
export interface ContainerLogOptions {
  follow?: boolean;
  previous?: boolean;
  timestamps?: boolean;
  tailLines?: number;
  limitBytes?: number;
  sinceNs?: bigint;
  /** Only this stream's lines (`stream=Stdout` / `Stderr`, with PodLogsQuerySplitStreams on). */
  stream?: 'stdout' | 'stderr';
}

/** A named health check; `check` returns an error message when unhealthy. */
export interface HealthCheck {
  name: string;
  check(): string | undefined;
}

/** What routes may ask of the kubelet. */
export interface KubeletHost {
  /** The node name this kubelet serves. */
  readonly nodeName: string;
  /**
   * Whether the runtime's streaming server speaks WebSocket `v5.channel.k8s.io` itself; when not,
   * a v5 exec or attach is served by the kubelet over SPDY to the runtime (spdy-client.ts).
   */
  readonly runtimeServesWebSocketV5?: boolean;
  /** The pods the kubelet wants, with their latest status. */
  getPods(): Pod[];
  /** Changes whenever `getPods()` would answer differently; lets callers cache what they derive. */
  podsVersion(): string;
  /** One desired pod by namespace and name. */
  getPodByName(namespace: string, name: string): Pod | undefined;
  /** Pods as the container runtime has them. May block on the runtime. */
  getRunningPods(): Promise<Pod[]>;
  /** Streams a container's logs to `out`; rejects with a KubeletError before writing anything when it cannot. */
  getContainerLogs(req: {
    namespace: string;
    podName: string;
    containerName: string;
    options: ContainerLogOptions;
    out: Writable;
    signal: AbortSignal;
  }): Promise<void>;
  /**
   * The runtime's streaming URL for an exec / attach / port-forward session (CRI Exec / Attach /
   * PortForward). Rejects with a KubeletError (NotFound, BadRequest…) before any upgrade. May block
   * on the runtime.
   */
  getStreamUrl(req: StreamRequest): Promise<string>;
  /**
   * Runs a command in a running container to completion (CRI ExecSync, upstream RunInContainer); stdout then
   * stderr. May block; `signal` is aborted when the client leaves, which ends the command.
   */
  runInContainer(req: {
    namespace: string;
    podName: string;
    podUid?: string;
    containerName: string;
    command: string[];
    signal?: AbortSignal;
  }): Promise<Buffer>;
  /**
   * Checkpoints a container (CRI CheckpointContainer) into `<root-dir>/checkpoints`; resolves to
   * the archive's path. NotFound for an unknown pod or container; the runtime's failure otherwise.
   */
  checkpointContainer?(req: {
    namespace: string;
    podName: string;
    containerName: string;
    timeoutSeconds?: number;
  }): Promise<string>;
  /** Health checks for /healthz (ping and log are built in). */
  healthChecks(): HealthCheck[];
  /** Records a run of /healthz: each check's result (the component SLIs of /metrics/slis). */
  observeHealthchecks?(type: 'healthz', results: readonly { name: string; ok: boolean }[]): void;
  /** Counts an exec, attach or port-forward request that came as a WebSocket upgrade. */
  observeWebSocketStreaming?(subresource: 'exec' | 'attach' | 'portforward'): void;
  /** DELETE /metrics/slis: the SLIs start again. */
  resetMetrics?(kind: 'slis'): void;
  /** The /stats/summary document, from memory (undefined before the first sample). Never blocks on sampling. */
  statsSummary(o: { onlyCpuAndMemory: boolean }): Record<string, unknown> | undefined;
  /** A metrics endpoint's Prometheus text: kubelet (/metrics), resource, cadvisor, probes, slis. */
  metricsText(kind: MetricsKind): Promise<string>;
  /** /spec/: the machine (cAdvisor MachineInfo subset). */
  machineSpec(): Record<string, unknown>;
  /** Counts a served request (kubelet_http_requests_total). */
  recordHttpRequest(r: {
    method: string;
    path: string;
    serverType: 'readonly' | 'readwrite';
    longRunning: boolean;
    seconds: number;
  }): void;
  /** A request began (+1) or ended (-1): kubelet_http_inflight_requests. */
  recordHttpInflight(
    r: { method: string; path: string; serverType: 'readonly' | 'readwrite'; longRunning: boolean },
    delta: 1 | -1,
  ): void;
}

/** The metrics endpoints. */
export type MetricsKind = 'kubelet' | 'resource' | 'cadvisor' | 'probes' | 'slis';
