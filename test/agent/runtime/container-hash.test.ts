/**
 * io.kubernetes.container.hash as the Go kubelet v1.36 writes it: the hashes a Go kubelet v1.36.2
 * put on its containers (test/fixtures/go-kubelet-1.36, copied from ../shared/fixtures) are what tskubelet computes for
 * the same containers, so a swap of kubelets does not see them as changed (regression: every
 * container was restarted, "Container web definition changed").
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Container, Pod } from '../../../src/api/types.js';
import { fnv32a } from '../../../src/lib/fnv32a.js';
import {
  containerHash,
  goJsonString,
  legacyContainerHash,
  sameContainerSpec,
} from '../../../src/agent/runtime/container-hash.js';
import {
  containerAnnotations,
  containerLabels,
  goLifecycleHandlerJson,
  sandboxLabels,
} from '../../../src/agent/runtime/labels.js';

const fixtures = join(import.meta.dirname, '..', '..', 'fixtures', 'go-kubelet-1.36');
const pods = (JSON.parse(readFileSync(join(fixtures, 'pods.json'), 'utf8')) as { items: Pod[] }).items;
const criContainers = JSON.parse(readFileSync(join(fixtures, 'cri-containers.json'), 'utf8')) as {
  Labels: Record<string, string>;
  CRI: { config?: { metadata: { name: string }; annotations?: Record<string, string> } };
}[];

describe('containerHash', () => {
  it('is the hash the Go kubelet v1.36.2 wrote for every container of the fixtures', () => {
    const written = criContainers
      .filter((x) => x.CRI.config?.annotations?.['io.kubernetes.container.hash'])
      .map((x) => ({
        pod: x.Labels['io.kubernetes.pod.name'],
        name: x.CRI.config!.metadata.name,
        hash: x.CRI.config!.annotations!['io.kubernetes.container.hash'],
      }));
    expect(written.length).toBeGreaterThanOrEqual(5);
    for (const w of written) {
      const pod = pods.find((p) => p.metadata.name === w.pod)!;
      const container = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find(
        (c) => c.name === w.name,
      ) as Container;
      expect({ ...w, hash: containerHash(container) }).toEqual(w);
    }
  });

  it('covers the name and the image only (the fields whose change replaces a container)', () => {
    const base: Container = { name: 'main', image: 'busybox' } as Container;
    expect(containerHash({ ...base, command: ['sleep', '1'] } as Container)).toBe(containerHash(base));
    expect(containerHash({ ...base, image: 'busybox:1.37' })).not.toBe(containerHash(base));
    expect(containerHash({ ...base, name: 'other' })).not.toBe(containerHash(base));
  });

  it('still recognises the hash tskubelet wrote before (no restart on an upgrade), and nothing else', () => {
    const c = { name: 'main', image: 'busybox', command: ['sleep', '1'] } as Container;
    expect(sameContainerSpec(c, containerHash(c))).toBe(true);
    expect(sameContainerSpec(c, legacyContainerHash(c))).toBe(true);
    expect(sameContainerSpec(c, legacyContainerHash({ ...c, command: ['sleep', '2'] }))).toBe(false);
    expect(sameContainerSpec(c, containerHash({ ...c, image: 'busybox:2' }))).toBe(false);
  });

  it("writes strings as Go's encoding/json and hashes with FNV-1a", () => {
    expect(goJsonString('a<b>&c\u2028')).toBe('"a\\u003cb\\u003e\\u0026c\\u2028"');
    expect(fnv32a(Buffer.from(''))).toBe(0x811c9dc5);
    expect(fnv32a(Buffer.from('a'))).toBe(0xe40c292c);
  });
});

describe('the labels and annotations tskubelet writes are those a Go kubelet v1.36.2 writes', () => {
  const configs = criContainers.map(
    (x) =>
      x.CRI.config as
        | {
            metadata: { name: string };
            image?: unknown;
            labels?: Record<string, string>;
            annotations?: Record<string, string>;
          }
        | undefined,
  );
  it('on every container of the fixtures, value for value (a Go kubelet taking the node over finds its own)', () => {
    let compared = 0;
    for (const [i, x] of criContainers.entries()) {
      const config = configs[i];
      if (!config?.image) continue;
      const pod = pods.find((p) => p.metadata.name === x.Labels['io.kubernetes.pod.name'])!;
      const container = [...(pod.spec.initContainers ?? []), ...pod.spec.containers].find(
        (c) => c.name === config.metadata.name,
      ) as Container;
      const restartCount = Number(config.annotations!['io.kubernetes.container.restartCount']);
      expect(containerLabels(pod, container)).toEqual(config.labels);
      expect(containerAnnotations(pod, container, restartCount)).toEqual(config.annotations);
      compared++;
    }
    expect(compared).toBeGreaterThanOrEqual(5);
  });

  it('writes lifecycle handlers as Go does', () => {
    expect(goLifecycleHandlerJson({ sleep: { seconds: 1 } } as never)).toBe('{"sleep":{"seconds":1}}');
    expect(goLifecycleHandlerJson({ exec: { command: ['sh', '-c', 'a<b'] } } as never)).toBe(
      '{"exec":{"command":["sh","-c","a\\u003cb"]}}',
    );
    expect(goLifecycleHandlerJson({ httpGet: { port: 'http', path: '/stop?x=1', scheme: 'HTTP' } } as never)).toBe(
      '{"httpGet":{"path":"/stop?x=1","port":"http","scheme":"HTTP"}}',
    );
  });

  it('on every sandbox of the fixtures: its labels', () => {
    for (const config of configs) {
      if (!config || config.image) continue;
      const meta = config.metadata as { name: string; namespace: string };
      const pod = pods.find((p) => p.metadata.name === meta.name && p.metadata.namespace === meta.namespace)!;
      expect(sandboxLabels(pod)).toEqual(config.labels);
    }
  });
});
