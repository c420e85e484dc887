/**
 * `tskubelet process-runtime --listen unix:///path.sock [--root-dir d] [--node-ip ip] [--v n]
 * [--logging-format text|json] [--kubelet-root-dir d]`: the embedded process runtime as its own CRI daemon, until
 * SIGINT/SIGTERM. `--kubelet-root-dir` (default /var/lib/kubelet) names the served kubelet's root dir, whose pod
 * directories hold the mount sources the runtime may look at in-process.
 */
import { createLogger, routeProcessWarnings } from './lib/logger.js';
import { messageOf } from './lib/errors.js';
import { defaultNodeIP } from './config/load.js';
import { TSKUBELET_VERSION } from './version.js';

/** Runs the daemon; resolves with the exit code. */
export async function processRuntimeMain(argv: string[]): Promise<number> {
  const args = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const [k, v] = argv[i].replace(/^--/, '').split('=', 2);
    args.set(k, v ?? argv[++i]);
  }
  const listen = args.get('listen');
  if (!listen) {
    process.stderr.write('error: --listen unix:///path.sock is required\n');
    return 1;
  }
  const logger = createLogger({
    verbosity: Number(args.get('v') ?? 0),
    format: args.get('logging-format') === 'json' ? 'json' : 'text',
  });
  routeProcessWarnings(logger);
  let stop;
  try {
    const { runProcessRuntimeDaemon } = await import('./process-runtime/daemon.js');
    stop = await runProcessRuntimeDaemon({
      listen,
      rootDir: args.get('root-dir') ?? '/var/lib/tskubelet-process-runtime',
      podIP: args.get('node-ip') ?? defaultNodeIP(),
      logger,
      version: TSKUBELET_VERSION,
      kubeletRootDir: args.get('kubelet-root-dir'),
    });
  } catch (err) {
    logger.error(messageOf(err));
    return 1;
  }
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await stop();
  return 0;
}
