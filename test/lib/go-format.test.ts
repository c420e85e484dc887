/** Go's time.Time and time.Duration strings, as the Go kubelet's log lines print them. */
import { describe, expect, it } from 'vitest';
import { goDuration, goTimeString } from '../../src/lib/go-format.js';

describe('Go formats', () => {
  it('time.Duration.String', () => {
    expect(
      [0, 0.0005, 0.5, 1, 319.625651, 1000, 1500, 3319.625651, 68818.440372, 60_000, 3_600_000, 3_723_500, -1500].map(
        goDuration,
      ),
    ).toEqual([
      '0s',
      '500ns',
      '500µs',
      '1ms',
      '319.625651ms',
      '1s',
      '1.5s',
      '3.319625651s',
      '1m8.818440372s',
      '1m0s',
      '1h0m0s',
      '1h2m3.5s',
      '-1.5s',
    ]);
  });

  it('time.Time.String: UTC, the fraction without trailing zeros, the monotonic reading; the zero time', () => {
    expect(goTimeString(Date.UTC(2024, 4, 28, 16, 17, 1))).toBe('2024-05-28 16:17:01 +0000 UTC');
    expect(goTimeString(Date.UTC(2024, 4, 28, 16, 17, 1, 320), 5731069.650881)).toBe(
      '2024-05-28 16:17:01.32 +0000 UTC m=+5731.069650881',
    );
    expect(goTimeString(undefined)).toBe('0001-01-01 00:00:00 +0000 UTC');
  });
});
