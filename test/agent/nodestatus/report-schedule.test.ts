/** When an unchanged node status is reported: upstream's frequency, with its jitter after a change. */
import { describe, expect, it } from 'vitest';
import { delayAfterReport, statusReportDue } from '../../../src/agent/nodestatus/report-schedule.js';

const F = 300_000;

describe('node status reports', () => {
  it.each([
    ['a change is reported at once', { changed: true, nowMs: 1, lastReportMs: 1, delayMs: F / 2 }, true],
    ['the first report is at once', { changed: false, nowMs: 5, lastReportMs: undefined, delayMs: 0 }, true],
    ['unchanged, before the frequency', { changed: false, nowMs: F - 1, lastReportMs: 1, delayMs: 0 }, false],
    ['unchanged, at the frequency', { changed: false, nowMs: F + 1, lastReportMs: 1, delayMs: 0 }, true],
    [
      'a negative delay brings it forward',
      { changed: false, nowMs: F / 2 + 1, lastReportMs: 1, delayMs: -F / 2 },
      true,
    ],
    ['a positive delay puts it back', { changed: false, nowMs: F + 1, lastReportMs: 1, delayMs: F / 4 }, false],
  ])('%s', (_name, o, due) => expect(statusReportDue({ ...o, frequencyMs: F })).toBe(due));

  it('draws the delay over ±half the frequency after a change, and none after an unchanged report', () => {
    expect(delayAfterReport(true, F, () => 0)).toBe(-F / 2);
    expect(delayAfterReport(true, F, () => 0.999999)).toBeCloseTo(F / 2, -1);
    expect(delayAfterReport(true, F, () => 0.5)).toBe(0);
    expect(delayAfterReport(false, F, () => 0)).toBe(0);
  });
});
