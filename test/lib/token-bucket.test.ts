/** The token bucket (events, registry pulls, apiserver requests) and the pull semaphore. */
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/lib/clock.js';
import { Semaphore, TokenBucket } from '../../src/lib/token-bucket.js';

describe('TokenBucket', () => {
  it('gives the burst at once, then refills at qps up to the burst', () => {
    let now = 1000;
    const b = new TokenBucket(2, 3, () => now);
    expect([b.tryTake(), b.tryTake(), b.tryTake(), b.tryTake()]).toEqual([true, true, true, false]);
    now += 499;
    expect(b.tryTake()).toBe(false);
    now += 1;
    expect(b.tryTake()).toBe(true);
    now += 60_000; // refills to the burst, not beyond
    expect([b.tryTake(), b.tryTake(), b.tryTake(), b.tryTake()]).toEqual([true, true, true, false]);
  });

  it('qps 0 means no limit', () => {
    const b = new TokenBucket(0, 0, () => 5);
    for (let i = 0; i < 1000; i++) expect(b.tryTake()).toBe(true);
    expect(b.reserve()).toBe(0);
  });

  it('reserve queues callers: each waits one more 1/qps once the burst is spent', () => {
    let now = 1000;
    const b = new TokenBucket(10, 2, () => now);
    expect([b.reserve(), b.reserve(), b.reserve(), b.reserve()]).toEqual([0, 0, 100, 200]);
    now += 200; // the two reserved tokens have come; the next waits its own 100 ms
    expect(b.reserve()).toBe(100);
  });

  it('a clock that goes back (a wall clock stepped back an hour) leaves no debt: the next request waits its turn, not an hour', () => {
    let now = 10_000_000;
    const b = new TokenBucket(50, 0, () => now);
    expect(b.reserve()).toBe(20);
    now -= 3_600_000;
    // Behind the first reservation, as without the step; before, an hour's worth of tokens was owed.
    expect(b.reserve()).toBe(40);
  });

  it('reads the monotonic clock by default, which a wall clock step does not move', () => {
    const clock = new FakeClock(10_000_000);
    const b = new TokenBucket(1, 1, () => clock.monotonic());
    expect(b.tryTake()).toBe(true);
    clock.stepWall(-3_600_000);
    clock.advance(1000);
    expect(b.tryTake()).toBe(true);
  });

  it('a burst of 0 still lets one request through per 1/qps', () => {
    let now = 1000;
    const b = new TokenBucket(4, 0, () => now);
    expect(b.reserve()).toBe(250);
    now += 250;
    expect(b.reserve()).toBe(250);
  });
});

describe('Semaphore', () => {
  it('runs at most `limit` tasks at once, in order, and survives failures', async () => {
    const s = new Semaphore(2);
    let running = 0;
    let peak = 0;
    const order: number[] = [];
    const task = (i: number) => async () => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 5));
      order.push(i);
      running--;
      if (i === 1) throw new Error('boom');
      return i;
    };
    const results = await Promise.allSettled([0, 1, 2, 3, 4].map((i) => s.run(task(i))));
    expect(peak).toBe(2);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(order.slice(0, 2).sort((a, b) => a - b)).toEqual([0, 1]);
    expect(running).toBe(0);
  });

  it('a waiting task whose signal aborts leaves the queue at once and never runs; the others keep their turns', async () => {
    const s = new Semaphore(1);
    const ran: string[] = [];
    let release!: () => void;
    const first = s.run(() => new Promise<void>((r) => (release = r)).then(() => void ran.push('first')));
    const ac = new AbortController();
    const abandoned = s.run(async () => void ran.push('abandoned'), ac.signal);
    const third = s.run(async () => void ran.push('third'));
    ac.abort(new Error('superseded'));
    await expect(abandoned).rejects.toThrow('superseded');
    release();
    await Promise.all([first, third]);
    expect(ran).toEqual(['first', 'third']);
    const gone = new AbortController();
    gone.abort(new Error('already'));
    await expect(s.run(async () => void ran.push('never'), gone.signal)).rejects.toThrow('already');
    await s.run(async () => void ran.push('free'));
    expect(ran).toEqual(['first', 'third', 'free']);
  });

  it('limit 0 means no limit', async () => {
    const s = new Semaphore(0);
    let running = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 10 }, () =>
        s.run(async () => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((r) => setTimeout(r, 5));
          running--;
        }),
      ),
    );
    expect(peak).toBe(10);
  });

  /** A task that runs until `done[name]()` is called. */
  const controlled = (ran: string[], done: Record<string, () => void>) => (name: string) => () =>
    new Promise<void>((r) => {
      ran.push(name);
      done[name] = r;
    });
  const settle = () => new Promise((r) => setImmediate(r));

  it('a freed slot goes to the waiter of the highest priority, in order within one', async () => {
    const s = new Semaphore(1, { priorities: 3 });
    const ran: string[] = [];
    const done: Record<string, () => void> = {};
    const task = controlled(ran, done);
    const all = [
      s.run(task('first')),
      s.run(task('low-1'), undefined, 0),
      s.run(task('high'), undefined, 2),
      s.run(task('mid'), undefined, 1),
      s.run(task('low-2')),
    ];
    await settle();
    expect(s.load).toEqual({ running: 1, waiting: 4 });
    for (const next of ['first', 'high', 'mid', 'low-1', 'low-2']) {
      expect(ran.at(-1)).toBe(next);
      done[next]();
      await settle();
    }
    await Promise.all(all);
    expect(ran).toEqual(['first', 'high', 'mid', 'low-1', 'low-2']);
    expect(s.load).toEqual({ running: 0, waiting: 0 });
  });

  it('a task holding its slot past holdMs gives it up and runs on; its end frees nothing twice', async () => {
    const clock = new FakeClock();
    const s = new Semaphore(1, { holdMs: 2000, clock });
    const ran: string[] = [];
    const done: Record<string, () => void> = {};
    const task = controlled(ran, done);
    const hung = s.run(task('hung'));
    const next = s.run(task('next'));
    await settle();
    clock.advance(1999);
    await settle();
    expect(ran).toEqual(['hung']);
    clock.advance(1);
    await settle();
    expect(ran).toEqual(['hung', 'next']);
    expect(s.load).toEqual({ running: 1, waiting: 0 });
    done.hung(); // its slot was passed on already: still one running
    await hung;
    expect(s.load).toEqual({ running: 1, waiting: 0 });
    done.next();
    await next;
    expect(s.load).toEqual({ running: 0, waiting: 0 });
    clock.advance(5000); // no timer left to free a slot again
    expect(s.load).toEqual({ running: 0, waiting: 0 });
  });
});
