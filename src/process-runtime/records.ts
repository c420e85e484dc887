/**
 * The process runtime's records and CRI messages: a new container's record from its config, and
 * list items and statuses of sandboxes and containers from their records. Pure.
 */
import { isAbsolute, join } from 'node:path';
import type * as cri from '../cri/types.js';
import { imageIdOf } from './images.js';
import type { ContainerRecord, SandboxRecord } from './state.js';
import { stopSignalOf } from './stop-signal.js';

/**
 * The record of a container created now (`createdAtNs`) in sandbox `s`: its log at the config's
 * path under the sandbox's log directory, never started.
 */
export function newContainerRecord(
  id: string,
  s: SandboxRecord,
  config: cri.ContainerConfig,
  sandboxConfig: cri.PodSandboxConfig | undefined,
  createdAtNs: string,
): ContainerRecord {
  const logDir = sandboxConfig?.log_directory || s.config.log_directory || join(s.dir, 'logs');
  const logPath = config.log_path
    ? isAbsolute(config.log_path)
      ? config.log_path
      : join(logDir, config.log_path)
    : join(s.dir, 'logs', `${config.metadata!.name}.log`);
  return {
    id,
    sandboxId: s.id,
    config,
    imageRef: imageIdOf(config.image?.image ?? ''),
    logPath,
    state: 'CONTAINER_CREATED',
    createdAtNs,
    startedAtNs: '0',
    finishedAtNs: '0',
    exitCode: 0,
    reason: '',
    message: '',
  };
}

/** A sandbox as ListPodSandbox reports it. */
export function sandboxView(s: SandboxRecord): cri.PodSandbox {
  return {
    id: s.id,
    metadata: { attempt: 0, ...s.config.metadata },
    state: s.state,
    created_at: Number(s.createdAtNs),
    labels: s.config.labels ?? {},
    annotations: s.config.annotations ?? {},
    runtime_handler: s.runtimeHandler,
  };
}

/**
 * PodSandboxStatus of `s`, stamped `timestampNs`: its IP and namespace modes (NODE unless the config asks otherwise).
 */
export function sandboxStatus(s: SandboxRecord, timestampNs: number): cri.PodSandboxStatusResponse {
  const ns = s.config.linux?.security_context?.namespace_options;
  return {
    status: {
      ...sandboxView(s),
      network: { ip: s.ip, additional_ips: [] },
      linux: {
        namespaces: {
          options: { network: ns?.network ?? 'NODE', pid: ns?.pid ?? 'NODE', ipc: ns?.ipc ?? 'NODE', target_id: '' },
        },
      },
    },
    info: {},
    timestamp: timestampNs,
  };
}

/** A container as ListContainers reports it. */
export function containerView(c: ContainerRecord): cri.Container {
  return {
    id: c.id,
    pod_sandbox_id: c.sandboxId,
    metadata: { attempt: 0, ...c.config.metadata },
    image: { image: c.config.image?.image ?? '' },
    image_ref: c.imageRef,
    image_id: c.imageRef,
    state: c.state,
    created_at: Number(c.createdAtNs),
    labels: c.config.labels ?? {},
    annotations: c.config.annotations ?? {},
  };
}

/**
 * When `c` finished, never before it started (ns; 0 while it has not): a command that ends at once can exit before its
 * start is recorded (after the set-up), and an exit dated by the exit file's coarser clock can precede it by a tick; a
 * status with a finish before its start would give the pod a negative run time. Either is reported at the start.
 */
export function finishedAtNs(c: Pick<ContainerRecord, 'startedAtNs' | 'finishedAtNs'>): bigint {
  const started = BigInt(c.startedAtNs);
  const finished = BigInt(c.finishedAtNs);
  return finished !== 0n && started !== 0n && finished < started ? started : finished;
}

/** ContainerStatus of `c`: its view plus start, finish, exit code, reason, mounts and log path. */
export function containerStatus(c: ContainerRecord): cri.ContainerStatusResponse {
  const v = containerView(c);
  return {
    status: {
      id: c.id,
      metadata: v.metadata,
      state: c.state,
      created_at: v.created_at,
      started_at: Number(c.startedAtNs),
      finished_at: Number(finishedAtNs(c)),
      exit_code: c.exitCode,
      image: v.image,
      image_ref: c.imageRef,
      image_id: c.imageRef,
      reason: c.reason,
      message: c.message,
      labels: v.labels,
      annotations: v.annotations,
      mounts: c.config.mounts ?? [],
      log_path: c.logPath,
      stop_signal: stopSignalOf(c.config),
    },
    info: {},
  };
}
