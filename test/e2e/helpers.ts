/** Helpers for end-to-end tests: the real tskubelet CLI as a child process, real HTTPS clients. */
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { hostCgroupVersion } from '../../src/agent/node-setup/cgroup-version.js';

export const repoRoot = join(import.meta.dirname, '..', '..');

/** Whether a listener can take `port` on 127.0.0.1 now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** The kernel's ephemeral port range (net.ipv4.ip_local_port_range), both ends included. */
function ephemeralPorts(): [number, number] {
  try {
    const [from, to] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (from > 0 && to >= from) return [from, to];
  } catch {
    // not Linux: the kernel default
  }
  return [32768, 60999];
}

/** The test files that run at once (vitest.config.ts maxWorkers): each worker takes ports of its own lane. */
const PORT_LANES = 2;

/** Fewer ports than this outside the ephemeral range: the range is taken as the default one. */
const FEWEST_PORTS = 2_000;

/**
 * The ports freePort chooses from: those from 20000 (above the kubelet's own defaults) up that are not in the
 * kernel's ephemeral range, below it or above it, as [from, to) intervals.
 */
export function portIntervals([from, to]: [number, number]): [number, number][] {
  const intervals = (
    [
      [20_000, from],
      [Math.max(to + 1, 20_000), 65_536],
    ] as [number, number][]
  ).filter(([start, end]) => end > start);
  const total = intervals.reduce((sum, [start, end]) => sum + end - start, 0);
  return total >= FEWEST_PORTS ? intervals : portIntervals([32768, 60999]);
}

/**
 * A free TCP port on 127.0.0.1, chosen at random outside the kernel's ephemeral range. The port is used later by
 * another process (a kubelet, a pod), and a port from the ephemeral range could be taken meanwhile by any parallel
 * test's outgoing connection or port-0 listener (containerd's streaming server): a pod's server then failed to
 * listen, and a port-forward reached another test's server. For the same reason the files running at once take
 * ports of different lanes (the worker's VITEST_POOL_ID): two of them can never pick the same free port and both
 * hand it to a kubelet.
 */
export async function freePort(): Promise<number> {
  const intervals = portIntervals(ephemeralPorts());
  const total = intervals.reduce((sum, [start, end]) => sum + end - start, 0);
  const lane = Number(process.env.VITEST_POOL_ID ?? 0) % PORT_LANES;
  for (;;) {
    let offset = Math.floor(Math.random() * total);
    let interval = 0;
    while (offset >= intervals[interval][1] - intervals[interval][0])
      offset -= intervals[interval][1] - intervals[interval++][0];
    const [start, end] = intervals[interval];
    const candidate = start + offset;
    const port = candidate - ((candidate - lane + PORT_LANES) % PORT_LANES);
    if (port >= start && port < end && (await canListen(port))) return port;
  }
}

/**
 * The command (a YAML flow sequence) of an embedded-runtime pod that runs `server`, Node code for a net.Server, on
 * a port the kernel picks, and writes the port to `portFile` once it listens: no port chosen beforehand can be taken
 * meanwhile by another process. listenedPort reads it.
 */
export function listeningPodCommand(server: string, portFile: string): string {
  const listen = `.listen(0, '127.0.0.1', function () { require('fs').writeFileSync('${portFile}', String(this.address().port)) })`;
  return `["${process.execPath}", -e, "${server}${listen}"]`;
}

/** The port a pod of listeningPodCommand listens on, once it does. */
export function listenedPort(portFile: string, timeoutMs = 20_000): Promise<number> {
  return until(
    () => {
      try {
        return Number(readFileSync(portFile, 'utf8')) || undefined;
      } catch {
        return undefined;
      }
    },
    timeoutMs,
    `the port in ${portFile}`,
  );
}

/** The kubelet's three ports. */
export interface KubeletPorts {
  port: number;
  ro: number;
  hz: number;
}

/** Three free ports for a test kubelet. */
export async function freeKubeletPorts(): Promise<KubeletPorts> {
  return { port: await freePort(), ro: await freePort(), hz: await freePort() };
}

/**
 * The flags of a test kubelet: its dirs under `dir` (root, logs, containers), its ports, its node name, then `extra`.
 */
