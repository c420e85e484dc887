/**
 * A projected volume with a source of a kind tskubelet does not know fails to set up, naming the source, instead of
 * being set up without its files; so do clusterTrustBundle and podCertificate sources where there is nothing to read
 * them from (standalone, or their gates off), with the messages of upstream's no-op managers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { projectedPlugin } from '../../../src/agent/volume/plugins/projection.js';
import type { SetUpContext, VolumeHost } from '../../../src/agent/volume/types.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-projsrc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const setUp = (sources: object[]) =>
  projectedPlugin.setUp({
    pod: { metadata: { name: 'p', namespace: 'default', uid: 'u1' }, spec: { containers: [] } },
    volume: { name: 'creds', projected: { sources } },
    dir: join(dir, 'volumes', 'kubernetes.io~projected', 'creds'),
    volumesDir: join(dir, 'volumes'),
    host: {} as VolumeHost,
  } as SetUpContext);

describe('projected sources tskubelet cannot project', () => {
  it("a podCertificate source without a certificate manager fails as upstream's no-op manager", async () => {
    await expect(
      setUp([{ podCertificate: { signerName: 'example.com/s', keyType: 'ED25519', credentialBundlePath: 'b.pem' } }]),
    ).rejects.toThrow('unimplemented');
  });

  it("a clusterTrustBundle source without ClusterTrustBundles to read fails as upstream's noop manager", async () => {
    await expect(setUp([{ clusterTrustBundle: { signerName: 'example.com/s', path: 'ca.pem' } }])).rejects.toThrow(
      'ClusterTrustBundle projection is not supported in static kubelet mode',
    );
    await expect(setUp([{ clusterTrustBundle: { path: 'ca.pem' } }])).rejects.toThrow(
      'ClusterTrustBundle projection requires either name or signerName to be set',
    );
  });

  it('a source of no known kind fails it too', async () => {
    await expect(setUp([{ futureSource: { path: 'x' } }])).rejects.toThrow(
      'futureSource projections are not supported by tskubelet yet',
    );
  });
});
