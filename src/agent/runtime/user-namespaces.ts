/**
 * A pod's `hostUsers` against what the kubelet and its runtime can do (upstream's user namespace
 * manager, GetOrCreateUserNamespaceMappings): a pod that leaves it unset or true runs in the node's
 * user namespace; one that sets it while the UserNamespacesSupport gate is off, or asks for a user
 * namespace of its own (`hostUsers: false`) on a handler whose runtime does not offer them, gets no
 * sandbox, with upstream's error; otherwise it gets its own ID range (userns/). Pure.
 */
import type { Pod } from '../../api/types.js';
import type { NodeRuntimeHandler } from './runtime-state.js';

/** Why the pod's sandbox cannot be made for its `hostUsers`; undefined when it can. */
export function userNamespaceRefusal(
  pod: Pod,
  handler: string,
  o: { gateEnabled: boolean; handlers: readonly NodeRuntimeHandler[] },
): string | undefined {
  const hostUsers = pod.spec.hostUsers;
  if (hostUsers === undefined || hostUsers === null) return undefined;
  if (!o.gateEnabled) return `the feature gate "UserNamespacesSupport" is disabled: can't set spec.HostUsers`;
  if (hostUsers) return undefined;
  // An old runtime lists no handlers: none of them supports user namespaces (upstream HandlerSupportsUserNamespaces).
  if (o.handlers.length && !o.handlers.some((h) => h.name === handler)) return `the handler "${handler}" is not known`;
  if (!o.handlers.find((h) => h.name === handler)?.features.userNamespaces)
    return `RuntimeClass handler "${handler}" does not support user namespaces`;
  return undefined;
}
