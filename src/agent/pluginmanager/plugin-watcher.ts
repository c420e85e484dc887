/**
 * The plugin watcher (upstream pkg/kubelet/pluginmanager): plugins announce themselves with a
 * unix socket in `<root-dir>/plugins_registry` serving the Registration API. For each socket:
 *
 *   socket appears (or is re-created) ─► GetInfo ─► handler for its type ─► validate ─► register
 *        │                                  └ no handler / invalid / failed ─► NotifyRegistrationStatus(false, why)
 *        │                                                                     (retried on the next scan)
 *        └ registered ─► NotifyRegistrationStatus(true) ─► not heard ─► handler.deregister(name)
 *   socket removed ─► handler.deregister(name)
 *
 * The directory is watched (fs.watch) and scanned again every `rescanMs` (a missed event); a
 * socket whose registration failed (its server not listening yet, a refusal, the status not heard)
 * is tried again after 0.5 s, doubling to 2 min 2 s (upstream v1.36's exponential back-off). Scans
 * run one at a time. Hidden files are skipped, as upstream.
 */
import { lstatSync, watch, type FSWatcher } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import { listDirSync } from '../../lib/fs-util.js';
import type { Logger } from '../../lib/logger.js';
import { serviceMethods } from '../../cri/proto.js';
import { unaryCaller } from '../../cri/unary-caller.js';

/** Upstream's back-off for a failed registration (exponentialbackoff: 500 ms, doubling, at most 2 min 2 s). */
const FIRST_RETRY_DELAY_MS = 500;
const MAX_RETRY_DELAY_MS = 122_000;

/**
 * A plugin type's handler (upstream PluginHandler). `validate` throws the reason a plugin is
 * refused; `register` may block on the plugin and the apiserver; `deregister` gets the endpoint the
 * plugin registered with, so a newer registration of the same name (a driver's new socket) stays.
 */
export interface PluginHandler {
  validate(name: string, endpoint: string, versions: readonly string[]): void;
  register(name: string, endpoint: string, versions: readonly string[]): Promise<void>;
  deregister(name: string, endpoint: string): Promise<void>;
}

interface PluginInfo {
  type: string;
  name: string;
  endpoint: string;
  supported_versions: string[];
}

/** What the watcher needs. */
export interface PluginWatcherDeps {
  dir: string;
  handlers: Readonly<Record<string, PluginHandler>>;
  clock: Clock;
  logger: Logger;
  rescanMs?: number;
}

/** Registers the plugins whose sockets appear in `dir`. */
export class PluginWatcher {
  /** Socket path → the registered plugin and the socket's change time when registered. */
  private readonly registered = new Map<string, { type: string; name: string; endpoint: string; ctimeMs: number }>();
  /** The sockets the last scan found: the plugins to register (upstream's desired state of world). */
  private present: ReadonlySet<string> = new Set();
  private scanning: Promise<void> | undefined;
  private again = false;
  /**
   * Sockets whose registration failed (not listening yet, refused, the status not heard…): when to try again, with
   * upstream's back-off.
   */
  private readonly retryAt = new Map<string, { atMs: number; delayMs: number }>();
  private cancelRetry: (() => void) | undefined;
  private stopped = false;

  constructor(private readonly deps: PluginWatcherDeps) {}

  /** Creates the directory, scans it, then watches it until `signal` aborts. */
  async start({ signal }: { signal: AbortSignal }): Promise<void> {
    await mkdir(this.deps.dir, { recursive: true, mode: 0o750 });
    let watcher: FSWatcher | undefined;
    try {
      watcher = watch(this.deps.dir, { persistent: false }, () => void this.scan());
      watcher.on('error', () => {});
    } catch (err) {
      this.deps.logger.warn(
        { dir: this.deps.dir, err: messageOf(err) },
        'cannot watch the plugin registration directory; scanning it periodically',
      );
    }
    let cancel = () => {};
    const tick = () => {
      void this.scan();
      cancel = this.deps.clock.setTimer(tick, this.deps.rescanMs ?? 30_000);
    };
    tick();
    signal.addEventListener('abort', () => {
      this.stopped = true;
      cancel();
      this.cancelRetry?.();
      watcher?.close();
    });
  }

  /**
   * The plugins by socket, as upstream's plugin_manager_total_plugins counts them: each socket found
   * (`desired_state_of_world`) and each registered (`actual_state_of_world`).
   */
  pluginCounts(): { socketPath: string; state: 'desired_state_of_world' | 'actual_state_of_world' }[] {
    return [
      ...[...this.registered.keys()].map((socketPath) => ({ socketPath, state: 'actual_state_of_world' as const })),
      ...[...this.present].map((socketPath) => ({ socketPath, state: 'desired_state_of_world' as const })),
    ];
  }

  /** One scan (a scan asked for while one runs runs again after it). Resolves when done. */
  scan(): Promise<void> {
    if (this.scanning) {
      this.again = true;
      return this.scanning;
    }
    this.scanning = (async () => {
      do {
        this.again = false;
        await this.scanOnce().catch((err: unknown) =>
          this.deps.logger.warn({ dir: this.deps.dir, err: messageOf(err) }, 'plugin registration scan failed'),
        );
      } while (this.again);
    })().finally(() => (this.scanning = undefined));
    return this.scanning;
  }

