import { describe, expect, it } from 'vitest';
import { memoByObject } from '../../src/lib/memo.js';

describe('memoByObject', () => {
  it('computes once per object, again for another object, and remembers undefined too', () => {
    let calls = 0;
    const f = memoByObject((o: { n: number }) => (calls++, o.n > 0 ? o.n * 2 : undefined));
    const a = { n: 2 };
    expect([f(a), f(a), f({ n: 2 })]).toEqual([4, 4, 4]);
    expect(calls).toBe(2);
    const z = { n: 0 };
    expect([f(z), f(z)]).toEqual([undefined, undefined]);
    expect(calls).toBe(3);
  });
});
