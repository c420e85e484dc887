/** /configz as a Go kubelet v1.36 serves it: the running configuration, typed with its kind and apiVersion. */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { configzRoutes } from '../../src/routes/configz.js';
import { parseFlags } from '../../src/config/flags.js';
import { loadConfig } from '../../src/config/load.js';
import { schemasAsDocumentation } from '../../src/server/servers.js';

async function configz(config: Record<string, unknown>) {
  const app = Fastify({ schemaController: schemasAsDocumentation });
  await app.register(configzRoutes, { config });
  const response = await app.inject({ method: 'GET', url: '/configz' });
  await app.close();
  return { status: response.statusCode, type: response.headers['content-type'], body: JSON.parse(response.body) };
}

describe('/configz', () => {
  it("carries kind and apiVersion inside kubeletconfig, as upstream's NodeConformance spec decodes it (#136044)", async () => {
    const { kc } = await loadConfig(parseFlags(['--kubeconfig=/k', '--file-check-frequency=30s']));
    const response = await configz(kc as unknown as Record<string, unknown>);
    expect(response.status).toBe(200);
    expect(response.type).toMatch(/^application\/json/);
    expect(Object.keys(response.body)).toEqual(['kubeletconfig']);
    const served = response.body.kubeletconfig as Record<string, unknown>;
    expect([served.kind, served.apiVersion]).toEqual(['KubeletConfiguration', 'kubelet.config.k8s.io/v1beta1']);
    // The v1beta1 encoding of the values: Go durations, field names as in the file.
    expect([served.fileCheckFrequency, served.syncFrequency, served.port]).toEqual(['30s', '1m0s', 10250]);
  });

  it('types a configuration whatever the file said its version was', async () => {
    const served = (await configz({ apiVersion: 'something/else', kind: 'Other', maxPods: 7 })).body.kubeletconfig;
    expect(served).toEqual({ kind: 'KubeletConfiguration', apiVersion: 'kubelet.config.k8s.io/v1beta1', maxPods: 7 });
  });
});
