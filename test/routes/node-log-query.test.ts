/**
 * The node log query's parameters, checks and journalctl command line, against upstream's (kubelet_server_journal*.go).
 */
import { describe, expect, it } from 'vitest';
import { aggregateMessage } from '../../src/lib/aggregate-message.js';
import {
  journalctlArgs,
  parseNodeLogQuery,
  parseRfc3339,
  serviceLogFileNames,
  validateNodeLogQuery,
  type NodeLogQuery,
} from '../../src/routes/node-log-query.js';

const parsed = (params: Record<string, string | string[]>): NodeLogQuery => {
  const r = parseNodeLogQuery(params);
  expect(r.errors).toEqual([]);
  return r.query!;
};

describe('parseNodeLogQuery (newNodeLogQuery)', () => {
  it('splits files (a slash or backslash) from services and drops blank values; no parameter at all is no query', () => {
    expect(parsed({ query: ['kubelet', '/syslog', 'a\\b', '  ', 'containerd'] })).toMatchObject({
      services: ['kubelet', 'containerd'],
      files: ['/syslog', 'a\\b'],
    });
    expect(parseNodeLogQuery({})).toEqual({ query: undefined, errors: [] });
    expect(parseNodeLogQuery({ other: 'x' })).toEqual({ query: undefined, errors: [] });
    expect(parsed({ tailLines: '5' })).toMatchObject({ services: [], files: [], tailLines: 5 });
  });

  it("answers upstream's field errors for values that do not parse, all at once", () => {
    expect(parseNodeLogQuery({ query: '   ' }).errors).toEqual([
      'query: Invalid value: []string{"   "}: query cannot be empty',
    ]);
    const r = parseNodeLogQuery({
      query: 'kubelet',
      sinceTime: 'yesterday',
      untilTime: '2024-02-30T00:00:00Z',
      boot: 'x',
      tailLines: '1e3',
    });
    expect(r.query).toBeUndefined();
    expect(r.errors).toEqual([
      'sinceTime: Invalid value: "yesterday": invalid time format',
      'untilTime: Invalid value: "2024-02-30T00:00:00Z": invalid time format',
      'boot: Invalid value: "x": strconv.Atoi: parsing "x": invalid syntax',
      'tailLines: Invalid value: "1e3": strconv.Atoi: parsing "1e3": invalid syntax',
    ]);
    expect(parseNodeLogQuery({ query: 'k', tailLines: '99999999999999999999' }).errors).toEqual([
      'tailLines: Invalid value: "99999999999999999999": strconv.Atoi: parsing "99999999999999999999": value out of range',
    ]);
    expect(aggregateMessage(r.errors)).toMatch(/^\[sinceTime: .*, tailLines: .*\]$/);
    expect(aggregateMessage(['one'])).toBe('one');
    expect(aggregateMessage(['a', 'a'])).toBe('a');
  });

  it('reads the first of repeated options and RFC 3339 times with offsets and fractions', () => {
    const q = parsed({
      query: 'kubelet',
      tailLines: ['3', '7'],
      sinceTime: '2026-09-24T01:02:03.5+02:00',
      boot: '-1',
      pattern: 'err(or)?',
    });
    expect(q.tailLines).toBe(3);
    expect(q.boot).toBe(-1);
    expect(q.pattern).toBe('err(or)?');
    expect(q.sinceTime).toEqual({
      ms: Date.UTC(2026, 8, 23, 23, 2, 3, 500),
      wall: '2026-9-24 1:2:3',
      text: '2026-09-24 01:02:03.5 +0200 +0200',
    });
    expect(parseRfc3339('2026-09-24T01:02:03Z')?.text).toBe('2026-09-24 01:02:03 +0000 UTC');
    expect(parseRfc3339('2026-09-24 01:02:03Z')).toBeUndefined();
  });
});

