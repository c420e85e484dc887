/**
 * GET /pods: the body is exactly JSON.stringify of the v1 PodList, whichever pods changed since
 * the last request (each pod is serialized again only when the host gives a new object for it).
 */
import { describe, expect, it } from 'vitest';
import Fastify from 'fastify';
import type { Pod } from '../../src/api/types.js';
import type { KubeletHost } from '../../src/routes/host.js';
import { podsRoutes } from '../../src/routes/pods.js';
import { schemasAsDocumentation } from '../../src/server/servers.js';

const pod = (name: string, phase: string): Pod =>
  ({
    metadata: { name, namespace: 'default', uid: `uid-${name}`, labels: { 'ü"\\': 'x</script>' } },
    spec: { containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', 'echo "hi"\n'] }] },
    status: { phase, conditions: [{ type: 'Ready', status: phase === 'Running' ? 'True' : 'False' }] },
  }) as unknown as Pod;

describe('GET /pods', () => {
  it('serves the PodList as JSON.stringify would, and the changed pods after a change', async () => {
    let pods = [pod('a', 'Pending'), pod('b', 'Pending')];
    let version = 1;
    const app = Fastify({ schemaController: schemasAsDocumentation });
    await app.register(podsRoutes, {
      host: { getPods: () => pods, podsVersion: () => String(version) } as unknown as KubeletHost,
    });
    const get = async () => (await app.inject({ method: 'GET', url: '/pods' })).body;
    const expected = () => JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: pods });
    expect(await get()).toBe(expected());
    // One pod changed (a new object), one kept, one added.
    pods = [pod('a', 'Running'), pods[1], pod('c', 'Pending')];
    version++;
    expect(await get()).toBe(expected());
    expect(JSON.parse(await get()).items.map((p: Pod) => p.status?.phase)).toEqual(['Running', 'Pending', 'Pending']);
    pods = [];
    version++;
    expect(await get()).toBe(expected());
    await app.close();
  });
});
