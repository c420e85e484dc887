/**
 * Container swap as upstream's kuberuntime configures it (configureContainerSwapResources, 1.32,
 * NodeSwap on): only where the kernel accounts swap per cgroup (v1's memory.memsw files, v2's
 * memory.swap.max). `memorySwap.swapBehavior` `LimitedSwap` gives a Burstable container with a
 * memory request below its limit (not a critical pod's, and only on cgroup v2) its share of the
 * node's swap, in proportion of its request to the node's memory; every other container — and
 * every container with `NoSwap`, the default — gets none: v1 caps memory+swap at the memory
 * limit, v2 writes `memory.swap.max` 0. Without this the runtime's default lets a container swap.
 */
import { existsSync, readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import type { Container, Pod } from '../../api/types.js';
import { bytes } from '../../api/quantity.js';
import type * as cri from '../../cri/types.js';
import { isCritical } from '../admission/preemption.js';
import { qosClass } from '../status/qos-class.js';

/** What the node's swap configuration is (absent: no swap controller, nothing is written). */
export interface SwapContext {
  /** Which cgroup version accounts swap. */
  controller: 'v1' | 'v2';
  behavior: 'NoSwap' | 'LimitedSwap';
  /** The node's swap (SwapTotal) and memory, in bytes. */
  capacityBytes: number;
  memoryCapacityBytes: number;
}

/**
 * Which controller accounts swap (upstream swapControllerAvailable), from the cgroup mount and this process's cgroup.
 */
export function detectSwapController(fsRoot = '/sys/fs/cgroup', procSelfCgroup?: string): 'v1' | 'v2' | undefined {
  if (!existsSync(join(fsRoot, 'cgroup.controllers')))
    return existsSync(join(fsRoot, 'memory', 'memory.memsw.limit_in_bytes')) ? 'v1' : undefined;
  let text = procSelfCgroup;
  try {
    text ??= readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return undefined;
  }
  const own = /^0::(.*)$/m.exec(text)?.[1];
  return own !== undefined && existsSync(join(fsRoot, own, 'memory.swap.max')) ? 'v2' : undefined;
}

/** The node's swap in bytes (/proc/meminfo SwapTotal). */
export function swapTotalBytes(meminfo?: string): number {
  let text = meminfo;
  try {
    text ??= readFileSync('/proc/meminfo', 'utf8');
  } catch {
    return 0;
  }
  return Number(/^SwapTotal:\s+(\d+) kB/m.exec(text)?.[1] ?? 0) * 1024;
}

/**
 * This node's swap settings for containers with `memorySwap.swapBehavior` (upstream: only where a swap controller is).
 */
export function nodeSwapContext(behavior: string | undefined): SwapContext | undefined {
  const controller = detectSwapController();
  return (
    controller && {
      controller,
      behavior: behavior === 'LimitedSwap' ? 'LimitedSwap' : 'NoSwap',
      capacityBytes: swapTotalBytes(),
      memoryCapacityBytes: totalmem(),
    }
  );
}

/** The container's swap settings, merged into its Linux resources (`out`, whose memory limit is set). Pure. */
export function applySwap(
  out: cri.LinuxContainerResources,
  pod: Pod,
  c: Container,
  swap: SwapContext | undefined,
): void {
  if (!swap) return;
  const request = bytes(c.resources?.requests?.memory) ?? 0;
  const limit = bytes(c.resources?.limits?.memory) ?? 0;
  const limited =
    swap.behavior === 'LimitedSwap' &&
    swap.controller === 'v2' &&
    !isCritical(pod) &&
    qosClass(pod) === 'Burstable' &&
    (request > 0 || limit > 0) &&
    request !== limit &&
    swap.memoryCapacityBytes > 0 &&
    request <= swap.memoryCapacityBytes;
  if (swap.controller === 'v1') {
    // memory+swap capped at the memory limit: no swap above it (0: no limit, ignored by the runtime).
    out.memory_swap_limit_in_bytes = out.memory_limit_in_bytes ?? 0;
    return;
  }
  const share = limited ? Math.trunc((request / swap.memoryCapacityBytes) * swap.capacityBytes) : 0;
  out.unified = { ...out.unified, 'memory.swap.max': String(share) };
}
