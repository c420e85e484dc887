/** /configz as a Go kubelet v1.36 serves it: the running configuration, typed with its kind and apiVersion. */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { configzRoutes } from '../../src/routes/configz.js';
import { parseFlags } from '../../src/config/flags.js';
import { loadConfig, type ResolvedConfig } from '../../src/config/load.js';
import { configzView } from '../../src/config/configz-view.js';
import { schemasAsDocumentation } from '../../src/server/servers.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

async function configz(config: Record<string, unknown>) {
  const app = Fastify({ schemaController: schemasAsDocumentation });
  await app.register(configzRoutes, { config });
  const response = await app.inject({ method: 'GET', url: '/configz' });
  await app.close();
  return { status: response.statusCode, type: response.headers['content-type'], body: JSON.parse(response.body) };
}

/** /configz of a loaded configuration, as main serves it. */
async function configzOf(resolved: ResolvedConfig) {
  const { kc, acceptedOnly, verbosity, loggingFormat } = resolved;
  return configz(
    configzView({ config: kc as unknown as Record<string, unknown>, acceptedOnly, verbosity, loggingFormat }),
  );
}

async function withFile<T>(content: Record<string, unknown>, use: (path: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'tsk-configz-'));
  try {
    const path = join(dir, 'config.json');
    writeFileSync(path, JSON.stringify(content));
    return await use(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('/configz', () => {
  it("carries kind and apiVersion inside kubeletconfig, as upstream's NodeConformance spec decodes it (#136044)", async () => {
    const response = await configzOf(await loadConfig(parseFlags(['--kubeconfig=/k', '--file-check-frequency=30s'])));
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

  it('leaves out the zero values of the fields Go encodes with omitempty and no pointer, and keeps the others', async () => {
    const resolved = await loadConfig(
      parseFlags(['--kubeconfig=/k', '--fail-swap-on=false', '--container-runtime-endpoint=', '--read-only-port=0']),
    );
    const served = (await configzOf(resolved)).body.kubeletconfig as Record<string, unknown>;
    // Plain fields at their zero value are not there, as in upstream's /configz.
    for (const key of ['runOnce', 'rotateCertificates', 'podsPerCore', 'readOnlyPort', 'clusterDNS', 'evictionSoft'])
      expect(served, key).not.toHaveProperty(key);
    expect((served.authentication as { x509: unknown }).x509).toEqual({});
    // Pointer fields and structs are there whatever their value; containerRuntimeEndpoint has no omitempty.
    expect([served.failSwapOn, served.seccompDefault, served.containerRuntimeEndpoint]).toEqual([false, false, '']);
    expect(served.memorySwap).toEqual({});
    expect(served.shutdownGracePeriod).toBe('0s');
  });

  it("shows the fields accepted without effect as a Go kubelet does: upstream's defaults, else the file's value", async () => {
    const defaults = (await configzOf(await loadConfig(parseFlags(['--kubeconfig=/k', '--v=3'])))).body.kubeletconfig;
    expect(defaults).toMatchObject({
      hairpinMode: 'promiscuous-bridge',
      contentType: 'application/vnd.kubernetes.protobuf',
      enableControllerAttachDetach: true,
      makeIPTablesUtilChains: true,
      iptablesMasqueradeBit: 14,
      iptablesDropBit: 15,
      volumePluginDir: '/usr/libexec/kubernetes/kubelet-plugins/volume/exec/',
      memoryThrottlingFactor: 0.9,
      memoryReservationPolicy: 'None',
      logging: {
        format: 'text',
        flushFrequency: '5s',
        verbosity: 3,
        options: { text: { infoBufferSize: '0' }, json: { infoBufferSize: '0' } },
      },
    });
    const file = { hairpinMode: 'hairpin-veth', logging: { format: 'json', flushFrequency: '1s', verbosity: 2 } };
    const given = await withFile(file, async (path) =>
      configzOf(await loadConfig(parseFlags(['--kubeconfig=/k', `--config=${path}`]))),
    );
    expect(given.body.kubeletconfig).toMatchObject({
      hairpinMode: 'hairpin-veth',
      enableControllerAttachDetach: true,
      logging: { format: 'json', flushFrequency: '1s', verbosity: 2 },
    });
  });

  // The upstream node e2e harness writes what /configz served back as the kubelet's config file for its restarts.
  it('reads back as the same configuration, and serves the same again', async () => {
    const flags = ['--kubeconfig=/k', '--fail-swap-on=false', '--max-pods=30', '--cluster-dns=10.96.0.10', '--v=4'];
    const first = await loadConfig(parseFlags(flags));
    const served = (await configzOf(first)).body.kubeletconfig;
    const again = await withFile(served, (path) => loadConfig(parseFlags(['--kubeconfig=/k', `--config=${path}`])));
    expect(again.warnings).toEqual([]);
    const { apiVersion, kind, ...read } = again.kc as unknown as Record<string, unknown>;
    expect([apiVersion, kind]).toEqual(['kubelet.config.k8s.io/v1beta1', 'KubeletConfiguration']);
    expect(read).toEqual(first.kc);
    expect(again.verbosity).toBe(4);
    expect((await configzOf(again)).body.kubeletconfig).toEqual(served);
  });
});
