/**
 * sd_notify through systemd-notify: nothing without NOTIFY_SOCKET, an error naming the state when it cannot be sent.
 */
import { describe, expect, it } from 'vitest';
import { sdNotify } from '../../src/lib/sd-notify.js';

describe('sdNotify', () => {
  it('sends nothing without NOTIFY_SOCKET (not run by systemd as a notify or watchdog service)', async () => {
    expect(await sdNotify('READY=1', { PATH: process.env.PATH })).toBe(false);
  });

  it('rejects, naming the state, when the socket is not there', async () => {
    await expect(
      sdNotify('WATCHDOG=1', { PATH: process.env.PATH, NOTIFY_SOCKET: '/nonexistent/notify.sock' }),
    ).rejects.toThrow(/^systemd-notify WATCHDOG=1: /);
  });
});
