import type { RuntimeSandbox } from './pod-runtime-status.js';

/** The result of one executor step (upstream SyncResult); failures carry the waiting reason. */
export interface StepResult {
  action:
    'CreatePodSandbox' | 'KillPodSandbox' | 'PullImageVolume' | 'StartContainer' | 'KillContainer' | 'RemoveContainer';
  target: string;
  ok: boolean;
  reason?: string;
  message?: string;
  /** For container starts: whether it was an init container. */
  init?: boolean;
  /** For holds and failed pulls: when a retry makes sense. */
  retryAfterMs?: number;
  /** For a sandbox created: as its PodSandboxStatus reported it. */
  sandbox?: RuntimeSandbox;
  /** For a container started: its ID. */
  id?: string;
}
