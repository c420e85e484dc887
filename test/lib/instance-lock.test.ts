/**
 * The instance lock's abstract socket, which any process of the network namespace can connect to (a hostNetwork pod
 * included): a client learns the holder's PID, and clients that never close cannot pile up the holder's descriptors.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireInstanceLock, lockSocketName } from '../../src/lib/instance-lock.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-instance-lock-'));
const openFds = () => readdirSync('/proc/self/fd').length;

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the instance lock', () => {
  it('tells a client its PID and closes; clients that keep their end open hold none of its descriptors', async () => {
    const lock = await acquireInstanceLock(dir, 'root directory');
    const name = lockSocketName(realpathSync(dir));
    const before = openFds();
    const clients: Socket[] = [];
    const ask = () =>
      new Promise<string>((resolve) => {
        // allowHalfOpen: the client never closes its end, as a hostile one would not.
        const c = createConnection({ path: name, allowHalfOpen: true });
        clients.push(c);
        let data = '';
        c.on('data', (d) => (data += String(d)));
        c.on('end', () => resolve(data.trim()));
        c.on('error', () => resolve('error'));
      });
    const answers: string[] = [];
    // In fours, below the lock's limit of clients at once.
    for (let batch = 0; batch < 10; batch++) answers.push(...(await Promise.all([ask(), ask(), ask(), ask()])));
    expect(new Set(answers)).toEqual(new Set([String(process.pid)]));
    await new Promise((resolve) => setTimeout(resolve, 200));
    // The 40 clients' own descriptors, and none of the server's.
    expect(openFds() - before).toBeLessThanOrEqual(40 + 2);
    for (const c of clients) c.destroy();
    lock.release();
  });
});
