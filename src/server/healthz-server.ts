/**
 * The healthz port (10248) as a plain `node:http` server, like upstream's bare mux: it is up
 * within milliseconds of the process starting — before the agent and the API servers are loaded —
 * and answers from whatever checks are registered so far (ping and log, then the agent's). As
 * upstream, a sync loop that has not started yet is not a failure.
 */
import http from 'node:http';
import type { Logger } from '../lib/logger.js';
import type { HealthCheck } from '../routes/host.js';
import { builtinChecks, healthzRoute } from '../routes/healthz-answer.js';
import { answerAndClose, applyConnectionLimits, type ClosableServer } from './limits.js';

/**
 * A running healthz server; `setChecks` installs the agent's checks once it exists, and where each run of /healthz is
 * recorded (the component SLIs).
 */
export interface HealthzServer extends ClosableServer {
  setChecks(checks: () => HealthCheck[], observe?: (results: readonly { name: string; ok: boolean }[]) => void): void;
}

/** Listens on `host:port` and serves /healthz and /healthz/<name>. */
export async function startHealthzServer(o: { port: number; host: string; logger: Logger }): Promise<HealthzServer> {
  let extra: () => HealthCheck[] = () => [];
  let observe: ((results: readonly { name: string; ok: boolean }[]) => void) | undefined;
  const server = http.createServer((req, res) => {
    const a = healthzRoute([...builtinChecks, ...extra()], req.url ?? '/');
    for (const f of a.failed) o.logger.warn({ check: f.name, reason: f.reason }, 'healthz check failed');
    if (a.run) observe?.(a.run);
    res.writeHead(a.status, {
      'Content-Type': 'text/plain; charset=utf-8',
      'X-Content-Type-Options': 'nosniff',
      'Content-Length': Buffer.byteLength(a.body),
    });
    res.end(req.method === 'HEAD' ? undefined : a.body);
  });
  applyConnectionLimits(server);
  server.on('clientError', (_err, socket) => {
    if (socket.writable)
      answerAndClose(
        socket,
        'HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request',
      );
    else socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    setChecks(checks, onRun) {
      extra = checks;
      observe = onRun;
    },
  };
}
