/**
 * Upstream's node startup latency (pkg/kubelet/util/node_startup_latency_tracker.go) as its five
 * gauges, 0 until known: before the kubelet (boot → kubelet start), before registration (start →
 * first attempt to register the Node), registration (→ a new Node created; an existing Node is
 * not a node startup and records nothing more), after registration (→ the Node's first Ready),
 * and in total (boot → first Ready). Each moment is recorded once.
 */
import { readFileSync } from 'node:fs';
import { Gauge } from './registry.js';

const GAUGES = {
  preKubelet: [
    'kubelet_node_startup_pre_kubelet_duration_seconds',
    'Duration in seconds of node startup before kubelet starts.',
  ],
  preRegistration: [
    'kubelet_node_startup_pre_registration_duration_seconds',
    'Duration in seconds of node startup before registration.',
  ],
  registration: [
    'kubelet_node_startup_registration_duration_seconds',
    'Duration in seconds of node startup during registration.',
  ],
  postRegistration: [
    'kubelet_node_startup_post_registration_duration_seconds',
    'Duration in seconds of node startup after registration.',
  ],
  total: ['kubelet_node_startup_duration_seconds', 'Duration in seconds of node startup in total.'],
} as const;

/** The machine's boot time (ms since the epoch) from /proc/stat's btime; undefined when unreadable. */
export function bootTimeMs(stat = '/proc/stat'): number | undefined {
  try {
    const m = /^btime (\d+)$/m.exec(readFileSync(stat, 'utf8'));
    return m ? Number(m[1]) * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** Records the moments of a node's startup (epoch ms from `now`). */
export class NodeStartupTracker {
  private readonly gauges: Record<keyof typeof GAUGES, Gauge>;
  private attemptAt?: number;
  private registeredAt?: number;
  private readyAt?: number;

  constructor(
    metrics: { register<M extends Gauge>(m: M): M },
    private readonly o: { bootMs?: number; kubeletStartMs: number; now: () => number },
  ) {
    const gauge = ([name, help]: readonly [string, string]) => {
      const g = metrics.register(new Gauge(name, `[ALPHA] ${help}`, []));
      g.set(undefined, 0);
      return g;
    };
    this.gauges = {
      preKubelet: gauge(GAUGES.preKubelet),
      preRegistration: gauge(GAUGES.preRegistration),
      registration: gauge(GAUGES.registration),
      postRegistration: gauge(GAUGES.postRegistration),
      total: gauge(GAUGES.total),
    };
  }

  private set(which: keyof typeof GAUGES, fromMs: number, toMs: number): void {
    this.gauges[which].set(undefined, (toMs - fromMs) / 1000);
  }

  /** The first attempt to register the Node. */
  attemptRegister(): void {
    this.attemptAt ??= this.o.now();
  }

  /** The Node was created (not found existing). */
  registeredNew(): void {
    if (this.attemptAt === undefined || this.registeredAt !== undefined) return;
    this.registeredAt = this.o.now();
    if (this.o.bootMs !== undefined) this.set('preKubelet', this.o.bootMs, this.o.kubeletStartMs);
    this.set('preRegistration', this.o.kubeletStartMs, this.attemptAt);
    this.set('registration', this.attemptAt, this.registeredAt);
  }

  /** The Node's status was written Ready. */
  nodeReady(): void {
    if (this.registeredAt === undefined || this.readyAt !== undefined) return;
    this.readyAt = this.o.now();
    this.set('postRegistration', this.registeredAt, this.readyAt);
    if (this.o.bootMs !== undefined) this.set('total', this.o.bootMs, this.readyAt);
  }
}
