/**
 * imageServiceEndpoint: the ImageService is called on its own endpoint, the RuntimeService on the runtime's (two real
 * gRPC servers).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { afterAll, describe, expect, it } from 'vitest';
import { composeRuntime } from '../../src/agent/compose-runtime.js';
import { KubeletMetrics } from '../../src/agent/metrics/kubelet-metrics.js';
import type { ImageService, RuntimeService } from '../../src/cri/services.js';
import type * as cri from '../../src/cri/types.js';
import { serveCriWithGrpcJs } from '../fixtures/grpc-js-cri-server.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-imgep-'));
const servers: grpc.Server[] = [];
afterAll(() => {
  for (const s of servers) s.forceShutdown();
  rmSync(dir, { recursive: true, force: true });
});

/** A CRI server named `who`: Version and ListImages say which one answered. */
async function serve(who: string): Promise<string> {
  const rt = {
    version: async () => ({ version: '0.1.0', runtime_name: who, runtime_version: '1', runtime_api_version: 'v1' }),
  } as unknown as RuntimeService;
  const img = {
    listImages: async () => [{ id: `${who}-image`, repo_tags: [], repo_digests: [], size: 1 } as unknown as cri.Image],
  } as unknown as ImageService;
  const endpoint = `unix://${join(dir, `${who}.sock`)}`;
  servers.push(await serveCriWithGrpcJs(endpoint, rt, img));
  return endpoint;
}

describe('imageServiceEndpoint', () => {
  it('sends image calls to the image endpoint and runtime calls to the runtime endpoint; unset, both go to the runtime', async () => {
    const [runtimeEp, imageEp] = [await serve('runtime'), await serve('images')];
    const metrics = new KubeletMetrics({ nodeName: 'n', running: { pods: () => 0, containers: () => ({}) } });
    const split = composeRuntime(
      { containerRuntimeEndpoint: runtimeEp, imageServiceEndpoint: imageEp },
      { metrics },
    ).runtime;
    expect((await split.runtime.version('v1')).runtime_name).toBe('runtime');
    expect((await split.images.listImages()).map((i) => i.id)).toEqual(['images-image']);
    const one = composeRuntime({ containerRuntimeEndpoint: runtimeEp }, { metrics }).runtime;
    expect((await one.images.listImages()).map((i) => i.id)).toEqual(['runtime-image']);
    split.close?.();
    one.close?.();
  });
});