export function kubeletArgs(o: {
  dir: string;
  ports: KubeletPorts;
  node: string;
  manifests?: string;
  extra?: string[];
}): string[] {
  return [
    ...(o.manifests ? ['--pod-manifest-path', o.manifests] : []),
    '--root-dir',
    join(o.dir, 'root'),
    '--pod-logs-dir',
    join(o.dir, 'logs'),
    // Not /var/log/containers: tests run side by side, each kubelet with its own links.
    '--container-logs-dir',
    join(o.dir, 'containers'),
    '--port',
    String(o.ports.port),
    '--read-only-port',
    String(o.ports.ro),
    '--healthz-port',
    String(o.ports.hz),
    '--hostname-override',
    o.node,
    // The tests do not depend on the host's swap (the refusal to start with it has its own test).
    '--fail-swap-on=false',
    ...(o.extra ?? []),
  ];
}

/** Polls `fn` until it returns a truthy value. */
export async function until<T>(
  fn: () => Promise<T> | T,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<Exclude<NonNullable<T>, false | 0 | ''>> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as Exclude<NonNullable<T>, false | 0 | ''>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end)
      throw new Error(
        `timed out waiting for ${what}${last ? `: ${last instanceof Error ? last.message : JSON.stringify(last)}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
export function acceptsConnections(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/**
 * Waits until the kubelet serves: healthz 200 (it is up first, as upstream's) and the API ports
 * accepting connections. When it does not, the error carries the kubelet's exit and its last output,
 * the only account of why (a port taken, a start that failed).
 */
export async function untilServing(ports: KubeletPorts, kubelet: Kubelet, timeoutMs = 20_000): Promise<void> {
  try {
    await until(
      async () => (await httpGet(`http://127.0.0.1:${ports.hz}/healthz`)).status === 200,
      timeoutMs,
      'healthz',
    );
    await until(
      async () => (await acceptsConnections(ports.port)) && (!ports.ro || (await acceptsConnections(ports.ro))),
      timeoutMs,
      'API ports',
    );
  } catch (err) {
    const exit = kubelet.proc.exitCode ?? kubelet.proc.signalCode ?? 'none yet';
    throw new Error(
      `${(err as Error).message}; kubelet exit: ${exit}; its output ends:\n${kubelet.output().slice(-4000)}`,
    );
  }
}

/** A running kubelet. */
export interface Kubelet {
  proc: ChildProcess;
  output: () => string;
  stop: () => Promise<number | null>;
}

/**
 * `args` with what this host needs: on a cgroup v1 host (these test machines) --fail-cgroupv1=false,
 * as an operator of such a node must pass (upstream's default refuses the host), unless `args` set it.
 */
export function withHostArgs(args: string[]): string[] {
  // The process-runtime subcommand is not a kubelet: it has no such flag.
  if (args[0] === 'process-runtime') return args;
  if (hostCgroupVersion() === 2 || args.some((a) => a.startsWith('--fail-cgroupv1'))) return args;
  return ['--fail-cgroupv1=false', ...args];
}

/**
 * Starts `tskubelet process-runtime`: the embedded runtime as a CRI daemon on the unix socket `socket`, its state
 * under `rootDir`, its pods on 127.0.0.1. Its output says `process runtime serving CRI` once it serves.
 */
export function startProcessRuntime(socket: string, rootDir: string): Kubelet {
  return startKubelet([
    'process-runtime',
    '--listen',
    `unix://${socket}`,
    '--root-dir',
    rootDir,
    '--node-ip',
    '127.0.0.1',
  ]);
}

/** Starts the built CLI with `args` (and withHostArgs), with `o.env` added to its environment. */
export function startKubelet(args: string[], o: { env?: Record<string, string> } = {}): Kubelet {
  const { env, flags } = kubeletCommandLine();
  const proc = spawn(process.execPath, [...flags, kubeletBin, ...withHostArgs(args)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env, ...o.env },
  });
  let out = '';
  proc.stdout!.on('data', (d) => {
    out += d;
  });
  proc.stderr!.on('data', (d) => {
    out += d;
  });
  return {
    proc,
    output: () => out,
    stop: () =>
      new Promise((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.exitCode);
        proc.once('exit', (c) => resolve(c));
        proc.kill('SIGTERM');
      }),
  };
}

