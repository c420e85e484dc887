/**
 * DRA device health (ResourceHealthStatus, KEP-4680): a driver that offers the optional
 * `DRAResourceHealth` service streams its devices' health (NodeWatchResources, dra-health
 * v1beta1, else v1alpha1); what it last said of a device holds for its health-check timeout (the
 * device's own, else 30 s) and then is Unknown, as is every device of a driver without the
 * service, or whose stream ended. The pods holding a device hear of each change
 * (`allocatedResourcesStatus`).
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../lib/logger.js';
import { serviceMethods } from '../../cri/proto.js';
import { GrpcCode } from '../../cri/grpc-status.js';

/** A device's health as the pod status names it. */
export type DeviceHealthStatus = 'Healthy' | 'Unhealthy' | 'Unknown';

/** Upstream's default health-check timeout. */
const DEFAULT_TIMEOUT_MS = 30_000;
/** Upstream's cap on a health message: longer ones are cut to 1021 characters and "...". */
const MAX_MESSAGE = 1024;

/** The service's versions, newest first (the same messages: v1alpha1 lacks the timeout and message fields). */
const VERSIONS = ['v1beta1', 'v1alpha1'] as const;
const METHOD = serviceMethods('dra-health/v1beta1/api.proto', 'v1beta1.DRAResourceHealth').NodeWatchResources;

/** One report of one device, as the stream carries it. */
interface DeviceHealthMessage {
  device?: { pool_name: string; device_name: string };
  health: 'UNKNOWN' | 'HEALTHY' | 'UNHEALTHY';
  last_updated_time?: number;
  health_check_timeout_seconds?: number;
  message?: string;
}

interface DriverState {
  client: grpc.Client;
  /** The stream now followed (an earlier one's events are ignored). */
  stream?: grpc.ClientReadableStream<unknown>;
  devices: Map<string, Known>;
}

interface Known {
  health: DeviceHealthStatus;
  message?: string;
  receivedAtMs: number;
  timeoutMs: number;
}

/** A health message as upstream keeps it: at most 1024 characters. Pure. */
export function boundedHealthMessage(message: string): string {
  return message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 3)}...` : message;
}

export class DraHealth {
  /** Per driver: its stream and what it said of each device (`<pool>/<device>`). */
  private readonly drivers = new Map<string, DriverState>();

  constructor(private readonly deps: { logger: Logger; now: () => number; onChange: (driver: string) => void }) {}

  /** Follows a newly registered driver's health stream (a driver without the service: Unknown). */
  watch(driver: string, endpoint: string): void {
    this.stop(driver);
    const client = new grpc.Client(`unix://${endpoint}`, grpc.credentials.createInsecure(), {
      'grpc.default_authority': 'localhost',
    });
    const state: DriverState = { client, devices: new Map() };
    this.drivers.set(driver, state);
    this.follow(driver, state, 0);
  }

  private follow(driver: string, state: DriverState, version: number): void {
    const stream = state.client.makeServerStreamRequest(
      METHOD.path.replace('/v1beta1.', `/${VERSIONS[version]}.`),
      (x: object) => METHOD.requestSerialize(x),
      (b: Buffer) => METHOD.responseDeserialize(b),
      {},
    );
    state.stream = stream;
    const current = () => this.drivers.get(driver) === state && state.stream === stream;
    stream.on('data', (res: { devices?: DeviceHealthMessage[] }) => {
      if (!current()) return;
      const now = this.deps.now();
      for (const d of res.devices ?? []) {
        if (!d.device) continue;
        const timeout = Number(d.health_check_timeout_seconds ?? 0);
        state.devices.set(`${d.device.pool_name}/${d.device.device_name}`, {
          health: d.health === 'HEALTHY' ? 'Healthy' : d.health === 'UNHEALTHY' ? 'Unhealthy' : 'Unknown',
          ...(d.message ? { message: boundedHealthMessage(d.message) } : {}),
          receivedAtMs: now,
          timeoutMs: timeout > 0 ? timeout * 1000 : DEFAULT_TIMEOUT_MS,
        });
      }
      this.deps.onChange(driver);
    });
    const ended = (why?: string) => {
      if (!current()) return;
      if (why) this.deps.logger.info({ driver, err: why }, 'DRA driver health stream ended: its devices are Unknown');
      state.stream = undefined;
      state.devices.clear();
      this.deps.onChange(driver);
    };
    stream.on('error', (err: grpc.ServiceError) => {
      if (!current()) return;
      // A driver that speaks only the older version; one without the service at all: its devices are Unknown.
      if (err.code === GrpcCode.UNIMPLEMENTED && version + 1 < VERSIONS.length) this.follow(driver, state, version + 1);
      else ended(err.code === GrpcCode.UNIMPLEMENTED ? undefined : err.details);
    });
    stream.on('end', () => ended('the driver ended the stream'));
  }

  /** Stops following a driver that is gone (or re-registered). */
  stop(driver: string): void {
    const state = this.drivers.get(driver);
    if (!state) return;
    this.drivers.delete(driver);
    state.client.close();
  }

  /** A device's health now: what its driver last said, unless that is older than the device's timeout. */
  healthOf(driver: string, pool: string, device: string): { health: DeviceHealthStatus; message?: string } {
    const known = this.drivers.get(driver)?.devices.get(`${pool}/${device}`);
    if (!known || this.deps.now() - known.receivedAtMs > known.timeoutMs) return { health: 'Unknown' };
    return { health: known.health, ...(known.message ? { message: known.message } : {}) };
  }

  /** Stops every stream (the kubelet stops). */
  close(): void {
    for (const driver of [...this.drivers.keys()]) this.stop(driver);
  }
}
