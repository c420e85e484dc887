/**
 * Which cgroup version the host mounts at /sys/fs/cgroup, as upstream's IsCgroup2UnifiedMode: the
 * filesystem type there is cgroup2 (unified) or anything else (v1 or hybrid).
 */
import { statfsSync } from 'node:fs';

/** CGROUP2_SUPER_MAGIC from linux/magic.h. */
const CGROUP2_SUPER_MAGIC = 0x63677270;

export function hostCgroupVersion(mountPoint = '/sys/fs/cgroup'): 1 | 2 {
  try {
    return statfsSync(mountPoint).type === CGROUP2_SUPER_MAGIC ? 2 : 1;
  } catch {
    return 1;
  }
}
