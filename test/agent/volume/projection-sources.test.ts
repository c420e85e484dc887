/**
 * A projected volume with a source tskubelet cannot project (podCertificate, clusterTrustBundle: beta APIs off by
 * default in v1.36) fails to set up, naming the source, instead of being set up without its files.
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
  it.each([
    [
      { podCertificate: { signerName: 'example.com/s', keyType: 'ED25519', credentialBundlePath: 'b.pem' } },
      'podCertificate',
    ],
    [{ clusterTrustBundle: { signerName: 'example.com/s', path: 'ca.pem' } }, 'clusterTrustBundle'],
  ])('%o fails the volume, naming the source', async (source, kind) => {
    await expect(setUp([source])).rejects.toThrow(`${kind} projections are not supported by tskubelet yet`);
  });

  it('a source of no known kind fails it too', async () => {
    await expect(setUp([{ futureSource: { path: 'x' } }])).rejects.toThrow(
      'futureSource projections are not supported by tskubelet yet',
    );
  });
});
