/**
 * The certificate managers' loop as their metrics see it: the status follows the current
 * certificate's expiry and counts failed renewals, which /metrics renders under upstream's names
 * (kubelet_certificate_manager_{client,server}_ttl_seconds, the renewal error counters).
 */
import { describe, expect, it } from 'vitest';
import { runRotationLoop, type RotationStatus } from '../../../src/agent/certificate/rotation-loop.js';
import { KubeletMetrics } from '../../../src/agent/metrics/kubelet-metrics.js';
import { registerCertificateMetrics } from '../../../src/agent/metrics/certificate-metrics.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { silentLogger } from '../../../src/lib/logger.js';

const tick = () => new Promise((r) => setImmediate(r));

type Cert = { notBefore: number; notAfter: number };

/**
 * A server certificate loop on a fake clock, its metrics registered; `renew` gives the next certificate (or throws).
 */
function serverLoop(renew: (now: number) => Cert) {
  const clock = new FakeClock(Date.UTC(2026, 10, 25));
  const status: RotationStatus = { renewFailures: 0 };
  const metrics = new KubeletMetrics({ nodeName: 'n', running: { pods: () => 0, containers: () => ({}) } });
  registerCertificateMetrics(metrics, 'server', status, () => clock.now());
  const loop = { clock, status, metrics, cert: undefined as Cert | undefined, abort: new AbortController() };
  const start = () =>
    runRotationLoop({
      signal: loop.abort.signal,
      clock,
      logger: silentLogger,
      jitter: () => 0,
      validity: async () => loop.cert,
      whenMissing: 'request',
      failure: 'failed',
      status,
      renew: async () => {
        loop.cert = renew(clock.now());
      },
    });
  return {
    ...loop,
    start,
    get cert() {
      return loop.cert;
    },
  };
}

describe('rotation loop status', () => {
  it('tracks the expiry of the current certificate and counts failed renewals; the metrics read it', async () => {
    let fail = 2;
    const l = serverLoop((now) => {
      if (fail-- > 0) throw new Error('no signer');
      return { notBefore: now, notAfter: now + 100_000.9e3 };
    });
    const { clock, status, metrics } = l;
    const series = (name: string) => new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics.text())?.[1];
    expect(series('kubelet_certificate_manager_server_ttl_seconds')).toBe('+Inf');
    l.start();
    // Two failures (retried after 1 s, then 2 s), then a certificate.
    for (let i = 0; i < 20 && !status.notAfter; i++) {
      await tick();
      clock.advance(1000);
    }
    expect(status.renewFailures).toBe(2);
    expect(status.notAfter).toBe(l.cert!.notAfter);
    clock.advance(500);
    expect(series('kubelet_certificate_manager_server_ttl_seconds')).toBe(
      String(Math.trunc((l.cert!.notAfter - clock.now()) / 1000)),
    );
    expect(series('kubelet_server_expiration_renew_errors')).toBe('2');
    l.abort.abort();
  });

  it('observes how long the serving certificate lived once a new one replaces it (kubelet_certificate_manager_server_rotation_seconds, upstream buckets); the first one is no rotation', async () => {
    let issued = 0;
    const l = serverLoop((now) => {
      issued++;
      return { notBefore: now, notAfter: now + 10_000e3 };
    });
    const { clock } = l;
    const text = () => l.metrics.text();
    expect(text()).toContain('# TYPE kubelet_certificate_manager_server_rotation_seconds histogram');
    expect(text()).toMatch(/^kubelet_certificate_manager_server_rotation_seconds_count 0$/m);
    l.start();
    for (let i = 0; i < 300 && issued < 2; i++) {
      await tick();
      clock.advance(60_000);
    }
    expect(issued).toBe(2);
    const sum = Number(/^kubelet_certificate_manager_server_rotation_seconds_sum (\S+)$/m.exec(text())![1]);
    // Rotated at 70 % of its 10,000 s lifetime (jitter 0), within the loop's one-minute steps here.
    expect(sum).toBeGreaterThanOrEqual(7000);
    expect(sum).toBeLessThan(7000 + 61);
    expect(text()).toMatch(/^kubelet_certificate_manager_server_rotation_seconds_count 1$/m);
    expect(text()).toMatch(/^kubelet_certificate_manager_server_rotation_seconds_bucket\{le="14400"\} 1$/m);
    expect(text()).toMatch(/^kubelet_certificate_manager_server_rotation_seconds_bucket\{le="3600"\} 0$/m);
    l.abort.abort();
  });
});
