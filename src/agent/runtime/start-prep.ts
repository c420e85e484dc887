/**
 * What a pod's container starts need that does not depend on its sandbox, begun while the sandbox
 * is made (once RunPodSandbox is sent: begun before it, its file writes queued in the thread pool
 * ahead of the sandbox's own directory) instead of after it: the managed /etc/hosts when the pod's IP is already known (a
 * hostNetwork pod, or a sandbox that exists), the API objects the containers refer to, and per
 * container whether its image is present (ImageStatus), its termination-log file and its restart
 * count from the logs.
 *
 * Each of these waits on the disk, the runtime or the apiserver: on a disk busy with a burst of
 * container starts a file create waits 10-80 ms, and containerd answers ImageStatus in 20-200 ms
 * (measured, 10 and 30 pods at once: a hosts file p50 40 ms, a termination-log file p50 22 ms,
 * ImageStatus p50 40 ms). After the sandbox they stood between each pod's RunPodSandbox and its
 * first CreateContainer, where the CRI calls made directly have nothing. Upstream does them after
 * the sandbox (EnsureImageExists, then generateContainerConfig); what they make and find is the
 * same either way, and a pull, when one is needed, still comes after the sandbox. A sandbox that
 * fails leaves no termination-log file behind (`discard`).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Container, Pod } from '../../api/types.js';
import { messageOf } from '../../lib/errors.js';
import type { ImageInspection } from '../images/image-manager.js';
import type { PullSecret } from '../images/keyring.js';
import type { ContainerToStart } from './compute-pod-actions.js';
import type { PodObjects } from './env.js';
import { restartCountFromLogs } from './logs/restart-count-from-logs.js';
import { terminationLogFile, writeHostsFile } from './pod-files.js';

/** A container's termination-log file (undefined: it has no terminationMessagePath), or why it could not be made. */
export type TermLog = { file: string | undefined } | { file: undefined; err: unknown };

/** One container's part. */
export interface ContainerPrep {
  /** ImageStatus's answer for its image. */
  image: Promise<ImageInspection>;
  termLog: Promise<TermLog>;
  restartCount: Promise<number>;
}

export interface StartPrep {
  /** The hosts file's path, when it was begun here (the pod's IP was known). */
  hostsFile?: Promise<string>;
  /** The pod's objects, or why they could not be read (CreateContainerConfigError). */
  objects: Promise<{ objects?: PodObjects & { pullSecrets: PullSecret[] }; error?: string }>;
  /** Per container to start (the plan's own entries). */
  containers: ReadonlyMap<ContainerToStart, ContainerPrep>;
  /** The sandbox failed: waits for every part and removes the termination-log files. */
  discard(): Promise<void>;
}

/** What asks whether an image is present (the image manager). */
export interface ImageInspector {
  inspect(c: Container): Promise<ImageInspection>;
}

/** A container's part, begun now. */
export function prepareContainer(
  rootDir: string,
  pod: Pod,
  c: Container,
  s: ContainerToStart,
  o: { logDirectory: string; images: ImageInspector },
): ContainerPrep {
  return {
    image: o.images.inspect(c),
    termLog: terminationLogFile(rootDir, pod, c).then(
      (file) => ({ file }),
      (err: unknown) => ({ file: undefined, err }),
    ),
    restartCount: s.restartCount === 0 ? restartCountFromLogs(join(o.logDirectory, c.name)) : Promise.resolve(s.restartCount),
  };
}

/** Begins every part for `start`'s containers (`specOf` finds each one's spec; one without is skipped). */
export function prepareStarts(
  pod: Pod,
  start: readonly ContainerToStart[],
  o: {
    rootDir: string;
    clusterDomain: string;
    logDirectory: string;
    /** The pod's IP when it is known before the sandbox. */
    knownIP?: string;
    specOf(s: ContainerToStart): Container | undefined;
    images: ImageInspector;
    objects?: { forPod(pod: Pod): Promise<PodObjects & { pullSecrets: PullSecret[] }> };
  },
): StartPrep {
  const hostsFile = o.knownIP ? writeHostsFile(pod, o.knownIP, o) : undefined;
  // Awaited by the start, or by discard: never a rejection nobody sees.
  hostsFile?.catch(() => undefined);
  const objects = (async () => {
    try {
      return { objects: await o.objects?.forPod(pod) };
    } catch (err) {
      return { error: messageOf(err) };
    }
  })();
  const containers = new Map<ContainerToStart, ContainerPrep>();
  for (const s of start) {
    const c = o.specOf(s);
    if (c) containers.set(s, prepareContainer(o.rootDir, pod, c, s, o));
  }
  return {
    hostsFile,
    objects,
    containers,
    async discard() {
      await Promise.all([
        hostsFile?.catch(() => undefined),
        objects,
        ...[...containers.values()].map(async (p) => {
          const log = await p.termLog;
          if (log.file) await rm(log.file, { force: true }).catch(() => {});
          await Promise.all([p.restartCount, p.image]);
        }),
      ]);
    },
  };
}
