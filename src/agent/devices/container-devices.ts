/**
 * A container's CRI config with what device plugins answered for its devices (upstream
 * GetDeviceRunContainerOptions → the runtime manager): their env vars, mounts, device nodes,
 * annotations and CDI device names. Pure.
 */
import type * as cri from '../../cri/types.js';
import type { ContainerDevices } from './device-manager.js';

export function withDevices(config: cri.ContainerConfig, answers: readonly ContainerDevices[]): cri.ContainerConfig {
  const envs = [...(config.envs ?? [])];
  const annotations = { ...config.annotations };
  const mounts = [...(config.mounts ?? [])];
  const devices = [...(config.devices ?? [])];
  const cdi = [...(config.CDI_devices ?? [])];
  for (const a of answers) {
    for (const [key, value] of Object.entries(a.envs ?? {})) {
      const at = envs.findIndex((e) => e.key === key);
      if (at >= 0) envs[at] = { key, value };
      else envs.push({ key, value });
    }
    Object.assign(annotations, a.annotations);
    for (const m of a.mounts ?? [])
      mounts.push({ container_path: m.container_path, host_path: m.host_path, readonly: !!m.read_only });
    for (const d of a.devices ?? [])
      devices.push({ container_path: d.container_path, host_path: d.host_path, permissions: d.permissions });
    cdi.push(...(a.cdi_devices ?? []));
  }
  return { ...config, envs, annotations, mounts, devices, ...(cdi.length ? { CDI_devices: cdi } : {}) };
}
