/**
 * The device plugins known to the kubelet (upstream devicemanager's endpoints and its
 * Registration server): plugins register a resource (`example.com/widget`) on
 * `<root-dir>/device-plugins/kubelet.sock` (deviceplugin/v1beta1 Registration, checked as
 * upstream), and the kubelet connects back to each plugin's socket and follows its devices, their
 * health and their NUMA nodes (ListAndWatch, a server stream). A plugin that goes away leaves its
 * devices unhealthy; one that registers again (a kubelet or plugin restart) takes them back.
 * A resource whose plugin stays away for upstream's grace period of 5 minutes (known from the
 * checkpoint and not registered again, or gone) is removed: from the checkpoint and from the Node.
 * The unary calls to a plugin (GetPreferredAllocation, Allocate, PreStartContainer) go through
 * here.
 */
import * as grpc from '@grpc/grpc-js';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../lib/logger.js';
import { realClock, type Clock } from '../../lib/clock.js';
import { serviceMethods } from '../../cri/proto.js';
import { GrpcCallError, GrpcCode } from '../../cri/grpc-status.js';
import { serveUnary, type UnaryHandler } from '../../cri/grpc-server.js';
import { goStatusError } from '../../cri/unary-caller.js';
import type { DevicePluginMetrics } from '../metrics/device-plugin-metrics.js';
import type { DeviceHealth } from './device-allocation.js';
import type { DeviceNumaNodes } from './device-topology.js';

const PROTO = 'deviceplugin/v1beta1/api.proto';
const SUPPORTED_VERSIONS = ['v1beta1'];
/** Allocate and the other unary calls to a plugin: upstream's 10 s. */
const CALL_TIMEOUT_MS = 10_000;
/** How long a resource outlives its plugin (upstream's endpointStopGracePeriod). */
export const STOP_GRACE_MS = 5 * 60_000;

/** What a plugin said it offers when it registered (DevicePluginOptions). */
interface PluginOptions {
  pre_start_required?: boolean;
  get_preferred_allocation_available?: boolean;
}

interface Plugin {
  resource: string;
  options?: PluginOptions;
  /** Absent for a resource known from the checkpoint whose plugin has not registered again yet. */
  client?: grpc.Client;
  devices: Map<string, DeviceHealth>;
  /** The NUMA nodes the plugin gave each device (its ListAndWatch `topology`), for the topology manager. */
  numa: Map<string, readonly number[] | undefined>;
  stream?: grpc.ClientReadableStream<unknown>;
  /** Since when (monotonic) no plugin serves the resource: it went away, or is known from the checkpoint only. */
  stoppedAtMs?: number;
}

/** A device as ListAndWatch lists it. */
interface ListedDevice {
  ID: string;
  health: string;
  topology?: { nodes?: { ID: number | string }[] } | null;
}

interface RegisterRequest {
  version: string;
  endpoint: string;
  resource_name: string;
  options?: PluginOptions;
}

export interface DevicePluginsDeps {
  /** `<root-dir>/device-plugins`. */
  dir: string;
  logger: Logger;
  /** Told when a resource's devices, their health or their NUMA nodes changed. */
  onChange: (listed: boolean) => void;
  metrics?: DevicePluginMetrics;
  clock?: Clock;
}

export class DevicePlugins {
  private readonly plugins = new Map<string, Plugin>();
  /** Resources removed after their grace period, until a plugin registers them again: the Node drops them. */
  private readonly removed = new Set<string>();
  private stopServer?: () => Promise<void>;
  /** The DevicePlugin service's methods (the checkpoint encodes Allocate answers with them too). */
  readonly methods = serviceMethods(PROTO, 'v1beta1.DevicePlugin');

  private readonly clock: Clock;

  constructor(private readonly deps: DevicePluginsDeps) {
    this.clock = deps.clock ?? realClock;
  }

