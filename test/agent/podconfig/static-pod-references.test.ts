/** Static pods that refer to API objects are refused, naming the resource as upstream HasAPIObjectReference does. */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { staticPodAPIReference } from '../../../src/agent/podconfig/static-pod-references.js';

const pod = (spec: Record<string, unknown>, container: Record<string, unknown> = {}): Pod =>
  ({
    metadata: { name: 'p' },
    spec: { containers: [{ name: 'c', image: 'busybox', ...container }], ...spec },
  }) as unknown as Pod;

describe('staticPodAPIReference (PreventStaticPodAPIReferences)', () => {
  const cases: [string, Pod, string | undefined][] = [
    [
      'nothing from the API',
      pod({
        volumes: [
          { name: 'h', hostPath: { path: '/x' } },
          { name: 'e', emptyDir: {} },
        ],
      }),
      undefined,
    ],
    [
      'a downward API projection',
      pod({ volumes: [{ name: 'd', projected: { sources: [{ downwardAPI: {} }] } }] }),
      undefined,
    ],
    ['a service account', pod({ serviceAccountName: 'sa' }), 'serviceaccounts'],
    ['an image pull secret', pod({ imagePullSecrets: [{ name: 'reg' }] }), 'secrets'],
    [
      'a secret env var',
      pod({}, { env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] }),
      'secrets',
    ],
    ['envFrom a secret', pod({}, { envFrom: [{ secretRef: { name: 's' } }] }), 'secrets'],
    ['a secret volume', pod({ volumes: [{ name: 's', secret: { secretName: 's' } }] }), 'secrets'],
    [
      'a CSI volume with a publish secret',
      pod({ volumes: [{ name: 'v', csi: { driver: 'd', nodePublishSecretRef: { name: 's' } } }] }),
      'secrets',
    ],
    [
      'a configMap env var',
      pod({}, { env: [{ name: 'A', valueFrom: { configMapKeyRef: { name: 'c', key: 'k' } } }] }),
      'configmaps',
    ],
    [
      'a projected configMap',
      pod({ volumes: [{ name: 'p', projected: { sources: [{ configMap: { name: 'c' } }] } }] }),
      'configmaps',
    ],
    ['a resource claim', pod({ resourceClaims: [{ name: 'gpu' }] }), 'resourceclaims'],
    ['a CSI volume', pod({ volumes: [{ name: 'v', csi: { driver: 'd' } }] }), 'csidrivers (via CSI volumes)'],
    ['a PVC', pod({ volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'c' } }] }), 'persistentvolumeclaims'],
    [
      'an ephemeral volume',
      pod({ volumes: [{ name: 'v', ephemeral: {} }] }),
      'persistentvolumeclaims (via ephemeral volumes)',
    ],
    [
      'a token projection',
      pod({ volumes: [{ name: 't', projected: { sources: [{ serviceAccountToken: { path: 't' } }] } }] }),
      'serviceaccounts (via projected volumes)',
    ],
    [
      'a trust bundle',
      pod({ volumes: [{ name: 't', projected: { sources: [{ clusterTrustBundle: { path: 't' } }] } }] }),
      'clustertrustbundles',
    ],
  ];
  for (const [name, p, want] of cases) it(name, () => expect(staticPodAPIReference(p)).toBe(want));

  it('refuses volume types and projections it does not know, as upstream', () => {
    expect(() => staticPodAPIReference(pod({ volumes: [{ name: 'x', mystery: {} }] }))).toThrow(
      'unknown volume type for volume  "x"',
    );
    expect(() =>
      staticPodAPIReference(pod({ volumes: [{ name: 'x', projected: { sources: [{ other: {} }] } }] })),
    ).toThrow('unknown source for projected volume "x"');
  });
});
