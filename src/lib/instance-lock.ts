/**
 * One process per directory: an exclusive lock held for the life of the process, taken before
 * anything in the directory is touched. The lock is a Linux abstract Unix socket named after the
 * directory's path, so the kernel releases it however the holder dies (SIGKILL included) and no
 * stale lock file can ever block a restart. A second process learns the holder's PID by
 * connecting, for the message.
 */
import { createHash } from 'node:crypto';
import { createConnection, createServer, type Server } from 'node:net';
import { realpath } from 'node:fs/promises';
import { resolve } from 'node:path';

/** A held lock. */
export interface InstanceLock {
  release(): void;
}

/** Thrown when another process holds the lock. */
export class LockHeldError extends Error {}

async function canonical(dir: string): Promise<string> {
  return realpath(dir).catch(() => resolve(dir));
}

function holderPid(name: string): Promise<string> {
  return new Promise((done) => {
    const s = createConnection({ path: name });
    let data = '';
    const end = (v: string) => {
      s.destroy();
      done(v);
    };
    s.setTimeout(1000, () => end('unknown'));
    s.on('data', (d) => {
      data += String(d);
    });
    s.on('end', () => end(data.trim() || 'unknown'));
    s.on('error', () => end('unknown'));
  });
}

/** The abstract socket name of the lock of the directory at the canonical `path`. Pure. */
export function lockSocketName(path: string): string {
  return `\0tskubelet-lock:${createHash('sha256').update(path).digest('hex').slice(0, 40)}`;
}

/**
 * How many clients may be connected at once. An abstract socket has no file mode: any process of the network
 * namespace (a hostNetwork pod included) can connect.
 */
const MAX_LOCK_CLIENTS = 16;

/** Takes the lock for `dir` (`what` names it in the error), or rejects with LockHeldError. */
export async function acquireInstanceLock(dir: string, what: string): Promise<InstanceLock> {
  const path = await canonical(dir);
  const name = lockSocketName(path);
  const server: Server = createServer((c) => {
    c.on('error', () => {});
    // Closed once the PID is written: a client that never closes its end kept a descriptor of the kubelet's.
    c.end(`${process.pid}\n`, () => c.destroy());
  });
  server.maxConnections = MAX_LOCK_CLIENTS;
  await new Promise<void>((ok, fail) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EADDRINUSE') {
        fail(err);
        return;
      }
      void holderPid(name).then((pid) =>
        fail(
          new LockHeldError(
            `${what} ${path} is in use by another process (pid ${pid}); refusing to start a second instance`,
          ),
        ),
      );
    });
    server.listen({ path: name }, () => ok());
  });
  server.unref();
  return {
    release: () => {
      server.close();
    },
  };
}
