/**
 * `tskubelet process-runtime --listen unix:///path.sock [--root-dir DIR] [--node-ip IP]`:
 * the process runtime as its own CRI daemon; its containers outlive kubelet restarts.
 */
import { rm, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from '../lib/logger.js';
import { serveCri } from '../cri/server.js';
import { ProcessRuntime } from './runtime.js';
import { ProcessImages } from './images.js';

/** Options of the daemon. */
export interface DaemonOptions { listen: string; rootDir: string; podIP: string; logger: Logger; version: string }

/** Starts the daemon; resolves with a stop function once it listens. */
export async function runProcessRuntimeDaemon(o: DaemonOptions): Promise<() => Promise<void>> {
  const runtime = new ProcessRuntime({ stateDir: join(o.rootDir, 'process-runtime'), podIP: o.podIP, mode: 'daemon', logger: o.logger, version: o.version });
  await runtime.start();
  const path = o.listen.replace(/^unix:\/\//, '');
  if (o.listen.startsWith('unix://')) { await mkdir(dirname(path), { recursive: true }); await rm(path, { force: true }); }
  const server = await serveCri(o.listen, runtime, new ProcessImages(o.rootDir));
  o.logger.info({ listen: o.listen }, 'process runtime serving CRI');
  return async () => {
    await new Promise<void>((r) => server.tryShutdown(() => r()));
    await runtime.shutdown();
  };
}
