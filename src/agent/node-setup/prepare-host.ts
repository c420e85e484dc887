/**
 * What the kubelet does to and checks of its host before anything else (upstream's
 * containerManager setupNode, the open-files limit and the OOM score adjustment of the kubelet's own process).
 */
import { logRunFailed } from '../../lib/command-failed.js';
import type { Logger } from '../../lib/logger.js';
import { applyOomScoreAdj } from '../../lib/oom-score.js';
import { setOpenFilesLimit } from '../../lib/rlimit.js';
import { SWAP_ON_ERROR, swapIsOn } from './swap.js';

/** Returns false (after logging why) when the kubelet must not start. `procSwaps`: where swap devices are listed. */
export async function prepareHost(
  kc: {
    protectKernelDefaults: boolean;
    oomScoreAdj: number;
    failSwapOn: boolean;
    kubeletCgroups?: string;
    maxOpenFiles?: number;
  },
  logger: Logger,
  procSwaps?: string,
): Promise<boolean> {
  // failSwapOn (upstream's default): no kubelet on a node that swaps unless told so.
  if (kc.failSwapOn && (await swapIsOn(procSwaps))) {
    logRunFailed(logger, SWAP_ON_ERROR);
    return false;
  }
  // protectKernelDefaults: the kernel settings the kubelet relies on must already be there.
  if (kc.protectKernelDefaults) {
    const wrong = await (await import('./kernel-tunables.js')).kernelDefaultsErrors();
    if (wrong.length) {
      logRunFailed(logger, `[${wrong.join(', ')}]`);
      return false;
    }
  }
  // kubeletCgroups: into its own cgroup before it allocates much (memory stays charged where it was
  // first used); the agent keeps it there (kubelet-cgroup.ts). A failure is logged, as upstream.
  if (kc.kubeletCgroups) await (await import('./kubelet-cgroup.js')).ensureKubeletCgroup(kc.kubeletCgroups, logger);
  // maxOpenFiles: the kubelet's RLIMIT_NOFILE, both limits (upstream logs a failure and goes on).
  const nofileErr = kc.maxOpenFiles ? await setOpenFilesLimit(kc.maxOpenFiles) : undefined;
  if (nofileErr) logger.error({ err: nofileErr }, 'Failed to set rlimit on max file handles');
  // The kernel's OOM killer takes the kubelet last (upstream logs a failure and goes on).
  const oomErr = await applyOomScoreAdj(kc.oomScoreAdj);
  if (oomErr) logger.info({ err: oomErr }, 'failed to apply oomScoreAdj');
  return true;
}
