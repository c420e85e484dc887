/** The systemd watchdog's settings (as go-systemd reads them) and its rounds, on a fake clock. */
import { describe, expect, it } from 'vitest';
import { SystemdWatchdog, watchdogIntervalMs } from '../../../src/agent/watchdog/systemd-watchdog.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';

const logger = createLogger({ level: 'fatal' });
const flush = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

describe('watchdog settings', () => {
  it('half of WATCHDOG_USEC; none without it or for another PID; upstream’s errors', () => {
    expect(watchdogIntervalMs({}, 7)).toBeUndefined();
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '60000000' }, 7)).toBe(30_000);
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '60000000', WATCHDOG_PID: '7' }, 7)).toBe(30_000);
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '60000000', WATCHDOG_PID: '8' }, 7)).toBeUndefined();
    expect(() => watchdogIntervalMs({ WATCHDOG_USEC: '0' }, 7)).toThrow(
      'configure watchdog: error WATCHDOG_USEC must be a positive number',
    );
    expect(() => watchdogIntervalMs({ WATCHDOG_USEC: '1000000' }, 7)).toThrow(
      'configure watchdog timeout too small: 1s',
    );
    expect(() => watchdogIntervalMs({ WATCHDOG_USEC: '5000000', WATCHDOG_PID: 'x' }, 7)).toThrow(
      'configure watchdog: error converting WATCHDOG_PID: strconv.Atoi: parsing "x": invalid syntax',
    );
  });
});

describe('the watchdog', () => {
  it('notifies every interval while healthy, not while not, and tries a failed notification again', async () => {
    const clock = new FakeClock();
    const state = { unhealthy: undefined as string | undefined, notified: 0, failures: 0 };
    const abort = new AbortController();
    new SystemdWatchdog({
      intervalMs: 10_000,
      unhealthy: () => state.unhealthy,
      notify: async () => {
        if (state.failures > 0) {
          state.failures--;
          throw new Error('systemd-notify WATCHDOG=1: Connection refused');
        }
        state.notified++;
        return true;
      },
      clock,
      logger,
    }).start(abort.signal);
    await flush();
    expect(state.notified).toBe(1); // at once
    clock.advance(10_000);
    await flush();
    expect(state.notified).toBe(2);
    state.unhealthy = 'sync Loop took longer than expected';
    clock.advance(10_000);
    await flush();
    expect(state.notified).toBe(2);
    state.unhealthy = undefined;
    state.failures = 2;
    clock.advance(10_000);
    await flush();
    clock.advance(1000);
    await flush();
    expect(state.notified).toBe(2);
    clock.advance(2000);
    await flush();
    expect(state.notified).toBe(3); // the third try
    abort.abort();
    clock.advance(60_000);
    await flush();
    expect(state.notified).toBe(3);
  });
});
