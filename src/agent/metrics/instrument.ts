/**
 * The CRI runtime and the apiserver client, wrapped so every call is counted and timed in the
 * kubelet's metrics (kubelet_runtime_operations_*, rest_client_*); with `--v=10`, every CRI call
 * is also logged going out and coming back, as upstream's cri-client does (cri-call-log.ts).
 */
import type { CriRuntime, ImageService, RuntimeService } from '../../cri/services.js';
import type { KubeClient } from '../../lib/kube-client.js';
import { goDuration } from '../../lib/go-format.js';
import { logV, vEnabled, type Logger } from '../../lib/logger.js';
import { criRequestLine, criResponseLine, type CriService } from './cri-call-log.js';
import type { KubeletMetrics } from './kubelet-metrics.js';

/**
 * Upstream's operation_type for a CRI method name (createContainer → create_container, listPodSandbox →
 * list_podsandbox).
 */
export function operationType(method: string): string {
  return method.replace(/PodSandbox/g, 'Podsandbox').replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** The V(10) call log's verbosity, as upstream's cri-client. */
const CALL_LOG_V = 10;

function instrument<T extends object>(target: T, m: KubeletMetrics, service: CriService, logger?: Logger): T {
  // One wrapper per method, made on its first call (a CRI call is counted, not its name re-derived).
  const wrappers = new Map<string, { of: unknown; wrapper: (...args: unknown[]) => unknown }>();
  return new Proxy(target, {
    get(obj, prop, recv) {
      const v = Reflect.get(obj, prop, recv) as unknown;
      if (typeof v !== 'function' || typeof prop !== 'string' || prop === 'close') return v;
      const known = wrappers.get(prop);
      if (known?.of === v) return known.wrapper;
      const op = operationType(prop);
      // RunPodSandbox is also timed and counted by runtime handler (upstream's instrumented service).
      const handlerOf =
        prop === 'runPodSandbox' ? (args: unknown[]) => (typeof args[1] === 'string' ? args[1] : '') : undefined;
      const wrapper = (...args: unknown[]) => {
        const end = m.runtimeOpDuration.startTimer({ operation_type: op });
        m.runtimeOps.inc({ operation_type: op });
        const handler = handlerOf?.(args);
        const endSandbox =
          handler === undefined ? undefined : m.runPodSandboxDuration.startTimer({ runtime_handler: handler });
        // Checked per call: /debug/flags/v can change --v while the kubelet runs.
        const t0 = logger && vEnabled(logger, CALL_LOG_V) ? performance.now() : undefined;
        const done = (outcome: { result?: unknown; error?: unknown }) => {
          end();
          endSandbox?.();
          if (handler !== undefined && 'error' in outcome) m.runPodSandboxErrors.inc({ runtime_handler: handler });
          if (t0 === undefined) return;
          const line = criResponseLine(service, prop, args, outcome, goDuration(performance.now() - t0));
          logV(logger!, CALL_LOG_V, line.fields, line.msg);
        };
        if (t0 !== undefined) {
          const line = criRequestLine(service, prop, args);
          logV(logger!, CALL_LOG_V, line.fields, line.msg);
        }
        let r: unknown;
        try {
          r = (v as (...a: unknown[]) => unknown).apply(obj, args);
        } catch (error) {
          m.runtimeOpErrors.inc({ operation_type: op });
          done({ error });
          throw error;
        }
        if (!(r instanceof Promise)) {
          done({ result: r });
          return r;
        }
        return r.then(
          (result: unknown) => {
            done({ result });
            return result;
          },
          (error: unknown) => {
            m.runtimeOpErrors.inc({ operation_type: op });
            done({ error });
            throw error;
          },
        );
      };
      wrappers.set(prop, { of: v, wrapper });
      return wrapper;
    },
  });
}

/** The CRI runtime with every call counted and timed, and logged at `--v=10` when `logger` is given. */
export function instrumentCri(rt: CriRuntime, m: KubeletMetrics, logger?: Logger): CriRuntime {
  return {
    ...rt,
    runtime: instrument<RuntimeService>(rt.runtime, m, 'RemoteRuntimeService', logger),
    images: instrument<ImageService>(rt.images, m, 'RemoteImageService', logger),
  };
}

/** The apiserver client with rest_client_requests_total counted. */
export function instrumentKubeClient(c: KubeClient, m: KubeletMetrics): KubeClient {
  const host = (() => {
    try {
      return new URL(c.server).host;
    } catch {
      return '';
    }
  })();
  return new Proxy(c, {
    get(obj, prop, recv) {
      const v = Reflect.get(obj, prop, recv) as unknown;
      if (prop === 'unthrottled') return () => instrumentKubeClient(obj.unthrottled(), m);
      if (prop !== 'request') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(obj) : v;
      return async (req: Parameters<KubeClient['request']>[0]) => {
        const method = req.method ?? 'GET';
        const end = m.restClientDuration.startTimer({ verb: method, host });
        try {
          const r = await obj.request(req);
          m.restClientRequests.inc({ code: String(r.status), method, host });
          return r;
        } catch (err) {
          m.restClientRequests.inc({ code: '<error>', method, host });
          throw err;
        } finally {
          end();
        }
      };
    },
  });
}
