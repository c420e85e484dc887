import { describe, expect, it } from 'vitest';
import { goQuote } from '../../src/lib/go-quote.js';

describe("goQuote (Go's strconv.Quote)", () => {
  it("uses Go's escapes, \\x for other ASCII controls and DEL, \\u for C1 controls; keeps printable Unicode", () => {
    expect(goQuote('say "hi"\\')).toBe('"say \\"hi\\"\\\\"');
    expect(goQuote('\x07\b\f\n\r\t\v')).toBe('"\\a\\b\\f\\n\\r\\t\\v"');
    expect(goQuote('\x00\x1b\x7f')).toBe('"\\x00\\x1b\\x7f"');
    expect(goQuote('\u0085')).toBe('"\\u0085"');
    expect(goQuote('ünïcödé ✓ 日本')).toBe('"ünïcödé ✓ 日本"');
  });
});