  /**
   * Resources known from the checkpoint: their devices are known, but not usable until their
   * plugin registers again.
   */
  restore(registered: Record<string, string[]>): void {
    for (const [resource, ids] of Object.entries(registered))
      this.plugins.set(resource, {
        resource,
        devices: new Map(ids.map((id) => [id, 'Unhealthy' as DeviceHealth])),
        numa: new Map(),
        stoppedAtMs: this.clock.monotonic(),
      });
  }

  /** Serves Registration on kubelet.sock, made anew: plugins watch for it and register again. */
  async serve(): Promise<void> {
    const socket = join(this.deps.dir, 'kubelet.sock');
    await rm(socket, { force: true });
    const register = serviceMethods(PROTO, 'v1beta1.Registration').Register;
    const handlers: Record<string, UnaryHandler> = {
      [register.path]: {
        requestDeserialize: (b) => register.requestDeserialize(b),
        responseSerialize: (r) => register.responseSerialize(r as object),
        handle: (req) => this.register(req as RegisterRequest),
      },
    };
    this.stopServer = (await serveUnary(socket, handlers)).close;
  }

  async stop(): Promise<void> {
    for (const p of this.plugins.values()) {
      p.stream?.cancel();
      p.client?.close();
    }
    await this.stopServer?.();
  }

  /** A plugin's Register: checked as upstream, then followed through ListAndWatch. */
  private register(req: RegisterRequest): object {
    if (!SUPPORTED_VERSIONS.includes(req.version))
      throw new GrpcCallError(
        GrpcCode.UNKNOWN,
        `requested API version "${req.version}" is not supported by kubelet. Supported versions are ${JSON.stringify(SUPPORTED_VERSIONS)}`,
      );
    if (
      !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(req.resource_name) ||
      req.resource_name.includes('kubernetes.io/')
    )
      throw new GrpcCallError(GrpcCode.UNKNOWN, `the ResourceName "${req.resource_name}" is invalid`);
    if (!req.endpoint || req.endpoint.includes('/'))
      throw new GrpcCallError(GrpcCode.UNKNOWN, `invalid endpoint "${req.endpoint}"`);
    const previous = this.plugins.get(req.resource_name);
    previous?.stream?.cancel();
    previous?.client?.close();
    const client = new grpc.Client(`unix://${join(this.deps.dir, req.endpoint)}`, grpc.credentials.createInsecure(), {
      'grpc.default_authority': 'localhost',
    });
    // Devices known before the plugin came back keep their health until its first list says otherwise.
    const plugin: Plugin = {
      resource: req.resource_name,
      options: req.options ?? {},
      client,
      devices: previous?.devices ?? new Map<string, DeviceHealth>(),
      numa: previous?.numa ?? new Map<string, readonly number[] | undefined>(),
    };
    this.plugins.set(req.resource_name, plugin);
    this.removed.delete(req.resource_name);
    this.deps.logger.info({ resource: req.resource_name, endpoint: req.endpoint }, 'device plugin registered');
    this.deps.metrics?.registered(req.resource_name);
    this.watch(plugin, client);
    return {};
  }

  /** Follows the plugin's ListAndWatch until it ends; then its devices are unhealthy. */
  private watch(plugin: Plugin, client: grpc.Client): void {
    const m = this.methods.ListAndWatch;
    const stream = client.makeServerStreamRequest(
      m.path,
      (x: object) => m.requestSerialize(x),
      (b: Buffer) => m.responseDeserialize(b),
      {},
    );
    plugin.stream = stream;
    stream.on('data', (res: { devices?: ListedDevice[] }) => {
      plugin.devices = new Map(
        (res.devices ?? []).map((x) => [x.ID, x.health === 'Healthy' ? 'Healthy' : 'Unhealthy'] as const),
      );
      plugin.numa = new Map((res.devices ?? []).map((x) => [x.ID, x.topology?.nodes?.map((n) => Number(n.ID))]));
      this.deps.onChange(true);
    });
    const ended = () => {
      if (this.plugins.get(plugin.resource) !== plugin) return;
      for (const id of plugin.devices.keys()) plugin.devices.set(id, 'Unhealthy');
      plugin.stoppedAtMs ??= this.clock.monotonic();
      this.deps.logger.info({ resource: plugin.resource }, 'device plugin went away: its devices are unhealthy');
      this.deps.onChange(false);
    };
    stream.on('error', ended);
    stream.on('end', ended);
  }

