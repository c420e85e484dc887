/** The ConfigMaps and Secrets a pod names, as upstream's VisitPodConfigmapNames and VisitPodSecretNames find them. */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { referencedConfigMaps, referencedSecrets } from '../../../src/agent/objects/referenced-objects.js';

const pod = {
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
  spec: {
    imagePullSecrets: [{ name: 'pull' }, {}],
    initContainers: [{ name: 'init', image: 'i', envFrom: [{ configMapRef: { name: 'init-env' } }] }],
    containers: [
      {
        name: 'main',
        image: 'i',
        env: [
          { name: 'A', valueFrom: { configMapKeyRef: { name: 'settings', key: 'a' } } },
          { name: 'B', valueFrom: { secretKeyRef: { name: 'password', key: 'b' } } },
          { name: 'C', value: 'plain' },
          { name: 'D', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        ],
        envFrom: [{ secretRef: { name: 'all-secrets' } }, { configMapRef: { name: 'settings' } }],
      },
    ],
    ephemeralContainers: [
      { name: 'debug', image: 'i', env: [{ name: 'E', valueFrom: { secretKeyRef: { name: 'debug', key: 'e' } } }] },
    ],
    volumes: [
      { name: 'cm', configMap: { name: 'files' } },
      { name: 'sec', secret: { secretName: 'certs' } },
      { name: 'az', azureFile: { secretName: 'azure', shareName: 's' } },
      { name: 'rbd', rbd: { monitors: ['m'], image: 'x', secretRef: { name: 'ceph' } } },
      { name: 'csi', csi: { driver: 'd', nodePublishSecretRef: { name: 'csi-publish' } } },
      {
        name: 'projected',
        projected: {
          sources: [
            { configMap: { name: 'kube-root-ca.crt' } },
            { secret: { name: 'projected-secret' } },
            { serviceAccountToken: { path: 'token' } },
            { downwardAPI: { items: [] } },
          ],
        },
      },
      { name: 'scratch', emptyDir: {} },
    ],
  },
} as unknown as Pod;

describe('referenced objects', () => {
  it('finds every ConfigMap in env, envFrom, configMap and projected volumes of all containers, each once', () => {
    expect(referencedConfigMaps(pod).sort()).toEqual(['files', 'init-env', 'kube-root-ca.crt', 'settings']);
  });

  it('finds every Secret: pull secrets, env, envFrom, secret, azureFile, secretRef, CSI and projected volumes', () => {
    expect(referencedSecrets(pod).sort()).toEqual([
      'all-secrets',
      'azure',
      'ceph',
      'certs',
      'csi-publish',
      'debug',
      'password',
      'projected-secret',
      'pull',
    ]);
  });

  it('a pod that names nothing refers to nothing', () => {
    const bare = { metadata: { name: 'b' }, spec: { containers: [{ name: 'c', image: 'i' }] } } as unknown as Pod;
    expect([referencedConfigMaps(bare), referencedSecrets(bare)]).toEqual([[], []]);
  });
});
