/**
 * The cgroup driver the container runtime uses, adopted at start as upstream's
 * KubeletCgroupDriverFromCRI (beta and on by default since 1.31): the kubelet asks CRI
 * RuntimeConfig once and uses the runtime's answer whatever its own cgroupDriver says, so a
 * runtime on systemd cgroups (containerd 2 with SystemdCgroup = true) and a configuration written
 * for cgroupfs still name pod cgroups the same way.
 */
import type { RuntimeService } from '../../cri/services.js';
import { isCode, messageOf } from '../../lib/errors.js';
import { realClock, sleep, type Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';

export type CgroupDriver = 'systemd' | 'cgroupfs';

/** Tries, and the pause after a failed one, as upstream (a runtime still starting gets a little more time). */
const TRIES = 3;
const RETRY_DELAY_MS = 2000;

/**
 * The driver a RuntimeConfig answer names; undefined without its Linux part. Throws on a value CRI does not define.
 * Pure.
 */
export function driverOfAnswer(answer: { linux?: { cgroup_driver?: string } | null }): CgroupDriver | undefined {
  const linux = answer.linux;
  if (!linux) return undefined;
  // proto3 leaves the zero value (SYSTEMD) off the wire: an empty Linux part means systemd, as upstream reads it.
  const d = linux.cgroup_driver ?? 'SYSTEMD';
  if (d === 'SYSTEMD') return 'systemd';
  if (d === 'CGROUPFS') return 'cgroupfs';
  throw new Error(`runtime returned an unknown cgroup driver ${d}`);
}

/**
 * The Kubernetes release from which a runtime without RuntimeConfig (containerd 1.x) is no longer supported: v1.36
 * still falls back to the configured driver and says so in kubelet_cri_losing_support{version} (the removal was moved
 * to v1.37 in the v1.36 cycle, kubernetes/kubernetes#136846).
 */
export const CRI_LOSING_SUPPORT_VERSION = '1.37.0';

/** What the runtime said of its cgroup driver. */
export interface RuntimeCgroupDriver {
  /** The runtime's driver; undefined when it does not say (the configuration's stands). */
  driver?: CgroupDriver;
  /** It does not implement RuntimeConfig, so the configuration's driver stands for now (upstream's fallback). */
  fellBack: boolean;
}

/**
 * The runtime's cgroup driver, or none when it does not say (it does not implement RuntimeConfig, as containerd before
 * 2.0, or answers without a Linux part): the configuration's driver stands then. Any other failure is retried, then
 * thrown: the kubelet does not start.
 */
export async function cgroupDriverFromRuntime(
  rt: Pick<RuntimeService, 'runtimeConfig'>,
  o: { logger: Logger; clock?: Clock; retryDelayMs?: number },
): Promise<RuntimeCgroupDriver> {
  if (!rt.runtimeConfig) return { fellBack: false };
  let lastErr: unknown;
  for (let i = 0; i < TRIES; i++) {
    if (i > 0) await sleep(o.retryDelayMs ?? RETRY_DELAY_MS, undefined, o.clock ?? realClock);
    let answer;
    try {
      answer = await rt.runtimeConfig();
    } catch (err) {
      if (!isCode(err, 'NotImplemented')) {
        lastErr = err;
        continue;
      }
      o.logger.info(
        'CRI implementation should be updated to support RuntimeConfig when KubeletCgroupDriverFromCRI feature gate has been enabled. Falling back to using cgroupDriver from kubelet config.',
      );
      return { fellBack: true };
    }
    const driver = driverOfAnswer(answer);
    if (driver) o.logger.info({ cgroupDriver: driver }, 'Using cgroup driver setting received from the CRI runtime');
    return { driver, fellBack: false };
  }
  throw new Error(`failed to get the cgroup driver from the container runtime: ${messageOf(lastErr)}`, {
    cause: lastErr,
  });
}
