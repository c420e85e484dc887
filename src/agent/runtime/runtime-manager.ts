/**
 * Reads the runtime over CRI into the kubelet's model (pod-runtime-status.ts): one pod's status,
 * or every pod the runtime has (for /runningpods, housekeeping and the PLEG).
 */
import type { RuntimeService } from '../../cri/services.js';
import type * as cri from '../../cri/types.js';
import { isCode } from '../../lib/errors.js';
import { ContainerHashAnnotation, ContainerNameLabel, ContainerRestartCountAnnotation, PodNameLabel, PodNamespaceLabel, PodUidLabel } from './labels.js';
import { terminationMessage } from './termination-message.js';
import type { PodRuntimeStatus, RuntimeContainer, RuntimeSandbox } from './pod-runtime-status.js';

const nsToMs = (ns: number) => (ns ? Math.floor(ns / 1e6) : 0);

const stateOf: Record<cri.ContainerState, RuntimeContainer['state']> = {
  CONTAINER_CREATED: 'created',
  CONTAINER_RUNNING: 'running',
  CONTAINER_EXITED: 'exited',
  CONTAINER_UNKNOWN: 'unknown',
};

/** Converts a CRI ContainerStatus. */
export function toRuntimeContainer(s: cri.ContainerStatus, sandboxId: string): RuntimeContainer {
  return {
    id: s.id,
    name: s.labels?.[ContainerNameLabel] ?? s.metadata?.name ?? '',
    state: stateOf[s.state] ?? 'unknown',
    createdAt: nsToMs(s.created_at),
    startedAt: nsToMs(s.started_at),
    finishedAt: nsToMs(s.finished_at),
    exitCode: s.exit_code,
    reason: s.reason,
    message: s.message,
    image: s.image?.user_specified_image || s.image?.image || '',
    imageRef: s.image_ref || s.image_id || '',
    hash: s.annotations?.[ContainerHashAnnotation] ?? '',
    restartCount: Number(s.annotations?.[ContainerRestartCountAnnotation] ?? 0) || 0,
    logPath: s.log_path,
    sandboxId,
  };
}

/** A pod the runtime has, identified by the kubelet's labels. */
export interface RuntimePod {
  uid: string;
  name: string;
  namespace: string;
  sandboxes: cri.PodSandbox[];
  containers: cri.Container[];
}

/** CRI reads for the agent. Every method may block on the runtime (bounded by CRI deadlines). */
export class RuntimeManager {
  constructor(private readonly runtime: RuntimeService) {}

  /** The status of one pod (empty when the runtime has nothing of it). */
  async getPodStatus(uid: string, name: string, namespace: string): Promise<PodRuntimeStatus> {
    const sel = { [PodUidLabel]: uid };
    const [sandboxes, containers] = await Promise.all([
      this.runtime.listPodSandbox({ label_selector: sel }),
      this.runtime.listContainers({ label_selector: sel }),
    ]);
    sandboxes.sort((a, b) => b.created_at - a.created_at);
    const sboxes: RuntimeSandbox[] = [];
    for (const [i, s] of sandboxes.entries()) {
      let ip = '';
      if (i === 0 && s.state === 'SANDBOX_READY') {
        try {
          ip = (await this.runtime.podSandboxStatus(s.id)).status.network?.ip ?? '';
        } catch (err) {
          if (!isCode(err, 'NotFound')) throw err;
        }
      }
      sboxes.push({ id: s.id, ready: s.state === 'SANDBOX_READY', createdAt: nsToMs(s.created_at), attempt: s.metadata?.attempt ?? 0, ip });
    }
    const statuses = await Promise.all(
      containers.map(async (c) => {
        try {
          const s = (await this.runtime.containerStatus(c.id)).status;
          const rc = toRuntimeContainer(s, c.pod_sandbox_id);
          if (rc.state === 'exited') rc.message = await terminationMessage(s);
          return rc;
        } catch (err) {
          if (isCode(err, 'NotFound')) return undefined;
          throw err;
        }
      }),
    );
    const list = statuses.filter((x): x is RuntimeContainer => !!x).sort((a, b) => b.createdAt - a.createdAt || b.restartCount - a.restartCount);
    return { uid, name, namespace, sandboxes: sboxes, containers: list };
  }

  /** CRI ExecSync: runs `cmd` to completion (no deadline beyond the CRI call's) and returns its output. */
  async execSync(containerId: string, cmd: string[]): Promise<{ stdout: Buffer; stderr: Buffer; exitCode: number }> {
    const r = await this.runtime.execSync(containerId, cmd, 0);
    return { stdout: Buffer.from(r.stdout ?? []), stderr: Buffer.from(r.stderr ?? []), exitCode: r.exit_code };
  }

  /** CRI Exec: the runtime's streaming URL for a session in container `containerId`. */
  execUrl(containerId: string, cmd: string[], o: { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean }): Promise<string> {
    return this.runtime.exec({ container_id: containerId, cmd, ...o });
  }

  /** CRI Attach: the runtime's streaming URL for attaching to `containerId`. */
  attachUrl(containerId: string, o: { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean }): Promise<string> {
    return this.runtime.attach({ container_id: containerId, ...o });
  }

  /** CRI PortForward: the runtime's streaming URL for forwarding into sandbox `sandboxId`. */
  portForwardUrl(sandboxId: string, ports: number[] = []): Promise<string> {
    return this.runtime.portForward({ pod_sandbox_id: sandboxId, port: ports });
  }

  /** Every pod in the runtime that carries the kubelet's labels. */
  async listRuntimePods(): Promise<RuntimePod[]> {
    const [sandboxes, containers] = await Promise.all([this.runtime.listPodSandbox(), this.runtime.listContainers()]);
    const pods = new Map<string, RuntimePod>();
    const podOf = (labels: cri.Labels) => {
      const uid = labels[PodUidLabel];
      if (!uid) return undefined;
      let p = pods.get(uid);
      if (!p) {
        p = { uid, name: labels[PodNameLabel] ?? '', namespace: labels[PodNamespaceLabel] ?? '', sandboxes: [], containers: [] };
        pods.set(uid, p);
      }
      return p;
    };
    for (const s of sandboxes) podOf(s.labels)?.sandboxes.push(s);
    for (const c of containers) podOf(c.labels)?.containers.push(c);
    return [...pods.values()];
  }
}
