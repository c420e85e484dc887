import { describe, expect, it } from 'vitest';
import { requestIdOf } from '../../src/streaming/port-forward/spdy.js';
import { portsFromQuery } from '../../src/streaming/port-forward/ports-query.js';

const stream = (id: number, headers: Record<string, string>) => ({ id, header: (n: string) => headers[n] });

describe('port-forward request ids and ports', () => {
  it('uses the requestid header, else derives it from stream ids as upstream (error: id, data: id − 2)', () => {
    expect(requestIdOf(stream(7, { streamtype: 'data', requestid: '3' }))).toBe('3');
    expect(requestIdOf(stream(1, { streamtype: 'error' }))).toBe('1');
    expect(requestIdOf(stream(3, { streamtype: 'data' }))).toBe('1');
  });
  it('parses ?port= lists and rejects bad ports', () => {
    expect(portsFromQuery(new URLSearchParams('port=80,8080&port=9000'))).toEqual([80, 8080, 9000]);
    expect(portsFromQuery(new URLSearchParams('port=0'))).toMatchObject({
      error: expect.stringMatching(/unable to parse "0"/),
    });
    expect(portsFromQuery(new URLSearchParams('port=http'))).toMatchObject({ error: expect.any(String) });
    expect(portsFromQuery(new URLSearchParams(''))).toEqual([]);
  });
});
