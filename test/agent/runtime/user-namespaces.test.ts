/** hostUsers against the gate and the runtime's handlers, with upstream's errors. */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { userNamespaceRefusal } from '../../../src/agent/runtime/user-namespaces.js';

const pod = (hostUsers?: boolean): Pod =>
  ({ metadata: { name: 'p', namespace: 'default' }, spec: { containers: [], hostUsers } }) as Pod;
const handler = (name: string, userNamespaces: boolean) => ({
  name,
  features: { recursiveReadOnlyMounts: false, userNamespaces },
});

describe('userNamespaceRefusal', () => {
  it('lets a pod without hostUsers, or with true, run in the node user namespace', () => {
    for (const gateEnabled of [true, false])
      expect(userNamespaceRefusal(pod(), '', { gateEnabled, handlers: [] })).toBeUndefined();
    expect(userNamespaceRefusal(pod(true), '', { gateEnabled: true, handlers: [] })).toBeUndefined();
  });

  it("refuses hostUsers set with the gate off, and hostUsers: false on a handler without user namespaces, in upstream's words", () => {
    expect(userNamespaceRefusal(pod(true), '', { gateEnabled: false, handlers: [] })).toBe(
      `the feature gate "UserNamespacesSupport" is disabled: can't set spec.HostUsers`,
    );
    // An old runtime (containerd 1.6) lists no handlers at all.
    expect(userNamespaceRefusal(pod(false), '', { gateEnabled: true, handlers: [] })).toBe(
      'RuntimeClass handler "" does not support user namespaces',
    );
    expect(userNamespaceRefusal(pod(false), 'runc', { gateEnabled: true, handlers: [handler('runc', false)] })).toBe(
      'RuntimeClass handler "runc" does not support user namespaces',
    );
    expect(userNamespaceRefusal(pod(false), 'kata', { gateEnabled: true, handlers: [handler('runc', true)] })).toBe(
      'the handler "kata" is not known',
    );
  });

  it('lets hostUsers: false through on a handler with user namespaces (its ID range comes from userns/)', () => {
    expect(userNamespaceRefusal(pod(false), '', { gateEnabled: true, handlers: [handler('', true)] })).toBeUndefined();
  });
});
