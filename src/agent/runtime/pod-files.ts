/**
 * The files the kubelet keeps for a pod under `<root-dir>/pods/<uid>` (upstream getPodDir): the
 * managed /etc/hosts and one termination-log file per container instance (mounted at the
 * container's terminationMessagePath, world-writable so any user in the container can write it).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Container, Pod } from '../../api/types.js';
import { hostsFileContent } from './hosts-file.js';
import { podHostNameAndDomain } from './pod-hostname.js';

/** The pod's directory under the root dir (upstream getPodDir). */
export function podDir(rootDir: string, uid: string): string {
  return join(rootDir, 'pods', uid);
}

/*
 * The files here are small and local: they are read and written synchronously. Each pod start
 * makes a few of these calls, and through fs.promises (a FileHandle, a thread-pool round trip and
 * promises per step, under V8's interpreter) they cost the kubelet ~5 ms of CPU per pod.
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

/** Writes the pod's managed hosts file (the node's own entries for a hostNetwork pod); returns its path. */
export async function writeHostsFile(pod: Pod, podIP: string, node: { rootDir: string; clusterDomain: string }): Promise<string> {
  const dir = podDir(node.rootDir, pod.metadata.uid!);
  // The sandbox exists, so the name was valid when it was made (and the fields cannot change).
  const name = podHostNameAndDomain(pod, node.clusterDomain);
  const content = hostsFileContent(pod, {
    podIPs: [podIP],
    hostname: name.ok ? name.hostname : pod.metadata.name!,
    domain: name.ok ? name.domain : '',
    nodeHostsFile: pod.spec.hostNetwork ? await readText('/etc/hosts') : undefined,
  });
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'etc-hosts');
  writeFileSync(path, content, { mode: 0o644 });
  return path;
}

/** A new, empty termination-log file for an instance of `c` (none without a terminationMessagePath). */
export async function terminationLogFile(rootDir: string, pod: Pod, c: Container): Promise<string | undefined> {
  if (!c.terminationMessagePath) return undefined;
  const dir = join(podDir(rootDir, pod.metadata.uid!), 'containers', c.name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, randomBytes(4).toString('hex'));
  writeFileSync(file, '');
  chmodSync(file, 0o666);
  return file;
}