  private async scanOnce(): Promise<void> {
    const present = new Map<string, number>();
    for (const name of listDirSync(this.deps.dir) ?? []) {
      if (name.startsWith('.')) continue;
      const path = join(this.deps.dir, name);
      try {
        const st = lstatSync(path);
        if (st.isSocket()) present.set(path, st.ctimeMs);
      } catch {
        // gone between the listing and the stat
      }
    }
    this.present = new Set(present.keys());
    for (const [path, r] of this.registered)
      if (present.get(path) !== r.ctimeMs) {
        this.registered.delete(path);
        this.deps.logger.info(
          { socket: path, plugin: r.name, type: r.type },
          'plugin socket removed: deregistering the plugin',
        );
        await this.deps.handlers[r.type]
          ?.deregister(r.name, r.endpoint)
          .catch((err: unknown) =>
            this.deps.logger.warn({ plugin: r.name, err: messageOf(err) }, 'plugin deregistration failed'),
          );
      }
    // Registration retries are waits: on the monotonic clock.
    const now = this.deps.clock.monotonic();
    for (const path of this.retryAt.keys()) if (!present.has(path)) this.retryAt.delete(path);
    for (const [path, ctimeMs] of present) {
      const retry = this.retryAt.get(path);
      if (this.registered.has(path) || (retry && retry.atMs > now)) continue;
      if (await this.register(path, ctimeMs)) this.retryAt.delete(path);
      else {
        const delayMs = retry ? Math.min(retry.delayMs * 2, MAX_RETRY_DELAY_MS) : FIRST_RETRY_DELAY_MS;
        this.retryAt.set(path, { atMs: this.deps.clock.monotonic() + delayMs, delayMs });
      }
    }
    this.cancelRetry?.();
    this.cancelRetry = undefined;
    if (this.retryAt.size && !this.stopped) {
      const next = Math.min(...[...this.retryAt.values()].map((r) => r.atMs));
      this.cancelRetry = this.deps.clock.setTimer(
        () => void this.scan(),
        Math.max(0, next - this.deps.clock.monotonic()),
      );
    }
  }

  /** upstream operationExecutor.RegisterPlugin; resolves whether the plugin is registered. */
  private async register(socket: string, ctimeMs: number): Promise<boolean> {
    const rpc = unaryCaller(
      socket,
      serviceMethods('pluginregistration/v1/api.proto', 'pluginregistration.Registration'),
      10_000,
    );
    /** Tells the plugin whether it is registered; resolves whether it heard. */
    const notify = (registered: boolean, error = '') =>
      rpc.call('NotifyRegistrationStatus', { plugin_registered: registered, error }).then(
        () => true,
        (err: unknown) => {
          this.deps.logger.warn(
            { socket, err: messageOf(err) },
            'RegisterPlugin error -- failed to send registration status',
          );
          return false;
        },
      );
    /** Logs why the plugin is refused and tells it so; resolves false (not registered). */
    const refuse = async (why: string, plugin?: string) => {
      this.deps.logger.warn({ socket, ...(plugin ? { plugin } : {}) }, why);
      await notify(false, why);
      return false;
    };
    try {
      let info: PluginInfo;
      try {
        info = await rpc.call<PluginInfo>('GetInfo', {});
      } catch (err) {
        this.deps.logger.warn(
          { socket },
          `RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket ${socket}, err: ${messageOf(err)}`,
        );
        return false;
      }
      const handler = this.deps.handlers[info.type];
      if (!handler)
        return await refuse(
          `RegisterPlugin error -- no handler registered for plugin type: ${info.type} at socket ${socket}`,
        );
      const endpoint = info.endpoint || socket;
      try {
        handler.validate(info.name, endpoint, info.supported_versions);
      } catch (err) {
        return await refuse(`RegisterPlugin error -- plugin validation failed with err: ${messageOf(err)}`, info.name);
      }
      // In the actual state before the handler registers it, as upstream: a plugin that hears it is registered is
      // counted as registered, and a socket removed meanwhile is deregistered by the next scan.
      this.registered.set(socket, { type: info.type, name: info.name, endpoint, ctimeMs });
      try {
        await handler.register(info.name, endpoint, info.supported_versions);
      } catch (err) {
        this.registered.delete(socket);
        return await refuse(
          `RegisterPlugin error -- plugin registration failed with err: ${messageOf(err)}`,
          info.name,
        );
      }
      if (!(await notify(true))) {
        // A plugin that did not hear it is registered is not (upstream v1.36, kubernetes/kubernetes#133335): it is
        // deregistered and tried again with the back-off.
        this.registered.delete(socket);
        await handler
          .deregister(info.name, endpoint)
          .catch((err: unknown) =>
            this.deps.logger.warn({ plugin: info.name, err: messageOf(err) }, 'plugin deregistration failed'),
          );
        return false;
      }
      return true;
    } finally {
      rpc.close();
    }
  }
}
