/**
 * The legacy container log links (upstream kuberuntime's legacyLogSymlink): for every container it
 * starts the kubelet links `/var/log/containers/<pod>_<namespace>_<container>-<containerID>.log` to
 * the container's log under the pod logs dir. Log shippers (fluent-bit, promtail, the cluster
 * logging add-ons) and upstream's NodeConformance "ContainerLogPath" test read that directory.
 * A link goes when its container is removed; the container GC also removes links left dangling
 * whose container is gone or has exited (upstream evictPodLogsDirectories).
 */
import { mkdir as mkdirCb, stat as statCb, statSync, symlink as symlinkCb } from 'node:fs';
import { rm, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { listDirSync } from '../../../lib/fs-util.js';
import { rotatedLogs } from './log-rotation.js';

/** Upstream's legacyContainerLogsDir. */
export const LEGACY_CONTAINER_LOGS_DIR = '/var/log/containers';
const SUFFIX = '.log';
/** ext4's longest file name; upstream cuts the name (before the suffix) to fit. */
const MAX_NAME = 255;

/** The link of a container: `<dir>/<pod>_<namespace>_<container>-<id>.log`, cut to 255 bytes as upstream. */
export function legacyLogSymlink(
  dir: string,
  containerId: string,
  containerName: string,
  podName: string,
  podNamespace: string,
): string {
  let name = `${podName}_${podNamespace}_${containerName}-${containerId}`;
  // Kubernetes names are ASCII, so characters are bytes.
  if (name.length > MAX_NAME - SUFFIX.length) name = name.slice(0, MAX_NAME - SUFFIX.length);
  return join(dir, name + SUFFIX);
}

/** The container ID in a link's name (after its last '-', before '.log'; at least 6 characters), as upstream. */
export function containerIdOfLink(name: string): string | undefined {
  if (!name.endsWith(SUFFIX)) return undefined;
  const id = name.slice(name.lastIndexOf('-') + 1, -SUFFIX.length);
  return id.length >= 6 ? id : undefined;
}

/**
 * Links `link` to `target` when the target exists (no dangling link is made, as upstream); false if it was not made.
 */
export async function linkContainerLog(link: string, target: string): Promise<boolean> {
  // Through the callback API, off the event loop: on a disk busy with a burst of container starts
  // a symlink waits milliseconds that the loop would spend blocked.
  const call = (f: (done: (err: NodeJS.ErrnoException | null) => void) => void) =>
    new Promise<NodeJS.ErrnoException | null>((r) => f(r));
  const missing = await call((done) => statCb(target, (err) => done(err)));
  if (missing?.code === 'ENOENT') return false;
  let err = await call((done) => symlinkCb(target, link, done));
  // The links directory is made when the first link needs it (and again if it was removed).
  if (err?.code === 'ENOENT') {
    const made = await call((done) => mkdirCb(dirname(link), { recursive: true, mode: 0o755 }, (e) => done(e)));
    err = made ?? (await call((done) => symlinkCb(target, link, done)));
  }
  if (err) throw err;
  return true;
}

/**
 * Removes what a removed container leaves on disk (upstream removeContainerLog): its log, the
 * rotated copies of it, and its link. Missing files are not an error.
 */
export async function removeContainerLogs(o: { logPath?: string; link?: string }): Promise<void> {
  if (o.logPath) for (const f of [o.logPath, ...(await rotatedLogs(o.logPath))]) await rm(f, { force: true });
  if (o.link)
    await unlink(o.link).catch((err: NodeJS.ErrnoException) =>
      err.code === 'ENOENT' ? undefined : Promise.reject(err),
    );
}

/** Whether `link`'s target is gone (ENOENT; any other error is not taken for gone). */
function isDangling(link: string): boolean {
  try {
    return statSync(link, { throwIfNoEntry: false }) === undefined;
  } catch {
    return false;
  }
}

/**
 * Removes the links in `dir` whose target is gone, unless their container exists and has not
 * exited (a running container's log may be between a rotation's rename and reopen); `alive(id)`
 * asks the runtime. Returns the removed links.
 */
export async function removeDanglingLinks(
  dir: string,
  alive: (containerId: string) => Promise<boolean>,
): Promise<string[]> {
  const removed: string[] = [];
  // Listed and stat'ed synchronously (lib/fs-util.ts): one link per container, every minute.
  for (const name of listDirSync(dir) ?? []) {
    if (!name.endsWith(SUFFIX)) continue;
    const link = `${dir}/${name}`;
    if (!isDangling(link)) continue;
    const id = containerIdOfLink(name);
    if (id && (await alive(id))) continue;
    await rm(link, { force: true });
    removed.push(link);
  }
  return removed;
}