  /** The resources plugins registered (or the checkpoint named). */
  resources(): Set<string> {
    return new Set(this.plugins.keys());
  }

  /** Each resource's devices, as the checkpoint's RegisteredDevices keeps them. */
  registered(): Record<string, string[]> {
    return Object.fromEntries([...this.plugins.values()].map((p) => [p.resource, [...p.devices.keys()]]));
  }

  /**
   * Removes the resources whose plugin has been away for the grace period (upstream's GetCapacity does it when the node
   * status asks); the checkpoint follows.
   */
  private expire(): void {
    const now = this.clock.monotonic();
    const expired = [...this.plugins.values()].filter(
      (p) => p.stoppedAtMs !== undefined && now - p.stoppedAtMs >= STOP_GRACE_MS,
    );
    for (const plugin of expired) {
      plugin.client?.close();
      this.plugins.delete(plugin.resource);
      this.removed.add(plugin.resource);
      this.deps.logger.info({ resource: plugin.resource }, 'device plugin resource removed: its plugin stayed away');
    }
    if (expired.length) this.deps.onChange(true);
  }

  /** The resources removed after their plugin stayed away, for the Node to drop from its capacity. */
  removedResources(): string[] {
    this.expire();
    return [...this.removed];
  }

  /** Each resource's devices (the node's capacity). */
  capacity(): Record<string, number> {
    this.expire();
    return Object.fromEntries([...this.plugins.values()].map((p) => [p.resource, p.devices.size]));
  }

  /** Each resource's healthy devices (the node's allocatable). */
  allocatable(): Record<string, number> {
    return Object.fromEntries(
      [...this.plugins.values()].map((p) => [
        p.resource,
        [...p.devices.values()].filter((h) => h === 'Healthy').length,
      ]),
    );
  }

  /** The resource's healthy devices. */
  healthy(resource: string): string[] {
    return [...(this.plugins.get(resource)?.devices ?? [])].filter(([, h]) => h === 'Healthy').map(([id]) => id);
  }

  /** A device's health; Unknown for one no plugin lists. */
  healthOf(resource: string, id: string): DeviceHealth {
    return this.plugins.get(resource)?.devices.get(id) ?? 'Unknown';
  }

  /** The NUMA nodes of each of the resource's devices. */
  numaOf(resource: string): DeviceNumaNodes {
    return this.plugins.get(resource)?.numa ?? new Map();
  }

  /** Each resource's healthy devices with their NUMA nodes (pod-resources GetAllocatableResources). */
  healthyDevices(): { resource: string; devices: { id: string; numaNodes?: readonly number[] }[] }[] {
    return [...this.plugins.values()].map((p) => ({
      resource: p.resource,
      devices: this.healthy(p.resource).map((id) => ({
        id,
        ...(p.numa.get(id) ? { numaNodes: p.numa.get(id) } : {}),
      })),
    }));
  }

  /** Whether the resource's plugin offers GetPreferredAllocation / asks for PreStartContainer. */
  offers(resource: string, option: keyof PluginOptions): boolean {
    const plugin = this.plugins.get(resource);
    return !!plugin?.client && !!plugin.options?.[option];
  }

  /** A unary call to the resource's plugin; its errors in Go's status text, which upstream's messages embed. */
  call(resource: string, method: string, req: object): Promise<unknown> {
    const client = this.plugins.get(resource)?.client;
    if (!client) return Promise.reject(new Error(`device plugin for ${resource} is not registered`));
    const m = this.methods[method];
    return new Promise((resolve, reject) =>
      client.makeUnaryRequest(
        m.path,
        (x: object) => m.requestSerialize(x),
        (b: Buffer) => m.responseDeserialize(b),
        req,
        { deadline: Date.now() + CALL_TIMEOUT_MS },
        (err, res) => (err ? reject(goStatusError(new GrpcCallError(err.code, err.details))) : resolve(res)),
      ),
    );
  }
}
