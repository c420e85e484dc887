/**
 * The plugin watcher's handler for `CSIPlugin` sockets (upstream csi RegistrationHandler): a
 * driver is accepted when it speaks CSI 1.x; registering it asks NodeGetInfo and installs it in
 * the CSINode object and the Node's annotation (when there is an apiserver), and starts the
 * updates of its volume limit its CSIDriver asks for; a removed socket uninstalls it. Errors carry upstream's
 * "kubernetes.io/csi: RegisterPlugin error -- …" texts.
 */
import type { Logger } from '../../../lib/logger.js';
import { messageOf } from '../../../lib/errors.js';
import type { PluginHandler } from '../../pluginmanager/plugin-watcher.js';
import type { AllocatableUpdates } from './allocatable-updates.js';
import type { CsiDrivers } from './csi-drivers.js';
import { driverEntry, type CsiNodeInfoManager } from './csi-node-info.js';
import { csiLog } from './csi-release.js';
import { highestSupportedVersion, isValidDriverName } from './csi-spec.js';

const log = csiLog;

/** The CSIPlugin handler over `drivers` (and `nodeInfo` with an apiserver). */
export function csiRegistrationHandler(d: {
  drivers: CsiDrivers;
  nodeInfo?: CsiNodeInfoManager;
  /** The periodic updates of a driver's volume limit its CSIDriver asks for (with an apiserver). */
  allocatable?: AllocatableUpdates;
  logger: Logger;
}): PluginHandler {
  return {
    validate(name, endpoint, versions) {
      d.logger.info(
        {},
        log(
          `Trying to validate a new CSI Driver with name: ${name} endpoint: ${endpoint} versions: ${versions.join(',')}`,
        ),
      );
      if (!isValidDriverName(name))
        throw new Error(
          `validation failed for CSI Driver ${JSON.stringify(name)} at endpoint ${endpoint}: not a valid CSI driver name`,
        );
      const v = highestSupportedVersion(versions);
      if (!v.ok) throw new Error(`validation failed for CSI Driver ${name} at endpoint ${endpoint}: ${v.message}`);
    },
    async register(name, endpoint, versions) {
      d.logger.info({}, log(`Register new plugin with name: ${name} at endpoint: ${endpoint}`));
      const v = highestSupportedVersion(versions);
      const client = d.drivers.add(name, endpoint, v.ok ? v.version : '');
      let info;
      try {
        info = await client.nodeGetInfo();
      } catch (err) {
        d.drivers.remove(name);
        throw new Error(
          log(
            `RegisterPlugin error -- failed to get plugin info using RPC GetNodeInfo at endpoint ${endpoint}: ${messageOf(err)}`,
          ),
        );
      }
      try {
        await d.nodeInfo?.install(driverEntry(name, info), info.accessible_topology?.segments ?? {});
      } catch (err) {
        d.drivers.remove(name);
        throw new Error(log(`RegisterPlugin error -- failed to add CSI driver: ${messageOf(err)}`));
      }
      await d.allocatable?.start(name, info.max_volumes_per_node);
    },
    async deregister(name, endpoint) {
      d.logger.info({}, log(`registrationHandler.DeRegisterPlugin request for plugin ${name}, endpoint ${endpoint}`));
      // A driver re-registered at another endpoint (its new socket came before the old one went) stays.
      if (d.drivers.endpointOf(name) !== endpoint) return;
      d.allocatable?.stop(name);
      d.drivers.remove(name);
      await d.nodeInfo?.uninstall(name);
    },
  };
}
