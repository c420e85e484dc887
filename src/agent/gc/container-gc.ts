/**
 * Which dead container instances to remove (pure). Per container name the kubelet keeps the
 * current instance and the previous one (for `kubectl logs --previous`); older exited instances
 * go (upstream MaxPerPodContainer = 1 dead instance).
 */
import type { PodRuntimeStatus, RuntimeContainer } from '../runtime/pod-runtime-status.js';

/** Exited instances beyond the newest `keepDead` exited ones, per name (the newest instance is never chosen). */
export function deadContainersToRemove(status: PodRuntimeStatus, keepDead = 1): RuntimeContainer[] {
  const out: RuntimeContainer[] = [];
  const names = new Set(status.containers.map((c) => c.name));
  for (const name of names) {
    const inst = status.containers.filter((c) => c.name === name);
    const dead = inst.slice(1).filter((c) => c.state === 'exited');
    const keepCurrentDead = inst[0]?.state === 'exited' ? 1 : 0;
    out.push(...dead.slice(Math.max(0, keepDead - keepCurrentDead)));
  }
  return out;
}
