/**
 * `tskubelet process-runtime --listen unix:///path.sock [--root-dir DIR] [--node-ip IP]`:
 * the process runtime as its own CRI daemon; its containers outlive kubelet restarts.
 */
import { lstat, rm, mkdir } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { dirname, join } from 'node:path';
import type { Logger } from '../lib/logger.js';
import { serveCri } from '../cri/server.js';
import { ProcessRuntime } from './runtime.js';
import { ProcessImages } from './images.js';

/** Rejects when `path` is a socket something answers on, or exists and is not a socket. */
async function checkSocketFree(path: string): Promise<void> {
  const st = await lstat(path).catch(() => undefined);
  if (!st) return;
  if (!st.isSocket()) throw new Error(`${path} exists and is not a socket; refusing to replace it`);
  const live = await new Promise<boolean>((done) => {
    const s = createConnection({ path });
    s.once('connect', () => {
      s.destroy();
      done(true);
    });
    s.once('error', () => done(false));
  });
  if (live) throw new Error(`${path} is served by another process; refusing to start a second process runtime on it`);
}

/** Options of the daemon. */
export interface DaemonOptions {
  listen: string;
  rootDir: string;
  podIP: string;
  logger: Logger;
  version: string;
  /** The root dir of the kubelet it serves (ProcessRuntimeDeps.kubeletRootDir; unset, its default). */
  kubeletRootDir?: string;
}

/** Starts the daemon; resolves with a stop function once it listens. */
export async function runProcessRuntimeDaemon(o: DaemonOptions): Promise<() => Promise<void>> {
  const runtime = new ProcessRuntime({
    stateDir: join(o.rootDir, 'process-runtime'),
    podIP: o.podIP,
    mode: 'daemon',
    logger: o.logger,
    version: o.version,
    kubeletRootDir: o.kubeletRootDir,
  });
  const path = o.listen.replace(/^unix:\/\//, '');
  // Never take over a socket someone serves, nor remove a file that is not a socket.
  if (o.listen.startsWith('unix://')) await checkSocketFree(path);
  await runtime.start();
  if (o.listen.startsWith('unix://')) {
    await mkdir(dirname(path), { recursive: true });
    await checkSocketFree(path);
    await rm(path, { force: true });
  }
  const server = await serveCri(o.listen, runtime, new ProcessImages(o.rootDir));
  o.logger.info({ listen: o.listen }, 'process runtime serving CRI');
  return async () => {
    await server.close();
    await runtime.shutdown();
  };
}
