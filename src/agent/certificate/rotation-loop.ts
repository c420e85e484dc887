/**
 * The loop both certificate managers run (client-go's certificate manager): sleep until the
 * current certificate's rotation deadline (70–90 % of its lifetime, jittered; re-checked at least
 * hourly), then get a new one; failures retry with backoff from 1 s up to 1 min. Without a
 * usable certificate the serving manager requests one at once; the client rotator, which cannot
 * talk to the apiserver without one, waits a minute for the bootstrap to provide it.
 */
import { sleep, type Clock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';
import { rotationDeadline } from './csr.js';

type Validity = { notBefore: number; notAfter: number };

/**
 * What a manager's loop has seen, for its metrics: the current certificate's expiry (ms; undefined: none) and the
 * failed renewals.
 */
export interface RotationStatus {
  notAfter?: number;
  renewFailures: number;
  /**
   * Told how long (s) a certificate lived once a new one replaced it
   * (kubelet_certificate_manager_server_rotation_seconds).
   */
  onRotated?(livedSeconds: number): void;
}

/** Runs until `signal` aborts; never throws. */
export function runRotationLoop(o: {
  signal: AbortSignal;
  clock: Clock;
  logger: Logger;
  jitter?: () => number;
  /** The current certificate's validity (undefined: there is none). */
  validity(): Promise<Validity | undefined>;
  /** What to do without a certificate: request one, or wait for someone else to provide it. */
  whenMissing: 'request' | 'wait';
  /** Gets and stores a new certificate (`current`: the one it replaces, if any). */
  renew(current: Validity | undefined): Promise<void>;
  /** The warning logged when a renewal fails. */
  failure: string;
  /** Kept up to date by the loop. */
  status?: RotationStatus;
}): void {
  const { signal, clock } = o;
  void (async () => {
    let delay = 1000;
    while (!signal.aborted) {
      const v = await o.validity();
      if (o.status) o.status.notAfter = v?.notAfter;
      if (v && v.notAfter > clock.now()) {
        const wait = rotationDeadline(v, (o.jitter ?? Math.random)()) - clock.now();
        if (wait > 0) await sleep(Math.min(wait, 3_600_000), signal, clock);
        if (signal.aborted || rotationDeadline(v, 0) > clock.now()) continue;
      } else if (!v && o.whenMissing === 'wait') {
        await sleep(60_000, signal, clock);
        continue;
      }
      try {
        await o.renew(v);
        if (v) o.status?.onRotated?.((clock.now() - v.notBefore) / 1000);
        delay = 1000;
      } catch (err) {
        if (signal.aborted) return;
        if (o.status) o.status.renewFailures++;
        o.logger.warn({ err: messageOf(err), retryInMs: delay }, o.failure);
        await sleep(delay, signal, clock);
        delay = Math.min(delay * 2, 60_000);
      }
    }
  })();
}
