/**
 * API defaulting for pods that do not come from the apiserver (static pods), as the apiserver's
 * defaulting functions for core/v1 would apply them.
 */
import type { Container, Pod } from './types.js';

/** Upstream default image pull policy: Always for `:latest` or untagged images, else IfNotPresent. */
export function defaultPullPolicy(image: string | undefined): 'Always' | 'IfNotPresent' {
  if (!image) return 'IfNotPresent';
  if (image.includes('@')) return 'IfNotPresent';
  const lastSlash = image.lastIndexOf('/');
  const colon = image.indexOf(':', lastSlash + 1);
  if (colon < 0) return 'Always';
  return image.slice(colon + 1) === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultContainer(c: Container): Container {
  return {
    ...c,
    imagePullPolicy: c.imagePullPolicy ?? defaultPullPolicy(c.image),
    terminationMessagePath: c.terminationMessagePath ?? '/dev/termination-log',
    terminationMessagePolicy: c.terminationMessagePolicy ?? 'File',
    resources: c.resources ?? {},
    ports: c.ports?.map((p) => ({ ...p, protocol: p.protocol ?? 'TCP' })),
  };
}

/** Returns a copy of `pod` with core/v1 defaults applied (never mutates its input). */
export function applyPodDefaults(pod: Pod): Pod {
  const spec = pod.spec;
  const out: Pod = {
    ...pod,
    apiVersion: pod.apiVersion ?? 'v1',
    kind: pod.kind ?? 'Pod',
    metadata: { ...pod.metadata, namespace: pod.metadata.namespace || 'default' },
    spec: {
      ...spec,
      containers: spec.containers.map(defaultContainer),
      initContainers: spec.initContainers?.map(defaultContainer),
      restartPolicy: spec.restartPolicy ?? 'Always',
      terminationGracePeriodSeconds: spec.terminationGracePeriodSeconds ?? 30,
      dnsPolicy: spec.dnsPolicy ?? 'ClusterFirst',
      schedulerName: spec.schedulerName ?? 'default-scheduler',
      securityContext: spec.securityContext ?? {},
      enableServiceLinks: spec.enableServiceLinks ?? true,
      priority: spec.priority ?? 0,
    },
  };
  if (!out.spec.initContainers) delete out.spec.initContainers;
  for (const c of [...out.spec.containers, ...(out.spec.initContainers ?? [])]) if (!c.ports) delete c.ports;
  return out;
}
