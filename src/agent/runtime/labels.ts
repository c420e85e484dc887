/**
 * The labels and annotations the Go kubelet puts on CRI sandboxes and containers. They are how
 * the kubelet recognises its pods in the runtime after a restart (no local database).
 */
import type { Container, Pod } from '../../api/types.js';
import { containerHash, goJsonString } from './container-hash.js';

export const PodNameLabel = 'io.kubernetes.pod.name';
export const PodNamespaceLabel = 'io.kubernetes.pod.namespace';
export const PodUidLabel = 'io.kubernetes.pod.uid';
export const ContainerNameLabel = 'io.kubernetes.container.name';
export const ContainerHashAnnotation = 'io.kubernetes.container.hash';
export const ContainerRestartCountAnnotation = 'io.kubernetes.container.restartCount';
export const ContainerTerminationMessagePathAnnotation = 'io.kubernetes.container.terminationMessagePath';
export const ContainerTerminationMessagePolicyAnnotation = 'io.kubernetes.container.terminationMessagePolicy';
export const PodTerminationGracePeriodAnnotation = 'io.kubernetes.pod.terminationGracePeriod';
export const ContainerPortsAnnotation = 'io.kubernetes.container.ports';
export const ContainerPreStopHandlerAnnotation = 'io.kubernetes.container.preStopHandler';

/** Sandbox labels: the pod's labels plus the kubelet's identity labels. */
export function sandboxLabels(pod: Pod): Record<string, string> {
  return {
    ...pod.metadata.labels,
    [PodNameLabel]: pod.metadata.name!,
    [PodNamespaceLabel]: pod.metadata.namespace!,
    [PodUidLabel]: pod.metadata.uid!,
  };
}

/** Container labels: identity only (pod labels stay on the sandbox). */
export function containerLabels(pod: Pod, c: Container): Record<string, string> {
  return {
    [PodNameLabel]: pod.metadata.name!,
    [PodNamespaceLabel]: pod.metadata.namespace!,
    [PodUidLabel]: pod.metadata.uid!,
    [ContainerNameLabel]: c.name,
  };
}

/** Container annotations the kubelet reads back. */
export function containerAnnotations(pod: Pod, c: Container, restartCount: number): Record<string, string> {
  const a: Record<string, string> = {
    [ContainerHashAnnotation]: containerHash(c),
    [ContainerRestartCountAnnotation]: String(restartCount),
    [ContainerTerminationMessagePathAnnotation]: c.terminationMessagePath ?? '/dev/termination-log',
    [ContainerTerminationMessagePolicyAnnotation]: c.terminationMessagePolicy ?? 'File',
    [PodTerminationGracePeriodAnnotation]: String(pod.spec.terminationGracePeriodSeconds ?? 30),
  };
  if (c.ports?.length) a[ContainerPortsAnnotation] = goPortsJson(c.ports);
  // Upstream reads it back to run the hook of a container whose pod spec is gone.
  const preStop = (c.lifecycle as { preStop?: LifecycleHandler } | undefined)?.preStop;
  if (preStop) a[ContainerPreStopHandlerAnnotation] = goLifecycleHandlerJson(preStop);
  return a;
}

/**
 * A container's ports as Go's encoding/json writes []v1.ContainerPort: the struct's field order
 * (name, hostPort, containerPort, protocol, hostIP) with its omitempty fields left out when empty,
 * so that the annotation is byte for byte the Go kubelet's. Pure.
 */
export function goPortsJson(ports: NonNullable<Container['ports']>): string {
  const port = (p: (typeof ports)[number]) =>
    [
      p.name ? `"name":${goJsonString(p.name)}` : '',
      p.hostPort ? `"hostPort":${p.hostPort}` : '',
      `"containerPort":${p.containerPort ?? 0}`,
      p.protocol ? `"protocol":${goJsonString(p.protocol)}` : '',
      p.hostIP ? `"hostIP":${goJsonString(p.hostIP)}` : '',
    ]
      .filter(Boolean)
      .join(',');
  return `[${ports.map((p) => `{${port(p)}}`).join(',')}]`;
}

/** A JSON object of the fields given in order, those undefined left out (Go's omitempty). Pure. */
const goObject = (fields: [string, string | undefined][]) =>
  `{${fields
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `"${k}":${v}`)
    .join(',')}}`;
const goString = (s: string | undefined) => (s ? goJsonString(s) : undefined);
const goIntOrString = (v: number | string | undefined) => (typeof v === 'number' ? String(v) : goJsonString(v ?? ''));

/** A v1.LifecycleHandler, as far as its annotation needs it. */
export interface LifecycleHandler {
  exec?: { command?: string[] };
  httpGet?: {
    path?: string;
    port?: number | string;
    host?: string;
    scheme?: string;
    httpHeaders?: { name: string; value: string }[];
  };
  tcpSocket?: { port?: number | string; host?: string };
  sleep?: { seconds?: number };
}

/** A lifecycle handler as Go's encoding/json writes v1.LifecycleHandler (field order, omitempty). Pure. */
export function goLifecycleHandlerJson(handler: LifecycleHandler): string {
  return goObject([
    [
      'exec',
      handler.exec &&
        goObject([
          [
            'command',
            handler.exec.command?.length ? `[${handler.exec.command.map(goJsonString).join(',')}]` : undefined,
          ],
        ]),
    ],
    [
      'httpGet',
      handler.httpGet &&
        goObject([
          ['path', goString(handler.httpGet.path)],
          ['port', goIntOrString(handler.httpGet.port)],
          ['host', goString(handler.httpGet.host)],
          ['scheme', goString(handler.httpGet.scheme)],
          [
            'httpHeaders',
            handler.httpGet.httpHeaders?.length
              ? `[${handler.httpGet.httpHeaders
                  .map((x) =>
                    goObject([
                      ['name', goJsonString(x.name)],
                      ['value', goJsonString(x.value)],
                    ]),
                  )
                  .join(',')}]`
              : undefined,
          ],
        ]),
    ],
    [
      'tcpSocket',
      handler.tcpSocket &&
        goObject([
          ['port', goIntOrString(handler.tcpSocket.port)],
          ['host', goString(handler.tcpSocket.host)],
        ]),
    ],
    ['sleep', handler.sleep && goObject([['seconds', String(handler.sleep.seconds ?? 0)]])],
  ]);
}
