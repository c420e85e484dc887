/** The CDI annotation a container gets for a claim's devices, as upstream's cm/dra/cdi names it. */
import { describe, expect, it } from 'vitest';
import { cdiAnnotation } from '../../../src/agent/dra/cdi-annotations.js';

const UID = '0b2a6b9e-4c8e-4a4b-9f0e-2f6d1c3e5a7b';

describe('CDI annotations', () => {
  it('names the driver and the claim, and lists the devices', () => {
    expect(cdiAnnotation('gpu.example.com', UID, ['gpu.example.com/gpu=a', 'gpu.example.com/gpu=b'])).toEqual({
      key: `cdi.k8s.io/gpu.example.com_${UID}`,
      value: 'gpu.example.com/gpu=a,gpu.example.com/gpu=b',
    });
  });
  it('gives none when the name is too long or badly formed, or there are no devices', () => {
    expect(cdiAnnotation('a-very-long-driver-name.example.com', UID, ['x.com/y=z'])).toBeUndefined();
    expect(cdiAnnotation('-driver', 'u', ['x.com/y=z'])).toBeUndefined();
    expect(cdiAnnotation('driver', 'u', [])).toBeUndefined();
  });
});
