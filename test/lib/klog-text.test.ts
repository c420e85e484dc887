/** klog's text format from pino's JSON lines: header, quoting and field rendering as the Go kubelet writes them. */
import { describe, expect, it } from 'vitest';
import { klogHeader, klogTextLine } from '../../src/lib/klog-text.js';
import { createLogger } from '../../src/lib/logger.js';

const at = new Date(2026, 10, 25, 3, 4, 5, 67).getTime();

describe('klog text lines', () => {
  it('header: severity letter, local MMDD hh:mm:ss.micro, pid in 7 columns, source:0', () => {
    expect(klogHeader(30, at, 4242, 'kubelet')).toBe('I1125 03:04:05.067000    4242 kubelet:0] ');
    expect([10, 20, 30, 40, 50, 60].map((l) => klogHeader(l, at, 1, 'x')[0]).join('')).toBe('IIIWEF');
  });

  it('fields: strings quoted as Go does, numbers and booleans bare, objects as JSON, multi-line strings as a block', () => {
    const line = klogTextLine(
      JSON.stringify({
        level: 40,
        time: at,
        pid: 7,
        component: 'http',
        msg: 'Pod "a" failed',
        pod: 'ns/a',
        n: 3,
        ok: false,
        ids: ['x', 'y'],
        ctl: '\u0001',
        text: 'l1\nl2',
      }),
    );
    expect(line).toBe(
      'W1125 03:04:05.067000       7 http:0] "Pod \\"a\\" failed" pod="ns/a" n=3 ok=false ids=["x","y"] ctl="\\x01" text=<\n\tl1\n\tl2\n >\n',
    );
    expect(klogTextLine('not json')).toBe('not json\n');
  });

  it('the text logger keeps the redaction of secrets', () => {
    const lines: string[] = [];
    const log = createLogger({ format: 'text', destination: { write: (s: string) => void lines.push(s) } });
    log.info({ token: 'sekrit', user: 'u' }, 'authenticated');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ kubelet:0\] "authenticated" token="\[REDACTED\]" user="u"\n$/,
    );
    expect(lines[0]).not.toContain('sekrit');
  });
});
