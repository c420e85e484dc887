/**
 * The tskubelet command: 1. parse flags (Go kubelet names); 2. load and validate the config
 * file, flags over file; 3. lock the root dir and serve the healthz port (plain HTTP, up in
 * milliseconds); 4. prepare TLS (local CA + admin cert in standalone mode); 5. compose and start
 * the agent; 6. start the API servers (10250, 10255) and pod-resources; 7. stop cleanly on
 * SIGINT/SIGTERM. `tskubelet process-runtime` runs the embedded runtime as a CRI daemon.
 *
 * Start-up cost is module loading: only what steps 1–3 need is imported statically; the agent,
 * the servers (Fastify), the apiserver client and the certificate code are imported when used.
 */
import { setMaxListeners } from 'node:events';
import { basename, join } from 'node:path';
import { parseFlags, FlagError, type ParsedFlags } from './config/flags.js';
import { flagHelp } from './config/flag-help.js';
import { loadConfig, ConfigError, validationError } from './config/load.js';
import { agentConfigOf } from './config/agent-config-of.js';
import { hostConfigErrors } from './config/validate.js';
import { hostCgroupVersion } from './agent/node-setup/cgroup-version.js';
import {
  createLogger,
  LOG_FORMATS,
  routeProcessWarnings,
  setVerbosity,
  type Logger,
  type LogFormat,
} from './lib/logger.js';
import { realClock } from './lib/clock.js';
import { acquireInstanceLock } from './lib/instance-lock.js';
import { acquireFileLock } from './lib/file-lock.js';
import { messageOf } from './lib/errors.js';
import { prepareHost } from './agent/node-setup/prepare-host.js';
import { setupDataDirs } from './agent/node-setup/data-dirs.js';
import type { KubeClient } from './lib/kube-client.js';
import type { KubeletHost } from './routes/host.js';
import type { Agent } from './agent/compose.js';
import { startHealthzServer } from './server/healthz-server.js';
import { closeServers, type ClosableServer } from './server/limits.js';
import { shutdownGroupsOf } from './agent/runtime/shutdown-groups.js';
import { KUBERNETES_VERSION, TSKUBELET_VERSION, versionText } from './version.js';
import { flagzValues } from './config/flagz.js';
import { configzView } from './config/configz-view.js';
import { applyCodeFlushing } from './lib/v8-code-flushing.js';
import { sdNotify } from './lib/sd-notify.js';
import { logCommandFailed, logRunFailed } from './lib/command-failed.js';
import { createProfiler } from './server/profiler.js';
import { SystemdWatchdog, watchdogIntervalMs } from './agent/watchdog/systemd-watchdog.js';

// Compile-time check that the agent's host view fits the routes' interface.
const _hostFits = (h: Agent['host']): KubeletHost => h;
void _hostFits;

/**
 * A start that fails, as upstream's cli.Run reports it (what an operator finds in the journal): one error line
 * `"command failed" err="…"` on stderr, in the log format asked for, and exit status 1.
 */
function commandFailed(message: string, format: LogFormat = 'text'): number {
  logCommandFailed(createLogger({ format }), message);
  return 1;
}

/** --logging-format when it names a format, else klog's text: the format of a failure before the config is read. */
function loggingFormatOf(parsed: ParsedFlags): LogFormat {
  const format = parsed.flags.loggingFormat;
  return LOG_FORMATS.find((known) => known === format) ?? 'text';
}

/** The name the kubelet was started by (`kubelet` where the Debian package installs it), for its usage text. */
function programName(): string {
  return basename(process.argv[1] ?? 'tskubelet').replace(/\.js$/, '');
}

