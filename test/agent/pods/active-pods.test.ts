/** Active pods (upstream filterOutInactivePods): what admission counts as holding the node's resources. */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { isActivePod } from '../../../src/agent/pods/active-pods.js';

const pod = (phase?: 'Running' | 'Succeeded' | 'Failed'): Pod =>
  ({ metadata: { name: 'p', uid: 'u' }, spec: { containers: [] }, status: phase ? { phase } : undefined }) as Pod;

describe('isActivePod', () => {
  it('a running or stopping pod holds its resources; a stopped one, or one finished and not stopping, does not', () => {
    expect(isActivePod(pod('Running'), 'sync')).toBe(true);
    expect(isActivePod(pod(), undefined)).toBe(true);
    // Being deleted: its containers may still run (upstream counts it until terminated).
    expect(isActivePod(pod('Running'), 'terminating')).toBe(true);
    expect(isActivePod(pod('Succeeded'), 'terminating')).toBe(true);
    expect(isActivePod(pod('Running'), 'terminated')).toBe(false);
    expect(isActivePod(pod('Succeeded'), 'sync')).toBe(false);
    expect(isActivePod(pod('Failed'), undefined)).toBe(false);
  });
});
