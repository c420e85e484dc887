/** The test helpers' port choice: a port that another process listens on later must not be one the kernel hands out meanwhile. */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from './helpers.js';

describe('freePort', () => {
  it('gives free ports from 20000 up to the kernel ephemeral range, never inside it', async () => {
    const ephemeralFrom = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    for (let i = 0; i < 20; i++) {
      const port = await freePort();
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(Math.max(ephemeralFrom, 25_000));
      // and free: a listener takes it
      await new Promise<void>((resolve, reject) => {
        const s = createServer().once('error', reject);
        s.listen(port, '127.0.0.1', () => s.close(() => resolve()));
      });
    }
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
