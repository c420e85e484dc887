/**
 * The CRI v1 stats messages (ListContainerStats, ListPodSandboxStats, ImageFsInfo) as the kubelet
 * reads them (cri/stats-wire.ts decodes them); types.ts re-exports them.
 */
import type { ContainerMetadata, Labels, PodSandboxMetadata, UInt64Value } from './types-common.js';

export interface CpuUsage {
  timestamp: number;
  usage_core_nano_seconds?: UInt64Value | null;
  usage_nano_cores?: UInt64Value | null;
}
export interface MemoryUsage {
  timestamp: number;
  working_set_bytes?: UInt64Value | null;
  available_bytes?: UInt64Value | null;
  usage_bytes?: UInt64Value | null;
  rss_bytes?: UInt64Value | null;
  page_faults?: UInt64Value | null;
  major_page_faults?: UInt64Value | null;
}
export interface ContainerStats {
  attributes: { id: string; metadata: ContainerMetadata; labels: Labels; annotations: Labels };
  cpu?: CpuUsage | null;
  memory?: MemoryUsage | null;
  writable_layer?: {
    timestamp: number;
    fs_id?: { mountpoint: string } | null;
    used_bytes?: UInt64Value | null;
    inodes_used?: UInt64Value | null;
  } | null;
  swap?: SwapUsage | null;
}
/** A container's swap (cri-api 1.29+; containerd 2 and the embedded runtime give it). */
export interface SwapUsage {
  timestamp: number;
  swap_available_bytes?: UInt64Value | null;
  swap_usage_bytes?: UInt64Value | null;
}
export interface NetworkInterfaceUsage {
  name: string;
  rx_bytes?: UInt64Value | null;
  rx_errors?: UInt64Value | null;
  tx_bytes?: UInt64Value | null;
  tx_errors?: UInt64Value | null;
}
export interface NetworkUsage {
  timestamp: number;
  default_interface?: NetworkInterfaceUsage | null;
  interfaces?: NetworkInterfaceUsage[];
}
export interface ProcessUsage {
  timestamp: number;
  process_count?: UInt64Value | null;
}
/** PodSandboxStats (Linux part; the Windows part is never asked for). */
export interface PodSandboxStats {
  attributes: { id: string; metadata: PodSandboxMetadata; labels: Labels; annotations: Labels };
  linux?: {
    cpu?: CpuUsage | null;
    memory?: MemoryUsage | null;
    network?: NetworkUsage | null;
    process?: ProcessUsage | null;
    containers?: ContainerStats[];
  } | null;
}
export interface PodSandboxStatsFilter {
  id?: string;
  label_selector?: Labels;
}
export interface ContainerStatsFilter {
  id?: string;
  pod_sandbox_id?: string;
  label_selector?: Labels;
}
export interface FilesystemUsage {
  timestamp: number;
  fs_id?: { mountpoint: string } | null;
  used_bytes?: UInt64Value | null;
  inodes_used?: UInt64Value | null;
}

/**
 * ImageFsInfo's answer: the filesystems of the images and, from a runtime that keeps its containers' writable layers
 * elsewhere (CRI-O with a split image filesystem), those of the containers. containerd reports images only.
 */
export interface ImageFsInfo {
  image_filesystems: FilesystemUsage[];
  container_filesystems?: FilesystemUsage[];
}
