/**
 * systemd's notify protocol (sd_notify): a state line ("READY=1", "WATCHDOG=1") sent to the
 * datagram socket systemd names in NOTIFY_SOCKET. Node has no Unix datagram sockets, so the line
 * goes through systemd's own `systemd-notify`, which, run by root, sends it with its parent's
 * credentials: systemd takes it as the kubelet's (a unit's default NotifyAccess=main accepts only
 * the main process). Bounded: a `systemd-notify` that does not finish in 5 s is killed.
 */
import { execFile } from 'node:child_process';

/**
 * Sends `state` to the service manager; false without NOTIFY_SOCKET (not run by systemd, or not as a notify or
 * watchdog service), as sd_notify. Rejects when it cannot be sent.
 */
export function sdNotify(state: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (!env.NOTIFY_SOCKET) return Promise.resolve(false);
  return new Promise((resolve, reject) => {
    execFile('systemd-notify', ['--no-block', state], { env, timeout: 5000 }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`systemd-notify ${state}: ${String(stderr).trim() || err.message}`));
      else resolve(true);
    });
  });
}