describe('validateNodeLogQuery (nodeLogQuery.validate)', () => {
  const check = (params: Record<string, string | string[]>, fileProblem?: string) =>
    validateNodeLogQuery(parsed(params), fileProblem);

  it('accepts services with options and one file without', () => {
    expect(check({ query: ['kubelet', 'containerd'], tailLines: '10', boot: '0', pattern: 'a.*b' })).toEqual([]);
    expect(check({ query: '/syslog' })).toEqual([]);
  });

  it('refuses what upstream refuses, in its words', () => {
    expect(check({ tailLines: '5' })).toEqual(['query: Required value: cannot be empty with options']);
    expect(check({ query: ['kubelet', '/syslog'] })).toEqual([
      'query: Invalid value: "[/syslog], [kubelet]": cannot specify a file and service',
    ]);
    expect(check({ query: ['/a', '/b'] })).toEqual([
      'query: Invalid value: []string{"/a", "/b"}: cannot specify more than one file',
    ]);
    expect(check({ query: '/syslog', tailLines: '1' })).toEqual([
      'query: Invalid value: []string{"/syslog"}: cannot specify file with options',
    ]);
    expect(check({ query: '/nope' }, 'stat /var/log/nope: no such file or directory')).toEqual([
      'query: Invalid value: []string{"/nope"}: stat /var/log/nope: no such file or directory',
    ]);
    expect(check({ query: 'kube;rm -rf' })).toEqual([
      'query: Invalid value: "kube;rm -rf": input contains unsupported characters',
    ]);
    expect(check({ query: 'x'.repeat(257) })).toEqual([
      `query: Invalid value: "${'x'.repeat(257)}": length must be less than 100`,
    ]);
    expect(check({ query: ['a', 'b', 'c', 'd', 'e'] })).toEqual(['query: Too many: 5: must have at most 4 items']);
    expect(check({ query: 'k', boot: '1' })).toEqual(['boot: Invalid value: 1: must be less than 1']);
    expect(check({ query: 'k', tailLines: '100001' })).toEqual([
      'tailLines: Invalid value: 100001: must be between 0 and 100000, inclusive',
    ]);
    expect(check({ query: 'k', tailLines: '-1' })).toEqual([
      'tailLines: Invalid value: -1: must be between 0 and 100000, inclusive',
    ]);
    expect(check({ query: 'k', sinceTime: '2026-09-24T02:00:00Z', untilTime: '2026-09-24T01:00:00Z' })).toEqual([
      'untilTime: Invalid value: 2026-09-24 01:00:00 +0000 UTC: must be after `sinceTime`',
    ]);
    expect(check({ query: 'k', pattern: '(' })[0]).toMatch(/^pattern: Invalid value: "\(": error parsing regexp: /);
    expect(check({ query: 'k', pattern: 'a(?=b)' })).toEqual([
      'pattern: Invalid value: "a(?=b)": error parsing regexp: invalid or unsupported Perl syntax: `(?=`',
    ]);
  });
});

describe('journalctlArgs (getLoggingCmd on Linux)', () => {
  it("builds upstream's command line in upstream's order; times at their own offset in dateLayout", () => {
    const q = parsed({
      query: 'kubelet',
      sinceTime: '2026-09-24T01:02:03Z',
      untilTime: '2026-09-25T10:20:30+01:00',
      tailLines: '5',
      pattern: 'error',
      boot: '-1',
    });
    expect(journalctlArgs(q, ['kubelet', 'containerd'])).toEqual([
      '--utc',
      '--no-pager',
      '--output=short-precise',
      '--since=2026-9-24 1:2:3',
      '--until=2026-9-25 10:20:30',
      '--pager-end',
      '--lines=5',
      '--unit=kubelet',
      '--unit=containerd',
      '--grep=error',
      '--boot',
      '-1',
    ]);
    expect(journalctlArgs(parsed({ query: 'kubelet' }), ['kubelet'])).toEqual([
      '--utc',
      '--no-pager',
      '--output=short-precise',
      '--unit=kubelet',
    ]);
  });

  it('looks for a service file as <name>, <name>.log, <name>/<name>.log', () => {
    expect(serviceLogFileNames('kube-proxy')).toEqual(['kube-proxy', 'kube-proxy.log', 'kube-proxy/kube-proxy.log']);
  });
});
