/**
 * The pod manager: the desired pods, indexed by UID and by full name, and the mirror pods (the
 * apiserver's copies of static pods, by full name). Single writer (the sync loop); readers get
 * copies of the index, never the maps.
 */
import { podFullName, type Pod, type PodStatus } from '../../api/types.js';
import { isStaticPod } from '../podconfig/types.js';

/** Desired pods. All methods are synchronous and O(1) except `getPods`. */
export class PodManager {
  private readonly byUid = new Map<string, Pod>();
  private readonly byFullName = new Map<string, string>();
  private readonly mirrors = new Map<string, Pod>();
  private gen = 0;

  /** Adds or replaces a pod. */
  addOrUpdate(pod: Pod): void {
    const uid = pod.metadata.uid!;
    const old = this.byUid.get(uid);
    if (old) this.byFullName.delete(podFullName(old));
    this.byUid.set(uid, pod);
    this.byFullName.set(podFullName(pod), uid);
    this.gen++;
  }

  /** Forgets a pod. */
  remove(pod: Pod): void {
    const uid = pod.metadata.uid!;
    const cur = this.byUid.get(uid);
    if (!cur) return;
    this.byUid.delete(uid);
    this.gen++;
    const key = podFullName(cur);
    if (this.byFullName.get(key) === uid) this.byFullName.delete(key);
  }

  /** A number that changes whenever the set of pods or any pod changes. */
  get generation(): number {
    return this.gen;
  }
  /** Every desired pod. */
  getPods(): Pod[] {
    return [...this.byUid.values()];
  }
  /** The pod with this UID. */
  getPodByUid(uid: string): Pod | undefined {
    return this.byUid.get(uid);
  }
  /** The pod with this namespace and name. */
  getPodByName(namespace: string, name: string): Pod | undefined {
    const uid = this.byFullName.get(`${name}_${namespace}`);
    return uid ? this.byUid.get(uid) : undefined;
  }

  /** Records a mirror pod (never run; its static pod is). */
  setMirror(pod: Pod): void {
    this.mirrors.set(podFullName(pod), pod);
  }
  /** Forgets a mirror pod (only when it is the one stored, by UID). */
  removeMirror(pod: Pod): void {
    if (this.mirrors.get(podFullName(pod))?.metadata.uid === pod.metadata.uid) this.mirrors.delete(podFullName(pod));
  }
  /** The mirror pod of a static pod, if the apiserver has one. */
  getMirrorOf(pod: Pod): Pod | undefined {
    return this.mirrors.get(podFullName(pod));
  }
  /** The status the apiserver has of a pod: its own, or for a static pod its mirror pod's (upstream's old status). */
  apiStatusOf(pod: Pod): PodStatus | undefined {
    return isStaticPod(pod) ? this.getMirrorOf(pod)?.status : pod.status;
  }
  /** Mirror pods whose static pod is gone. */
  orphanedMirrors(): Pod[] {
    return [...this.mirrors.entries()].filter(([k]) => !this.byFullName.has(k)).map(([, p]) => p);
  }
}
