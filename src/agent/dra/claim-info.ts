/**
 * What the node knows of a prepared ResourceClaim (upstream's ClaimInfoState in the
 * `dra_manager_state` checkpoint), and the pure readings of it: which devices a container's use of
 * a claim takes, and how the pod-resources API reports them.
 */

/** A prepared device of a claim, with the fields in upstream's order (state.Device). */
export interface PreparedDevice {
  PoolName: string;
  DeviceName: string;
  /** The allocation's share of a device with consumable capacity (DRAConsumableCapacity); null for a whole device. */
  ShareID?: string | null;
  RequestNames: string[];
  CDIDeviceIDs: string[];
}

/** A claim as the node prepared it (upstream's ClaimInfoState). */
export interface ClaimInfo {
  ClaimUID: string;
  ClaimName: string;
  Namespace: string;
  PodUIDs: Record<string, Record<string, never>>;
  DriverState: Record<string, { Devices: PreparedDevice[] }>;
}

/** One device of the scheduler's allocation (resource.k8s.io/v1 DeviceRequestAllocationResult). */
export interface AllocationResult {
  request: string;
  driver: string;
  pool: string;
  device: string;
  shareID?: string;
}

/** A device as a driver's NodePrepareResources answers it (dra.v1 Device). */
export interface DriverDevice {
  request_names?: string[];
  pool_name: string;
  device_name: string;
  cdi_device_ids?: string[];
}

/** A container's claim as the pod-resources API reports it (podresources.v1 DynamicResource). */
export interface DynamicResource {
  claim_name: string;
  claim_namespace: string;
  claim_resources: {
    cdi_devices: { name: string }[];
    driver_name: string;
    pool_name: string;
    device_name: string;
    share_id?: string;
  }[];
}

/**
 * The devices `driver` prepared, as the checkpoint keeps them. A device's share comes from the
 * allocation result of the same driver, pool and device (and one of its requests, when the
 * device is shared among several), as upstream keeps the allocation's ShareID. Pure.
 */
export function preparedDevices(
  driver: string,
  answered: DriverDevice[],
  results: AllocationResult[],
): PreparedDevice[] {
  return answered.map((device) => {
    const requests = device.request_names ?? [];
    const share = results.find(
      (r) =>
        r.driver === driver &&
        r.pool === device.pool_name &&
        r.device === device.device_name &&
        (!requests.length || requests.includes(r.request)),
    )?.shareID;
    return {
      PoolName: device.pool_name,
      DeviceName: device.device_name,
      ShareID: share ?? null,
      RequestNames: requests,
      CDIDeviceIDs: device.cdi_device_ids ?? [],
    };
  });
}

/** Whether a use of the claim (with `request`, or all of it) takes `device`. Pure. */
export const usesDevice = (device: PreparedDevice, request: string | undefined): boolean =>
  !request || !device.RequestNames.length || device.RequestNames.includes(request);

/** The claim as the pod-resources API reports it: every device its drivers prepared. Pure. */
export function dynamicResourceOf(info: ClaimInfo): DynamicResource {
  return {
    claim_name: info.ClaimName,
    claim_namespace: info.Namespace,
    claim_resources: Object.entries(info.DriverState).flatMap(([driver, state]) =>
      state.Devices.map((device) => ({
        cdi_devices: device.CDIDeviceIDs.map((id) => ({ name: id })),
        driver_name: driver,
        pool_name: device.PoolName,
        device_name: device.DeviceName,
        ...(device.ShareID ? { share_id: device.ShareID } : {}),
      })),
    ),
  };
}
