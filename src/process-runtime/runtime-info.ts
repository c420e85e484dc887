/**
 * What the process runtime says about itself (CRI Version, Status, RuntimeConfig): always ready,
 * one runtime handler (the default: no recursive read-only mounts; user namespaces as root on a
 * kernel that allows them, user-namespace.ts), and the cgroupfs driver (its cgroups are plain
 * directories it makes, container-cgroups.ts).
 */
import { CRI_API_VERSION } from '../cri/services.js';
import type * as cri from '../cri/types.js';
import { userNamespacesSupported } from './user-namespace.js';

/** The runtime name reported by Version and used in container IDs ("process://<id>"). */
export const PROCESS_RUNTIME_NAME = 'process';

/** CRI Version for the kubelet's `version`. */
export function processRuntimeVersion(version: string): cri.VersionResponse {
  return {
    version: '0.1.0',
    runtime_name: PROCESS_RUNTIME_NAME,
    runtime_version: version,
    runtime_api_version: CRI_API_VERSION,
  };
}

/** CRI Status. */
export function processRuntimeStatus(): cri.StatusResponse {
  return {
    status: {
      conditions: [
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        { type: 'NetworkReady', status: true, reason: '', message: '' },
      ],
    },
    info: {},
    runtime_handlers: [
      { name: '', features: { recursive_read_only_mounts: false, user_namespaces: userNamespacesSupported() } },
    ],
  };
}

/** CRI RuntimeConfig. */
export function processRuntimeConfig(): cri.RuntimeConfigResponse {
  return { linux: { cgroup_driver: 'CGROUPFS' } };
}
