/**
 * The image manager's counts as upstream's: each EnsureImageExists by pull policy, whether the image was there and a
 * pull was needed ("unknown" when an error came first), and each check of a present image's records by its result.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import type { ImageService } from '../../../src/cri/services.js';
import type * as cri from '../../../src/cri/types.js';
import { ImageManager, type ImageRequestCounters } from '../../../src/agent/images/image-manager.js';
import { PullRecords } from '../../../src/agent/images/pull-records.js';
import {
  registerImageRequestMetrics,
  registerPullRecordGauges,
} from '../../../src/agent/metrics/image-pull-metrics.js';
import { Registry } from '../../../src/agent/metrics/registry.js';
import { FakeClock } from '../../../src/lib/clock.js';
import { KubeletError } from '../../../src/lib/errors.js';

const root = mkdtempSync(join(tmpdir(), 'tsk-image-requests-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A runtime holding `present`; its ImageStatus fails for "broken:1". */
function runtimeWith(present: string[]): ImageService {
  const images = new Set(present);
  return {
    listImages: async () => [],
    imageStatus: async (spec: cri.ImageSpec) => {
      if (spec.image === 'broken:1') throw new KubeletError('Unavailable', 'runtime is down');
      return images.has(spec.image) ? ({ id: `sha256:${spec.image}`, size: 1 } as unknown as cri.Image) : null;
    },
    pullImage: async (spec: cri.ImageSpec) => {
      images.add(spec.image);
      return `sha256:${spec.image}`;
    },
    removeImage: async () => {},
    imageFsInfo: async () => ({ image_filesystems: [] }),
  };
}

const ensure = (m: ImageManager, image: string, imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never') => {
  const pod: Pod = {
    metadata: { name: 'p', namespace: 'd', uid: `uid-${image}-${imagePullPolicy}` },
    spec: { containers: [{ name: 'c', image, imagePullPolicy }] },
  };
  return m.ensureImageExists(pod, pod.spec.containers[0]);
};

describe('the image manager counts', () => {
  it("each request as upstream's kubelet_image_manager_ensure_image_requests_total", async () => {
    const registry = new Registry();
    const requests = registerImageRequestMetrics(registry);
    const m = new ImageManager({
      images: runtimeWith(['cached:1']),
      clock: new FakeClock(),
      serializeImagePulls: false,
      requests,
    });
    await ensure(m, 'cached:1', 'IfNotPresent');
    await ensure(m, 'cached:1', 'IfNotPresent');
    await ensure(m, 'new:1', 'IfNotPresent');
    await ensure(m, 'cached:1', 'Always');
    await ensure(m, 'absent:1', 'Never');
    await ensure(m, 'broken:1', 'IfNotPresent');
    const text = registry.text();
    for (const line of [
      'kubelet_image_manager_ensure_image_requests_total{present_locally="true",pull_policy="ifnotpresent",pull_required="false"} 2',
      'kubelet_image_manager_ensure_image_requests_total{present_locally="false",pull_policy="ifnotpresent",pull_required="true"} 1',
      'kubelet_image_manager_ensure_image_requests_total{present_locally="true",pull_policy="always",pull_required="true"} 1',
      'kubelet_image_manager_ensure_image_requests_total{present_locally="false",pull_policy="never",pull_required="true"} 1',
      'kubelet_image_manager_ensure_image_requests_total{present_locally="unknown",pull_policy="ifnotpresent",pull_required="unknown"} 1',
    ])
      expect(text).toContain(line);
  });

  it('each check of a present image by its result, and an unreadable record store as an error and a pull', async () => {
    const checked: string[] = [];
    const requests: ImageRequestCounters = { ensured: () => {}, mustPullChecked: (r) => void checked.push(r) };
    const records = new PullRecords(root);
    const manager = (policy: 'AlwaysVerify' | 'NeverVerifyPreloadedImages', store = records) =>
      new ImageManager({
        images: runtimeWith(['preloaded:1']),
        clock: new FakeClock(),
        serializeImagePulls: false,
        requests,
        pullRecords: { records: store, policy, allowlist: [] },
      });
    // Preloaded (no record): allowed by the default policy; under AlwaysVerify the pod must authenticate.
    expect(await ensure(manager('NeverVerifyPreloadedImages'), 'preloaded:1', 'IfNotPresent')).toMatchObject({
      ok: true,
      pulled: false,
    });
    expect(await ensure(manager('AlwaysVerify'), 'preloaded:1', 'IfNotPresent')).toMatchObject({ pulled: true });
    // The pull left its record and no intent, which the on-disk gauges count.
    const registry = new Registry();
    registerPullRecordGauges(registry, () => records.countsOnDisk());
    expect(registry.text()).toMatch(/^kubelet_imagemanager_ondisk_pullintents 0$/m);
    expect(registry.text()).toMatch(/^kubelet_imagemanager_ondisk_pulledrecords 1$/m);
    const broken = Object.assign(Object.create(records) as PullRecords, {
      record: async () => {
        throw new Error('EIO');
      },
    });
    expect(await ensure(manager('AlwaysVerify', broken), 'preloaded:1', 'IfNotPresent')).toMatchObject({
      pulled: true,
    });
    expect(checked).toEqual(['credentialPolicyAllowed', 'mustAuthenticate', 'error']);
  });
});
