/**
 * The test helpers' port choice: a port that another process listens on later must not be one the kernel hands out
 * meanwhile.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort, portIntervals } from './helpers.js';

describe('freePort', () => {
  it('gives free ports from 20000 up, never inside the kernel ephemeral range', async () => {
    const [from, to] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    for (let i = 0; i < 20; i++) {
      const port = await freePort();
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port < from || port > to || (to - from > 40_000 && port >= 20_000 && port < 32768)).toBe(true);
      // and free: a listener takes it
      await new Promise<void>((resolve, reject) => {
        const s = createServer().once('error', reject);
        s.listen(port, '127.0.0.1', () => s.close(() => resolve()));
      });
    }
  });

  it('chooses below or above the ephemeral range, wherever the machine puts it', () => {
    expect(portIntervals([32768, 60999])).toEqual([
      [20_000, 32768],
      [61000, 65536],
    ]);
    // A range that starts low (as on some machines): only the ports above it.
    expect(portIntervals([10000, 60000])).toEqual([[60001, 65536]]);
    expect(portIntervals([1024, 50000])).toEqual([[50001, 65536]]);
    // A range that leaves too few ports: the kernel default's neighbours.
    expect(portIntervals([1024, 65000])).toEqual(portIntervals([32768, 60999]));
  });

  it("gives each of the files running at once ports of its own lane (its worker's VITEST_POOL_ID)", async () => {
    const lane = (pool: string) => {
      process.env.VITEST_POOL_ID = pool;
      return Promise.all(Array.from({ length: 10 }, () => freePort().then((p) => p % 2)));
    };
    const saved = process.env.VITEST_POOL_ID;
    try {
      expect(new Set(await lane('1'))).toEqual(new Set([1]));
      expect(new Set(await lane('2'))).toEqual(new Set([0]));
    } finally {
      if (saved === undefined) delete process.env.VITEST_POOL_ID;
      else process.env.VITEST_POOL_ID = saved;
    }
  });
});
