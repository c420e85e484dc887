/**
 * The registered CSI drivers (upstream csiDriversStore): driver name → its endpoint and a client.
 * Filled by the plugin watcher's CSI handler (csi-registration.ts), read by the CSI volume plugin.
 */
import { createCsiClient, type CsiClient } from './csi-client.js';

/** One registered driver. */
interface Driver {
  endpoint: string;
  version: string;
  client: CsiClient;
}

/** Driver name → driver. */
export class CsiDrivers {
  private readonly drivers = new Map<string, Driver>();

  private readonly connect: (endpoint: string, name: string) => CsiClient;

  /**
   * `connect` makes a driver's client (default: over its socket, each call seen by `observe`: csi_operations_seconds).
   */
  constructor(
    o: {
      connect?: (endpoint: string, name: string) => CsiClient;
      observe?: (o: { driver: string; method: string; code: string; seconds: number }) => void;
    } = {},
  ) {
    const observe = o.observe;
    this.connect =
      o.connect ?? ((endpoint, name) => createCsiClient(endpoint, observe && ((c) => observe({ driver: name, ...c }))));
  }

  /** Registers (or re-registers at a new endpoint) `name`. */
  add(name: string, endpoint: string, version: string): CsiClient {
    const old = this.drivers.get(name);
    if (old?.endpoint === endpoint) return old.client;
    old?.client.close();
    const client = this.connect(endpoint, name);
    this.drivers.set(name, { endpoint, version, client });
    return client;
  }

  /** Forgets `name` (its socket is gone). */
  remove(name: string): void {
    this.drivers.get(name)?.client.close();
    this.drivers.delete(name);
  }

  /** The client of `name`; throws upstream's error when it is not registered. */
  client(name: string): CsiClient {
    const d = this.drivers.get(name);
    if (!d) throw new Error(`driver name ${name} not found in the list of registered CSI drivers`);
    return d.client;
  }

  /** The endpoint `name` is registered at (undefined: not registered). */
  endpointOf(name: string): string | undefined {
    return this.drivers.get(name)?.endpoint;
  }

  has(name: string): boolean {
    return this.drivers.has(name);
  }

  /** Closes every client. */
  close(): void {
    for (const d of this.drivers.values()) d.client.close();
    this.drivers.clear();
  }
}
