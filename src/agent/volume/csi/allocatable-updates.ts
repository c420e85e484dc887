/**
 * A CSI driver's volume limit kept current (upstream MutableCSINodeAllocatableCount, GA in v1.36):
 * a driver whose CSIDriver object sets `nodeAllocatableUpdatePeriodSeconds` is asked NodeGetInfo
 * that often, and a changed `max_volumes_per_node` is written to its CSINode entry's
 * `allocatable.count`, so the scheduler does not keep placing volumes by a stale limit. The period
 * is read again each round (a CSIDriver edited or deleted takes effect at the next one), and a
 * driver without one is looked at again every minute (a CSIDriver made after the driver registered);
 * a failed round is logged and the next one tries again. One chain of timers per driver, ended when
 * it goes or registers again.
 */
import type { Clock, CancelTimer } from '../../../lib/clock.js';
import { messageOf } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/logger.js';
import type { CsiDriverObj } from './csi-api-types.js';
import { csiLog } from './csi-release.js';

/** The API's lower bound of `nodeAllocatableUpdatePeriodSeconds`. */
export const MIN_UPDATE_PERIOD_SECONDS = 10;

/** The period of a driver's updates in ms, from its CSIDriver; undefined for none. Pure. */
export function updatePeriodMs(driver: CsiDriverObj | null | undefined): number | undefined {
  const seconds = driver?.spec?.nodeAllocatableUpdatePeriodSeconds;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds)) return undefined;
  return Math.max(seconds, MIN_UPDATE_PERIOD_SECONDS) * 1000;
}

export interface AllocatableUpdatesDeps {
  clock: Clock;
  logger: Logger;
  /** The driver's CSIDriver object (null when there is none). */
  driverObject(name: string): Promise<CsiDriverObj | null>;
  /** The driver's volume limit now (NodeGetInfo's max_volumes_per_node; 0: none). */
  maxVolumes(name: string): Promise<number>;
  /** Writes the limit to the driver's CSINode entry. */
  setAllocatable(name: string, count: number): Promise<void>;
}

/** How often a driver whose CSIDriver asks for no updates is looked at again (a CSIDriver set later takes effect). */
export const RECHECK_MS = 60_000;

/** The running updaters, by driver. */
export class AllocatableUpdates {
  /**
   * Each driver's chain by its current timer: a step that finds another timer here (the driver went, or registered
   * again) ends its chain.
   */
  private readonly timers = new Map<string, CancelTimer>();

  constructor(private readonly deps: AllocatableUpdatesDeps) {}

  /** Starts (or restarts) the updates of `name`, registered with `count` as its limit. */
  async start(name: string, count: number): Promise<void> {
    this.stop(name);
    // The chain's mark until its first timer is set (nothing to cancel yet).
    const starting: CancelTimer = () => {};
    this.timers.set(name, starting);
    await this.next(name, count, starting);
  }

  /** Stops the updates of `name`. */
  stop(name: string): void {
    this.timers.get(name)?.();
    this.timers.delete(name);
  }

  /** Schedules the next round after the period its CSIDriver gives now, or a look at the CSIDriver again. */
  private async next(name: string, last: number, current: CancelTimer): Promise<void> {
    const period = updatePeriodMs(await this.deps.driverObject(name).catch(() => null));
    // Stopped, or registered again, while the CSIDriver was read: this chain ends.
    if (this.timers.get(name) !== current) return;
    const timer: CancelTimer = this.deps.clock.setTimer(
      () => void (period === undefined ? this.next(name, last, timer) : this.round(name, last, timer)),
      period ?? RECHECK_MS,
    );
    this.timers.set(name, timer);
  }

  private async round(name: string, last: number, current: CancelTimer): Promise<void> {
    let count = last;
    try {
      count = await this.deps.maxVolumes(name);
      if (count !== last && this.timers.get(name) === current) await this.deps.setAllocatable(name, count);
    } catch (err) {
      count = last;
      this.deps.logger.warn(
        { driver: name },
        csiLog(`failed to update the node's allocatable volume count: ${messageOf(err)}`),
      );
    }
    await this.next(name, count, current);
  }
}