const kubeletBin = join(repoRoot, 'bin', 'tskubelet.js');
let unitSettings: { env: Record<string, string>; flags: string[] } | undefined;
/**
 * The environment and Node flags the kubelet runs with on a node: the `Environment=` lines of the
 * systemd unit (packaging/systemd/tskubelet.service), NODE_OPTIONS as Node flags. Tests and
 * benches spawn the kubelet with them, so they measure what operators run.
 */
export function kubeletCommandLine(): { env: Record<string, string>; flags: string[] } {
  if (unitSettings) return unitSettings;
  const unit = readFileSync(join(repoRoot, 'packaging', 'systemd', 'tskubelet.service'), 'utf8');
  const env: Record<string, string> = {};
  for (const [, name, value] of unit.matchAll(/^Environment="?([A-Z_]+)=([^"\n]*)"?$/gm)) env[name] = value;
  const { NODE_OPTIONS: nodeOptions = '', ...rest } = env;
  unitSettings = { env: rest, flags: nodeOptions.split(' ').filter(Boolean) };
  return unitSettings;
}

/** Runs the CLI to completion. */
export function runKubelet(args: string[]): Promise<{ code: number | null; output: string }> {
  const k = startKubelet(args);
  return new Promise((resolve) => k.proc.once('exit', (code) => resolve({ code, output: k.output() })));
}

/** A plain HTTP GET. */
export function httpGet(url: string): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let b = '';
        res.on('data', (d) => (b += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: b, headers: res.headers }));
      })
      .on('error', reject);
  });
}

/** An HTTPS GET with optional client certificate, trusting `ca`. */
export function httpsGet(
  url: string,
  opts: { ca: string; cert?: string; key?: string; method?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .request(
        url,
        {
          method: opts.method ?? 'GET',
          ca: readFileSync(opts.ca),
          cert: opts.cert ? readFileSync(opts.cert) : undefined,
          key: opts.key ? readFileSync(opts.key) : undefined,
        },
        (res) => {
          let b = '';
          res.on('data', (d) => (b += d));
          res.on('end', () => resolve({ status: res.statusCode!, body: b }));
        },
      )
      .on('error', reject)
      .end();
  });
}

/**
 * Kills the processes whose command line contains one of `markers`: containers of a process-runtime
 * daemon outlive both the kubelet and the daemon (as containerd's do), so a test ends them itself.
 */
export function killProcesses(...markers: string[]): void {
  for (const m of markers) {
    try {
      execFileSync('pkill', ['-KILL', '-f', m]);
    } catch {
      /* none left */
    }
  }
}

/** Number of live processes whose command line contains `marker`. */
export function countProcesses(marker: string): number {
  let pids: number[];
  try {
    pids = execFileSync('pgrep', ['-f', marker]).toString().trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return 0;
  }
  // A shell forks before it execs each command, and for that moment the child carries the
  // parent's command line, marker included: a match whose parent matches too is not a copy.
  const matched = new Set(pids);
  const parentOf = (pid: number) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      return undefined; // gone meanwhile
    }
  };
  return pids.filter((pid) => {
    const parent = parentOf(pid);
    return parent !== undefined && !matched.has(parent);
  }).length;
}

/** Volume mounts outlive a kubelet stop (as upstream): a test's own clean-up unmounts what is under `dir`. */
export function unmountTestMounts(dir: string): void {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((p) => p?.startsWith(dir));
  for (const m of points.sort((a, b) => b.length - a.length)) spawnSync('umount', ['-l', m]);
}

/**
 * The flags of a kubelet given its serving certificate and client CA (files written under `dir`),
 * as a node set up by an operator: the kubelet then makes no local PKI under its root dir.
 */
export async function givenServingCertFlags(dir: string, node: string): Promise<string[]> {
  const { createCa, issueCert } = await import('../../src/server/pki.js');
  const ca = await createCa(`${node}-ca`);
  const serving = await issueCert(ca, { cn: node, server: true, sans: { dns: ['localhost'], ips: ['127.0.0.1'] } });
  const files = { 'ca.crt': ca.cert, 'tls.crt': serving.cert, 'tls.key': serving.key };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return [
    '--tls-cert-file',
    join(dir, 'tls.crt'),
    '--tls-private-key-file',
    join(dir, 'tls.key'),
    '--client-ca-file',
    join(dir, 'ca.crt'),
  ];
}