/** Runs the CLI; resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  // The kubelet and the embedded runtime's daemon alike: rarely run code leaves the heap.
  applyCodeFlushing();
  if (argv[0] === 'process-runtime')
    return (await import('./process-runtime-cli.js')).processRuntimeMain(argv.slice(1));
  let parsed;
  try {
    parsed = parseFlags(argv);
  } catch (err) {
    if (err instanceof FlagError) {
      for (const notice of err.deprecations) process.stderr.write(`${notice}\n`);
      return commandFailed(`failed to parse kubelet flag: ${err.message}`);
    }
    throw err;
  }
  // pflag's notices, straight to stderr as pflag writes them, before anything is logged.
  for (const notice of parsed.deprecations) process.stderr.write(`${notice}\n`);
  // Upstream's check for non-flag arguments, before --help and --version.
  if (parsed.positional.length) return commandFailed(`unknown command ${parsed.positional[0]}`);
  if (parsed.flags.help) {
    process.stdout.write(flagHelp(programName()));
    return 0;
  }
  if (parsed.flags.version) {
    process.stdout.write(`${versionText(parsed.flags.version)}\n`);
    return 0;
  }
  let cfg;
  try {
    cfg = await loadConfig(parsed);
    const hostErrors = hostConfigErrors(cfg.kc, { cgroupVersion: hostCgroupVersion() });
    if (hostErrors.length) throw validationError(hostErrors);
  } catch (err) {
    if (err instanceof ConfigError) return commandFailed(err.message, loggingFormatOf(parsed));
    throw err;
  }
  const logger = createLogger({ verbosity: cfg.verbosity, format: cfg.loggingFormat });
  routeProcessWarnings(logger);
  // In upstream's order: the config file is decoded before the kubelet runs and logs its version.
  if (cfg.strictDecodingError)
    logger.info({ err: cfg.strictDecodingError }, 'Using lenient decoding as strict decoding failed');
  logger.info({ kubeletVersion: KUBERNETES_VERSION }, 'Kubelet version');
  // Taken so that Node does not open its inspector (bin/tskubelet.js): the kubelet has no use for the signal.
  process.on('SIGUSR1', () => logger.warn('SIGUSR1 ignored: the kubelet takes no action on it'));
  for (const w of cfg.warnings) logger.warn(w);
  const kc = cfg.kc;
  // Heap sampling from here, as Go's heap profile samples from the process's start: the first
  // /debug/pprof/heap shows what the agent keeps from its start, which a sampler started with the
  // servers (after the agent) never saw.
  const profiler =
    kc.enableServer && kc.enableDebuggingHandlers && kc.enableProfilingHandler ? createProfiler() : undefined;
  void profiler?.startHeapSampling().catch(() => {});
  // Upstream's --lock-file, before anything else: a kubelet given a file another one holds waits for it.
  let lockContention: Promise<string> | undefined;
  const lockWatch = new AbortController();
  if (cfg.exitOnLockContention && !cfg.lockFile) {
    logRunFailed(logger, 'cannot exit on lock file contention: no lock file specified');
    return 1;
  }
  if (cfg.lockFile) {
    logger.info({ path: cfg.lockFile }, 'Acquiring file lock');
    try {
      const lock = await acquireFileLock(cfg.lockFile);
      if (cfg.exitOnLockContention) {
        logger.info({ path: cfg.lockFile }, 'Watching for inotify events');
        lockContention = lock.contention({ signal: lockWatch.signal });
      }
    } catch (err) {
      logRunFailed(logger, `unable to acquire file lock on "${cfg.lockFile}": ${messageOf(err)}`);
      return 1;
    }
  }
  // Before anything under the root dir is touched: a second kubelet on it must change nothing.
  try {
    await acquireInstanceLock(cfg.rootDir, 'root directory');
  } catch (err) {
    logRunFailed(logger, messageOf(err));
    return 1;
  }
  // Upstream setupDataDirs: a fresh node's root dir is created with its layout before any manager writes there.
  try {
    await setupDataDirs(cfg.rootDir);
  } catch (err) {
    logRunFailed(logger, `error creating data dirs: ${messageOf(err)}`);
    return 1;
  }
  if (!(await prepareHost(kc, logger))) return 1;
  // The embedded runtime's containers die with the kubelet that runs them in-process: runonce, which exits once its
  // pods run, needs a runtime of its own.
  if (kc.runOnce && !kc.containerRuntimeEndpoint) {
    logRunFailed(
      logger,
      'runonce needs a container runtime that outlives the kubelet: ' +
        'set --container-runtime-endpoint (containerd, or `tskubelet process-runtime`)',
    );
    return 1;
  }
  // systemd's watchdog, when the unit asks for one (WatchdogSec=): settings it refuses stop the start, as upstream.
  let watchdogMs: number | undefined;
  try {
    watchdogMs = watchdogIntervalMs(process.env, process.pid);
  } catch (err) {
    logRunFailed(logger, `create health checker: ${messageOf(err)}`);
    return 1;
  }
  // The healthz port first (as upstream, a sync loop not started yet is healthy); the agent's
  // checks join once it is composed.
  const servers: ClosableServer[] = [];
  let healthz;
  try {
    healthz =
      kc.healthzPort > 0 && !kc.runOnce
        ? await startHealthzServer({ port: kc.healthzPort, host: kc.healthzBindAddress, logger })
        : undefined;
  } catch (err) {
    logger.error(`failed to start the healthz server: ${messageOf(err)}`);
    return 1;
  }
  if (healthz) servers.push(healthz);
  // Loaded while the PKI and the agent are prepared.
  const serversModule = import('./server/servers.js');
  serversModule.catch(() => {});

  // Standalone (no apiserver) without a client CA: a local CA and an admin certificate.
  const standalone = !cfg.kubeconfig;
  // serverTLSBootstrap: the secure port serves the certificate the cluster signs (agent/certificate/serving-cert.ts).
  const servingBootstrap = !standalone && kc.serverTLSBootstrap && !(kc.tlsCertFile && kc.tlsPrivateKeyFile);
  const serving = servingBootstrap ? await import('./agent/certificate/serving-cert.js') : undefined;
  const servingPem = serving?.servingPemPath(cfg.certDir);
  const nodeIPs = [cfg.nodeIP, ...(cfg.secondaryNodeIP ? [cfg.secondaryNodeIP] : [])];
  const needPki =
    (!servingBootstrap && (!kc.tlsCertFile || !kc.tlsPrivateKeyFile)) ||
    (standalone && !kc.authentication.x509.clientCAFile);
  const pki = needPki
    ? await (
        await import('./server/pki.js')
      ).ensureLocalPki(join(cfg.rootDir, 'pki'), { nodeName: cfg.nodeName, ips: nodeIPs })
    : undefined;
  const certFile = servingPem ?? (kc.tlsCertFile && kc.tlsPrivateKeyFile ? kc.tlsCertFile : pki!.serverCert);
  const keyFile = servingPem ?? (kc.tlsCertFile && kc.tlsPrivateKeyFile ? kc.tlsPrivateKeyFile : pki!.serverKey);
  const clientCA = kc.authentication.x509.clientCAFile ?? (standalone ? pki!.caCert : undefined);
  let auth;
  let api: KubeClient | undefined;
  const lifetime = new AbortController();
  setMaxListeners(0, lifetime.signal); // shared by every long-lived loop of the process (see agent/compose.ts)
  const certPaths = {
    kubeconfig: cfg.kubeconfig ?? '',
    bootstrapKubeconfig: cfg.bootstrapKubeconfig,
    certDir: cfg.certDir,
  };
  // The clock's timers do not hold the process open; waiting for a CSR to be signed must.
  const holdOpen = setInterval(() => {}, 60_000);
  const certModule =
    cfg.bootstrapKubeconfig || kc.rotateCertificates ? await import('./agent/certificate/client-cert.js') : undefined;
  try {
    if (cfg.bootstrapKubeconfig && certModule)
      await certModule.bootstrapClientCert(certPaths, { nodeName: cfg.nodeName, clock: realClock, logger });
  } catch (err) {
    logger.error(`client certificate bootstrap failed: ${messageOf(err)}`);
    return 1;
  } finally {
    clearInterval(holdOpen);
  }
  try {
    api = cfg.kubeconfig
      ? await (
          await import('./lib/kube-client.js')
        ).createKubeClient(cfg.kubeconfig, {
          timeoutMs: 10_000,
          userAgent: `tskubelet/${TSKUBELET_VERSION}`,
          qps: kc.kubeAPIQPS,
          burst: kc.kubeAPIBurst,
        })
      : undefined;
    auth = (await import('./server/build-auth.js')).buildAuth({
      authentication: kc.authentication,
      authorization: kc.authorization,
      hasClientCA: !!clientCA,
      api,
      clock: realClock,
    });
  } catch (err) {
    logRunFailed(logger, messageOf(err));
    return 1;
  }

  const { adoptRuntimeCgroupDriver, composeAgent, loadEmbeddedRuntime, registerCertificateMetrics } =
    await import('./agent/compose.js');
  const agentCfg = agentConfigOf(cfg);
  const embedded = agentCfg.containerRuntimeEndpoint ? undefined : await loadEmbeddedRuntime(agentCfg, logger);
  try {
    await adoptRuntimeCgroupDriver(kc, agentCfg, embedded, logger);
  } catch (err) {
    logRunFailed(logger, messageOf(err));
    return 1;
  }
  const agent = composeAgent(agentCfg, { logger, clock: realClock, api, embedded });
  try {
    await agent.start();
  } catch (err) {
    logRunFailed(logger, messageOf(err));
    return 1;
  }
  if (kc.runOnce) return finishRunOnce(agent, logger);
  healthz?.setChecks(
    () => agent.host.healthChecks(),
    (results) => agent.host.observeHealthchecks('healthz', results),
  );
  if (api && kc.rotateCertificates && certModule) {
    const rotator = new certModule.ClientCertRotator({
      client: api,
      paths: certPaths,
      nodeName: cfg.nodeName,
      clock: realClock,
      logger,
    });
    registerCertificateMetrics(agent.metrics, 'client', rotator.status);
    rotator.start({ signal: lifetime.signal });
  }

  const host: KubeletHost = agent.host;
  const startSecure = async () => {
    // enableServer=false: no secure port at all (the read-only port is its own setting, as upstream).
    if (!kc.enableServer) return;
    const secure = await (
      await serversModule
    ).buildSecureServer({
      host,
      logger,
      tls: {
        certFile,
        keyFile,
        clientCAFile: clientCA,
        minVersion: kc.tlsMinVersion,
        cipherSuites: kc.tlsCipherSuites,
        curvePreferences: kc.tlsCurvePreferences,
      },
      ...auth,
      enableDebuggingHandlers: kc.enableDebuggingHandlers,
      enableSystemLogHandler: kc.enableSystemLogHandler,
      systemLogQuery: kc.enableSystemLogQuery,
      splitLogStreams: kc.featureGates?.PodLogsQuerySplitStreams === true,
      debugFlags: { enabled: kc.enableDebugFlagsHandler, setVerbosity: (v) => setVerbosity(logger, v) },
      profiling: { enabled: kc.enableProfilingHandler, commandLine: process.argv.slice(1), profiler },
      configz: configzView({
        config: kc,
        acceptedOnly: cfg.acceptedOnly,
        verbosity: cfg.verbosity,
        loggingFormat: cfg.loggingFormat,
      }),
      zpages: {
        component: 'kubelet',
        binaryVersion: KUBERNETES_VERSION.slice(1),
        runtimeVersion: `node ${process.version}`,
        startedAtMs: Date.now() - process.uptime() * 1000,
        nowMs: () => Date.now(),
        flags: flagzValues(parsed, kc),
      },
    });
    await secure.listen({ port: kc.port, host: kc.address });
    servers.push(secure);
  };
  // Without a valid serving certificate yet, the secure port opens once the cluster has signed one
  // (upstream's fails every TLS handshake until then); the read-only port does not wait.
  let secureLater = false;
  if (serving && api) {
    secureLater = !(await serving.hasValidServingCert(cfg.certDir, Date.now()));
    const servingCerts = new serving.ServingCertManager({
      client: api,
      certDir: cfg.certDir,
      nodeName: cfg.nodeName,
      sans: { dns: [cfg.nodeName], ips: nodeIPs },
      clock: realClock,
      logger,
    });
    registerCertificateMetrics(agent.metrics, 'server', servingCerts.status);
    servingCerts.start({ signal: lifetime.signal }, () => {
      if (!secureLater || lifetime.signal.aborted) return;
      secureLater = false;
      startSecure().catch((err: unknown) => logger.error(`failed to start the secure port: ${messageOf(err)}`));
    });
    if (secureLater)
      logger.warn(
        { port: kc.port },
        'no kubelet serving certificate yet: the secure port opens once its CSR is approved and signed',
      );
  }
  try {
    const { buildReadOnlyServer } = await serversModule;
    if (!secureLater) await startSecure();
    if (kc.readOnlyPort > 0) {
      const ro = await buildReadOnlyServer({ host, logger });
      await ro.listen({ port: kc.readOnlyPort, host: kc.address });
      servers.push(ro);
    }
  } catch (err) {
    logger.error(`failed to start servers: ${messageOf(err)}`);
    await agent.stop();
    await closeServers(servers, 0);
    return 1;
  }
  // The pod-resources API (the root dir lock makes the socket ours to replace).
  const stopPodResources = await Promise.all([
    import('./server/pod-resources.js'),
    import('./agent/metrics/pod-resources-metrics.js'),
  ])
    .then(([{ servePodResources }, { registerPodResourcesMetrics }]) =>
      servePodResources(join(cfg.rootDir, 'pod-resources', 'kubelet.sock'), {
        pods: () => host.getPods(),
        cpus: agent.cpus,
        memory: agent.memory,
        devices: agent.devices,
        dynamicResources: (pod, container) => agent.dra.dynamicResources(pod, container),
        onCall: registerPodResourcesMetrics(agent.metrics),
      }),
    )
    .catch((err: unknown) => {
      logger.warn({ err: messageOf(err) }, 'pod-resources API not served');
      return async () => {};
    });
  logger.info(
    {
      node: cfg.nodeName,
      port: kc.port,
      readOnlyPort: kc.readOnlyPort,
      healthzPort: kc.healthzPort,
      staticPodPath: kc.staticPodPath,
    },
    'Started kubelet',
  );
  // Started: systemd is told (a Type=notify unit waits for it), and its watchdog hears from a healthy kubelet.
  sdNotify('READY=1').catch((err: unknown) => logger.warn({ err: messageOf(err) }, 'notifying systemd failed'));
  if (watchdogMs)
    new SystemdWatchdog({
      intervalMs: watchdogMs,
      unhealthy: () =>
        agent.host
          .healthChecks()
          .find((c) => c.name === 'syncloop')
          ?.check(),
      notify: () => sdNotify('WATCHDOG=1'),
      clock: realClock,
      logger,
    }).start(lifetime.signal);
  if (pki && kc.enableServer && !kc.authentication.x509.clientCAFile) {
    logger.info(
      `standalone mode: use the generated admin certificate, e.g. curl --cacert ${pki.caCert} --cert ${pki.adminCert} --key ${pki.adminKey} https://127.0.0.1:${kc.port}/pods`,
    );
  }
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
    // Another process waits for the lock file: this kubelet leaves, as upstream's on lock contention.
    void lockContention?.then((what) => {
      logger.info({ event: what }, 'Inotify event');
      resolve();
    });
  });
  lockWatch.abort();
  logger.info('shutting down');
  // 1. stop accepting and give requests in flight a short deadline, 2. stop the pods meanwhile —
  // neither waits on a client; a last-resort timer ends the process if anything still hangs.
  const groups = shutdownGroupsOf(kc);
  const shutdownGraceMs = groups.reduce((n, g) => n + g.graceSeconds * 1000, 0);
  const hardDeadline = setTimeout(
    () => {
      logger.error('shutdown did not finish in time; exiting');
      process.exit(1);
    },
    Math.max(shutdownGraceMs, 60_000) + 30_000,
  );
  hardDeadline.unref();
  lifetime.abort();
  await Promise.all([
    closeServers(servers, SHUTDOWN_REQUEST_GRACE_MS).catch((err: unknown) =>
      logger.warn({ err: messageOf(err) }, 'closing servers failed'),
    ),
    Promise.race([stopPodResources(), new Promise((r) => setTimeout(r, SHUTDOWN_REQUEST_GRACE_MS))]),
    agent.stop({ groups }),
  ]);
  return 0;
}

/** How long requests in flight may still run after SIGTERM before their connections are cut. */
const SHUTDOWN_REQUEST_GRACE_MS = 2000;

/**
 * Upstream's runonce: no server and no Node; the kubelet waits for the pods of its sources' first update to run
 * (agent/run-once.ts) and exits, leaving them to the runtime.
 */
async function finishRunOnce(agent: Agent, logger: Logger): Promise<number> {
  // The clock's timers do not hold the process open; the wait must.
  const holdOpen = setInterval(() => {}, 60_000);
  try {
    await agent.runOnce();
    logger.info('Started kubelet as runonce');
    return 0;
  } catch (err) {
    logCommandFailed(logger, `runonce failed: ${messageOf(err)}`);
    return 1;
  } finally {
    clearInterval(holdOpen);
    await agent.stop();
  }
}
