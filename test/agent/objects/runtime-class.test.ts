/** A pod's runtime handler from its RuntimeClass, with upstream's errors. */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import {
  RuntimeClassHandlers,
  handlerSupportsRecursiveReadOnly,
  lookupRuntimeHandler,
} from '../../../src/agent/objects/runtime-class.js';

const pod = (runtimeClassName?: string) =>
  ({ metadata: { name: 'p', uid: 'u' }, spec: { containers: [], runtimeClassName } }) as unknown as Pod;

describe('lookupRuntimeHandler', () => {
  it("uses the runtime's default handler without a runtimeClassName, and never asks the apiserver then", async () => {
    const asked: string[] = [];
    const get = async <T>(path: string) => (asked.push(path), null as T | null);
    expect(await lookupRuntimeHandler(pod(), get)).toBe('');
    expect(await lookupRuntimeHandler(pod(''), get)).toBe('');
    expect(asked).toEqual([]);
  });

  it("reads the RuntimeClass's handler", async () => {
    const asked: string[] = [];
    const get = async <T>(path: string) => (asked.push(path), { handler: 'runsc' } as T);
    expect(await lookupRuntimeHandler(pod('gvisor'), get)).toBe('runsc');
    expect(asked).toEqual(['/apis/node.k8s.io/v1/runtimeclasses/gvisor']);
  });

  it("fails with upstream's messages for a RuntimeClass that does not exist or cannot be read", async () => {
    await expect(lookupRuntimeHandler(pod('gone'), async () => null)).rejects.toThrow(
      'runtimeclass.node.k8s.io "gone" not found',
    );
    await expect(
      lookupRuntimeHandler(pod('kata'), async () => {
        throw new Error('GET /apis/node.k8s.io/v1/runtimeclasses/kata: 403 Forbidden');
      }),
    ).rejects.toThrow(
      'failed to lookup RuntimeClass kata: GET /apis/node.k8s.io/v1/runtimeclasses/kata: 403 Forbidden',
    );
  });
});

describe('RuntimeClassHandlers and handler features', () => {
  it("remembers each class's handler once read, for what must ask synchronously; without an apiserver every pod has the default", async () => {
    const h = new RuntimeClassHandlers(async <T>() => ({ handler: 'runc' }) as T);
    expect(h.knownHandlerOf(pod())).toBe('');
    expect(h.knownHandlerOf(pod('plain'))).toBeUndefined();
    expect(await h.handlerOf(pod('plain'))).toBe('runc');
    expect(h.knownHandlerOf(pod('plain'))).toBe('runc');
    const standalone = new RuntimeClassHandlers();
    // Without an apiserver: the default handler, and none known to have features (upstream has no RuntimeClass manager
    // then).
    expect([
      await standalone.handlerOf(pod('plain')),
      standalone.knownHandlerOf(pod('plain')),
      standalone.knownHandlerOf(pod()),
    ]).toEqual(['', undefined, undefined]);
  });

  it('a handler makes recursive read-only mounts only when the runtime lists it so (none listed: no)', () => {
    const listed = [
      { name: 'runc', features: { recursiveReadOnlyMounts: true } },
      { name: '', features: { recursiveReadOnlyMounts: false } },
    ];
    expect(handlerSupportsRecursiveReadOnly(listed, 'runc')).toBe(true);
    expect(handlerSupportsRecursiveReadOnly(listed, '')).toBe(false);
    expect(handlerSupportsRecursiveReadOnly(listed, 'kata')).toBe(false);
    expect(handlerSupportsRecursiveReadOnly(listed, undefined)).toBe(false);
    expect(handlerSupportsRecursiveReadOnly([], 'runc')).toBe(false);
  });
});
