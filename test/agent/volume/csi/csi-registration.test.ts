import { describe, expect, it } from 'vitest';
import { CsiDrivers } from '../../../../src/agent/volume/csi/csi-drivers.js';
import { csiRegistrationHandler } from '../../../../src/agent/volume/csi/csi-registration.js';
import type { CsiClient } from '../../../../src/agent/volume/csi/csi-client.js';
import { createLogger } from '../../../../src/lib/logger.js';

const logger = createLogger({ level: 'fatal' });
const client = (nodeGetInfo: CsiClient['nodeGetInfo']) => ({ nodeGetInfo, close() {} }) as unknown as CsiClient;

describe('the CSIPlugin registration handler', () => {
  it('refuses a name that could leave the plugin directory, and drivers without CSI 1.x', () => {
    const h = csiRegistrationHandler({ drivers: new CsiDrivers(), logger });
    expect(() => h.validate('../../etc', '/s', ['1.0.0'])).toThrow(
      'validation failed for CSI Driver "../../etc" at endpoint /s: not a valid CSI driver name',
    );
    expect(() => h.validate('d.csi', '/s', ['0.3.0'])).toThrow(
      'validation failed for CSI Driver d.csi at endpoint /s: none of the CSI versions reported by this driver are supported',
    );
    expect(() => h.validate('d.csi', '/s', ['1.2.0'])).not.toThrow();
  });

  it('a driver whose NodeGetInfo fails is not kept, with upstream error text', async () => {
    const drivers = new CsiDrivers({
      connect: () => client(() => Promise.reject(new Error('rpc error: code = Unavailable desc = down'))),
    });
    const h = csiRegistrationHandler({ drivers, logger });
    await expect(h.register('d.csi', '/s', ['1.0.0'])).rejects.toThrow(
      'kubernetes.io/csi: RegisterPlugin error -- failed to get plugin info using RPC GetNodeInfo at endpoint /s: rpc error: code = Unavailable desc = down',
    );
    expect(drivers.has('d.csi')).toBe(false);
    expect(() => drivers.client('d.csi')).toThrow('driver name d.csi not found in the list of registered CSI drivers');
  });

  it('registers then deregisters', async () => {
    const drivers = new CsiDrivers({
      connect: () =>
        client(() => Promise.resolve({ node_id: 'n', max_volumes_per_node: 0, accessible_topology: null })),
    });
    const h = csiRegistrationHandler({ drivers, logger });
    await h.register('d.csi', '/s', ['1.0.0']);
    expect(drivers.has('d.csi')).toBe(true);
    await h.deregister('d.csi', '/s');
    expect(drivers.has('d.csi')).toBe(false);
  });

  it('the old socket going after the driver re-registered at a new one leaves the new registration', async () => {
    const drivers = new CsiDrivers({
      connect: () =>
        client(() => Promise.resolve({ node_id: 'n', max_volumes_per_node: 0, accessible_topology: null })),
    });
    const h = csiRegistrationHandler({ drivers, logger });
    await h.register('d.csi', '/old', ['1.0.0']);
    await h.register('d.csi', '/new', ['1.0.0']);
    await h.deregister('d.csi', '/old');
    expect(drivers.endpointOf('d.csi')).toBe('/new');
    await h.deregister('d.csi', '/new');
    expect(drivers.has('d.csi')).toBe(false);
  });
});
