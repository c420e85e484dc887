import { describe, expect, it } from 'vitest';
import { TtlCache } from '../../src/lib/ttl-cache.js';
import { FakeClock } from '../../src/lib/clock.js';

describe('TtlCache', () => {
  it('expires entries after their own TTL', () => {
    const clock = new FakeClock();
    const c = new TtlCache<string>({ maxEntries: 10, clock });
    c.set('a', 'A', 1000);
    c.set('b', 'B', 5000);
    clock.advance(999);
    expect([c.get('a'), c.get('b')]).toEqual(['A', 'B']);
    clock.advance(1);
    expect([c.get('a'), c.get('b')]).toEqual([undefined, 'B']);
    c.set('z', 'Z', 0);
    expect(c.get('z')).toBeUndefined();
  });
  it('expires an entry after its TTL also when the wall clock was stepped back meanwhile', () => {
    const clock = new FakeClock();
    const c = new TtlCache<string>({ maxEntries: 10, clock });
    c.set('allowed', 'yes', 300_000);
    clock.stepWall(-3_600_000);
    clock.advance(300_000);
    expect(c.get('allowed')).toBeUndefined();
  });
  it('stays bounded, dropping the least recently used', () => {
    const c = new TtlCache<number>({ maxEntries: 3, clock: new FakeClock() });
    for (let i = 0; i < 3; i++) c.set(`k${i}`, i, 60_000);
    expect(c.get('k0')).toBe(0); // k0 is now the most recent
    for (let i = 3; i < 1000; i++) c.set(`k${i}`, i, 60_000);
    expect(c.size).toBe(3);
    expect([c.get('k0'), c.get('k1'), c.get('k999')]).toEqual([undefined, undefined, 999]);
  });
});
