/** A pod's runtime handler from its RuntimeClass, with upstream's errors. */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import { lookupRuntimeHandler } from '../../../src/agent/objects/runtime-class.js';

const pod = (runtimeClassName?: string) => ({ metadata: { name: 'p', uid: 'u' }, spec: { containers: [], runtimeClassName } }) as unknown as Pod;

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
    await expect(lookupRuntimeHandler(pod('gone'), async () => null)).rejects.toThrow('runtimeclass.node.k8s.io "gone" not found');
    await expect(
      lookupRuntimeHandler(pod('kata'), async () => {
        throw new Error('GET /apis/node.k8s.io/v1/runtimeclasses/kata: 403 Forbidden');
      }),
    ).rejects.toThrow('failed to lookup RuntimeClass kata: GET /apis/node.k8s.io/v1/runtimeclasses/kata: 403 Forbidden');
  });
});
