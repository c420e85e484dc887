/**
 * The files the kubelet keeps for a pod under `<root-dir>/pods/<uid>` (upstream getPodDir): the
 * managed /etc/hosts and one termination-log file per container instance (mounted at the
 * container's terminationMessagePath, world-writable so any user in the container can write it).
 */
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { writeSmallFile } from '../../lib/fs-util.js';
import { join } from 'node:path';
import type { Container, Pod } from '../../api/types.js';
import { hostsFileContent } from './hosts-file.js';
import { podHostNameAndDomain } from './pod-hostname.js';

/** The pod's directory under the root dir (upstream getPodDir). */
export function podDir(rootDir: string, uid: string): string {
  return join(rootDir, 'pods', uid);
}

/** The mode of the pod's directories: its own, volumes/, plugins/, containers/<name>/ (upstream's). */
export const POD_DIR_MODE = 0o750;

/**
 * Makes the pod's directory with its volumes/ and plugins/ (upstream makePodDataDirs, before the pod's volumes are
 * set up); those already there are left as they are.
 */
export async function makePodDataDirs(rootDir: string, uid: string): Promise<void> {
  for (const sub of ['volumes', 'plugins'])
    await mkdir(join(podDir(rootDir, uid), sub), { recursive: true, mode: POD_DIR_MODE });
}

/*
 * Reads here are small and local (the page cache): synchronous. Each pod start writes its hosts
 * file and a termination-log file per container off the loop (writeSmallFile): on a disk busy
 * with a burst of container starts each create waits milliseconds.
 */

/** A file's text, or "" when there is no path or no file. */
export async function readText(path: string): Promise<string> {
  if (!path) return '';
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Writes the pod's managed hosts file — a line for each of its IPs, both families of a dual-stack
 * pod, as upstream's — or the node's own entries for a hostNetwork pod; returns its path.
 */
export async function writeHostsFile(
  pod: Pod,
  podIPs: readonly string[],
  node: { rootDir: string; clusterDomain: string },
): Promise<string> {
  const dir = podDir(node.rootDir, pod.metadata.uid!);
  // The sandbox exists, so the name was valid when it was made (and the fields cannot change).
  const name = podHostNameAndDomain(pod, node.clusterDomain);
  const content = hostsFileContent(pod, {
    podIPs: [...podIPs],
    hostname: name.ok ? name.hostname : pod.metadata.name!,
    domain: name.ok ? name.domain : '',
    nodeHostsFile: pod.spec.hostNetwork ? await readText('/etc/hosts') : undefined,
  });
  const path = join(dir, 'etc-hosts');
  await writeSmallFile(path, content, 0o644);
  return path;
}

/** A new, empty termination-log file for an instance of `c` (none without a terminationMessagePath). */
export async function terminationLogFile(rootDir: string, pod: Pod, c: Container): Promise<string | undefined> {
  if (!c.terminationMessagePath) return undefined;
  // Upstream makeUID: eight hex digits of a random uint32 (the directory makes it unique enough).
  const id = Math.trunc(Math.random() * 2 ** 32)
    .toString(16)
    .padStart(8, '0');
  const file = join(podDir(rootDir, pod.metadata.uid!), 'containers', c.name, id);
  // The directories 0750, as upstream's GenerateRunContainerOptions makes them.
  await writeSmallFile(file, '', 0o666, { chmod: true, dirMode: POD_DIR_MODE });
  return file;
}
