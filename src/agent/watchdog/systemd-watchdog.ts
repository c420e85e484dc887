/**
 * The systemd watchdog (upstream SystemdWatchdog, GA in v1.35; pkg/kubelet/watchdog): when the
 * kubelet's unit sets `WatchdogSec=`, systemd gives it WATCHDOG_USEC and expects "WATCHDOG=1"
 * within that time, else it kills and restarts the kubelet. Every half of it the kubelet checks
 * its health — the sync loop ran recently, as upstream's watchdog checks (ping and log always
 * pass) — and notifies only when healthy, so a wedged kubelet is restarted. A notification that
 * fails is tried again after 1 s and 2 s. Settings are read as go-systemd's SdWatchdogEnabled
 * reads them (a WATCHDOG_PID of another process: not ours).
 */
import type { Clock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import { goDuration } from '../../lib/go-format.js';
import { goAtoi } from '../../lib/go-strconv.js';
import type { Logger } from '../../lib/logger.js';

/** Upstream's minimal watchdog timeout: one at or below it is refused. */
const MIN_TIMEOUT_MS = 1000;

/** Go's strconv.Atoi of `text`, its error prefixed with what was converted. */
function atoi(text: string, what: string): number {
  try {
    return goAtoi(text);
  } catch (err) {
    throw new Error(`configure watchdog: error converting ${what}: ${messageOf(err)}`);
  }
}

/**
 * The watchdog's notification interval (half its timeout) from the environment systemd gives, undefined when systemd
 * asks for none; throws upstream's error (after "create health checker: ") for settings it refuses. Pure.
 */
export function watchdogIntervalMs(env: NodeJS.ProcessEnv, pid: number): number | undefined {
  const usecText = env.WATCHDOG_USEC;
  if (!usecText) return undefined;
  const usec = atoi(usecText, 'WATCHDOG_USEC');
  if (usec <= 0) throw new Error('configure watchdog: error WATCHDOG_USEC must be a positive number');
  const pidText = env.WATCHDOG_PID;
  if (pidText) {
    if (atoi(pidText, 'WATCHDOG_PID') !== pid) return undefined;
  }
  const timeoutMs = usec / 1000;
  if (timeoutMs <= MIN_TIMEOUT_MS) throw new Error(`configure watchdog timeout too small: ${goDuration(timeoutMs)}`);
  return timeoutMs / 2;
}

export interface SystemdWatchdogDeps {
  intervalMs: number;
  /** Why the kubelet is not healthy; undefined when it is. */
  unhealthy(): string | undefined;
  /** Sends "WATCHDOG=1"; false when there is no one to send it to. */
  notify(): Promise<boolean>;
  clock: Clock;
  logger: Logger;
}

/** Notifies systemd's watchdog while the kubelet is healthy. */
export class SystemdWatchdog {
  constructor(private readonly deps: SystemdWatchdogDeps) {}

  /** Runs until `signal` aborts. */
  start(signal: AbortSignal): void {
    const { clock, intervalMs, logger } = this.deps;
    logger.info({ interval: goDuration(intervalMs) }, 'Starting systemd watchdog with interval');
    let cancel = () => {};
    const tick = () => {
      if (signal.aborted) return;
      void this.beat(signal).finally(() => {
        if (!signal.aborted) cancel = clock.setTimer(tick, intervalMs);
      });
    };
    signal.addEventListener('abort', () => cancel(), { once: true });
    tick();
  }

  /** One round: notify when healthy, trying again after 1 s and 2 s. */
  private async beat(signal: AbortSignal): Promise<void> {
    const why = this.deps.unhealthy();
    if (why) {
      this.deps.logger.error(
        { err: why },
        'Do not notify watchdog this iteration as the kubelet is reportedly not healthy',
      );
      return;
    }
    for (const delayMs of [0, 1000, 2000]) {
      if (delayMs) await new Promise<void>((r) => this.deps.clock.setTimer(r, delayMs));
      if (signal.aborted) return;
      try {
        if (!(await this.deps.notify())) {
          this.deps.logger.error(
            'Failed to notify watchdog: failed to notify systemd watchdog, notification not supported - (i.e. NOTIFY_SOCKET is unset)',
          );
          return;
        }
        return;
      } catch (err) {
        this.deps.logger.debug({ err: messageOf(err) }, 'Failed to notify systemd watchdog, retrying');
      }
    }
    this.deps.logger.error('Failed to notify watchdog');
  }
}
