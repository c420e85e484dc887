import { describe, expect, it } from 'vitest';
import { parseLogQuery } from '../../src/routes/container-logs-query.js';
import { KubeletError } from '../../src/lib/errors.js';

const NOW = 1_700_000_000_000_000_000n;
const err = (q: Record<string, string>) => {
  try {
    parseLogQuery(q, NOW);
    return undefined;
  } catch (e) {
    return e as KubeletError;
  }
};

describe('parseLogQuery', () => {
  const ok: [Record<string, string>, object][] = [
    [{}, {}],
    [
      { follow: 'true', timestamps: '1', previous: 'false' },
      { follow: true, timestamps: true, previous: false },
    ],
    [{ tailLines: '5' }, { tailLines: 5 }],
    [{ tail: '7' }, { tailLines: 7 }],
    [{ tail: 'all', tailLines: '3' }, {}],
    [{ limitBytes: '10' }, { limitBytes: 10 }],
    [{ sinceSeconds: '10' }, { sinceNs: NOW - 10_000_000_000n }],
    [{ sinceTime: '2023-11-14T22:13:20Z' }, { sinceNs: 1_700_000_000_000_000_000n }],
    [{ sinceTime: '2023-11-14T22:13:20.5Z' }, { sinceNs: 1_700_000_000_500_000_000n }],
    [{ sinceTime: '2023-11-14T22:13:20.123456789123Z' }, { sinceNs: 1_700_000_000_123_456_789n }],
    [{ tailLines: '9223372036854775807' }, { tailLines: Number('9223372036854775807') }],
  ];
  for (const [q, want] of ok) it(`accepts ${JSON.stringify(q)}`, () => expect(parseLogQuery(q, NOW)).toEqual(want));
  const bad: [Record<string, string>, string, number][] = [
    [{ follow: 'yes' }, 'Unable to decode query.', 400],
    [{ tailLines: 'x' }, 'Unable to decode query.', 400],
    [{ sinceTime: 'yesterday' }, 'Unable to decode query.', 400],
    [{ tailLines: '-1' }, 'tailLines', 422],
    [{ tailLines: '9223372036854775808' }, 'Unable to decode query.', 400],
    [{ limitBytes: '99999999999999999999' }, 'Unable to decode query.', 400],
    [{ limitBytes: '0' }, 'limitBytes', 422],
    [{ sinceSeconds: '0' }, 'sinceSeconds', 422],
    [{ sinceSeconds: '5', sinceTime: '2023-11-14T22:13:20Z' }, 'at most one of `sinceTime` or `sinceSeconds`', 422],
    // stream is validated whatever the PodLogsQuerySplitStreams gate, as upstream's ValidatePodLogOptions.
    [{ stream: 'Both' }, 'stream: Unsupported value: "Both": supported values: "Stdout", "Stderr", "All"', 422],
    [{ stream: 'Stderr', tailLines: '3' }, '`tailLines` and specific `stream` are mutually exclusive for now', 422],
  ];
  for (const [q, msg, code] of bad) {
    it(`rejects ${JSON.stringify(q)} with ${code}`, () => {
      const e = err(q);
      expect(e).toBeInstanceOf(KubeletError);
      expect(e!.code).toBe(code === 400 ? 'BadRequest' : 'Invalid');
      expect(e!.message).toContain(msg);
    });
  }

  it('picks a stream with PodLogsQuerySplitStreams on; without it, or for All, both streams', () => {
    expect(parseLogQuery({ stream: 'Stderr' }, NOW, { splitStreams: true })).toEqual({ stream: 'stderr' });
    expect(parseLogQuery({ stream: 'Stdout' }, NOW, { splitStreams: true })).toEqual({ stream: 'stdout' });
    expect(parseLogQuery({ stream: 'All', tailLines: '2' }, NOW, { splitStreams: true })).toEqual({ tailLines: 2 });
    expect(parseLogQuery({ stream: 'Stderr' }, NOW)).toEqual({});
  });
});
