/**
 * HTTP proxies for the apiserver client, as client-go finds and uses them: the kubeconfig
 * cluster's `proxy-url`, else HTTPS_PROXY (upper or lower case) unless NO_PROXY
 * names the server (Go's httpproxy rules: `*`, a host or domain suffix, an IP, a CIDR, each with an
 * optional port). A proxied HTTPS connection is a CONNECT tunnel through which TLS runs to the
 * apiserver itself, so the proxy sees neither the credentials nor the traffic.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';

/** Whether NO_PROXY (`noProxy`) exempts `host:port`. Pure. */
export function exemptFromProxy(host: string, port: string, noProxy: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  for (const raw of noProxy.split(',').map((e) => e.trim().toLowerCase())) {
    if (!raw) continue;
    if (raw === '*') return true;
    if (raw.includes('/')) {
      const [base, bits] = raw.split('/');
      if (net.isIP(h) && net.isIP(base) === net.isIP(h)) {
        const list = new net.BlockList();
        list.addSubnet(base, Number(bits), net.isIP(base) === 6 ? 'ipv6' : 'ipv4');
        if (list.check(h, net.isIP(h) === 6 ? 'ipv6' : 'ipv4')) return true;
      }
      continue;
    }
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(raw);
    if (!m) continue;
    const entryHost = m[1].replace(/^\[|\]$/g, '');
    if (m[2] && m[2] !== port) continue;
    if (net.isIP(entryHost)) {
      if (entryHost === h) return true;
      continue;
    }
    const domain = entryHost.replace(/^\*?\./, '');
    if (h === domain || h.endsWith(`.${domain}`)) return true;
  }
  return false;
}

/**
 * The proxy for an HTTPS `server`: the kubeconfig's `proxy-url`, else HTTPS_PROXY (unless NO_PROXY
 * exempts it); none for a plain-HTTP server (an apiserver is HTTPS). Pure.
 */
export function proxyFor(server: URL, proxyUrl: string | undefined, env: NodeJS.ProcessEnv): URL | undefined {
  if (server.protocol !== 'https:') return undefined;
  if (proxyUrl) return new URL(proxyUrl);
  const from = env.HTTPS_PROXY ?? env.https_proxy;
  if (!from) return undefined;
  const port = server.port || (server.protocol === 'https:' ? '443' : '80');
  if (exemptFromProxy(server.hostname, port, env.NO_PROXY ?? env.no_proxy ?? '')) return undefined;
  return new URL(from.includes('://') ? from : `http://${from}`);
}

/** Opens a CONNECT tunnel to `host:port` through `proxy`. */
function tunnel(proxy: URL, host: string, port: number): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const auth = proxy.username
      ? {
          'Proxy-Authorization': `Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString('base64')}`,
        }
      : {};
    const target = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    const request = (proxy.protocol === 'https:' ? https : http).request({
      host: proxy.hostname,
      port: proxy.port || (proxy.protocol === 'https:' ? 443 : 80),
      method: 'CONNECT',
      path: target,
      headers: { Host: target, ...auth },
    });
    request.once('connect', (res, socket) => {
      if (res.statusCode === 200) return resolve(socket);
      socket.destroy();
      reject(new Error(`proxy ${proxy.host} refused CONNECT ${target}: HTTP ${res.statusCode}`));
    });
    request.once('error', (err) => reject(new Error(`proxy ${proxy.host}: ${err.message}`)));
    request.end();
  });
}

/** An HTTPS agent whose connections go through a CONNECT tunnel of `proxy`; TLS runs inside it to the server. */
export class TunnelingAgent extends https.Agent {
  constructor(
    private readonly proxy: URL,
    options: https.AgentOptions,
  ) {
    super(options);
  }

  override createConnection(
    options: http.RequestOptions,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | undefined {
    tunnel(this.proxy, options.host ?? 'localhost', Number(options.port ?? 443)).then(
      (socket) => callback?.(null, tls.connect({ ...(options as tls.ConnectionOptions), socket })),
      (err: Error) => callback?.(err, undefined as never),
    );
    return undefined;
  }
}
