/**
 * The CDI annotation a container gets for a claim's devices, as upstream's cm/dra/cdi names it,
 * and upstream's errors (which fail the claim's preparation) when it cannot be made.
 */
import { describe, expect, it } from 'vitest';
import { cdiAnnotation } from '../../../src/agent/dra/cdi-annotations.js';

const UID = '0b2a6b9e-4c8e-4a4b-9f0e-2f6d1c3e5a7b';

describe('CDI annotations', () => {
  it('names the driver and the claim, and lists the devices', () => {
    expect(cdiAnnotation('gpu.example.com', UID, ['gpu.example.com/gpu=a', 'gpu.example.com/gpu=b'])).toEqual({
      key: `cdi.k8s.io/gpu.example.com_${UID}`,
      value: 'gpu.example.com/gpu=a,gpu.example.com/gpu=b',
    });
    expect(cdiAnnotation('x', 'u/1', ['vendor.com/class=dev:0.a'])).toEqual({
      key: 'cdi.k8s.io/x_u_1',
      value: 'vendor.com/class=dev:0.a',
    });
  });

  it('gives none without devices', () => {
    expect(cdiAnnotation('driver', 'u', [])).toBeUndefined();
  });

  it.each([
    [
      'a driver name and UID too long together',
      'a-very-long-driver-name.example.com',
      UID,
      ['x.com/y=z'],
      `invalid plugin+deviceID "a-very-long-driver-name.example.com_${UID}", too long`,
    ],
    ['an empty driver name', '', 'u', ['x.com/y=z'], 'invalid plugin name, empty'],
    [
      'a name starting with a dash',
      '-driver',
      'u',
      ['x.com/y=z'],
      `invalid name "-driver_u", first '-' should be alphanumeric`,
    ],
    ['a character names cannot hold', 'dri+ver', 'u', ['x.com/y=z'], `invalid name "dri+ver_u", invalid charcter '+'`],
    ['a device without a vendor', 'driver', 'u', ['gpu0'], 'unqualified device "gpu0", missing vendor'],
    ['a device with an empty name', 'driver', 'u', ['x.com/y='], 'unqualified device "x.com/y=", missing vendor'],
    ['a path, not a name', 'driver', 'u', ['/dev/gpu0'], 'unqualified device "/dev/gpu0", missing vendor'],
    [
      'a vendor starting with a digit',
      'driver',
      'u',
      ['9x.com/y=z'],
      'invalid device "9x.com/y=z": invalid vendor "9x.com", should start with letter',
    ],
    [
      'a class with a dot',
      'driver',
      'u',
      ['x.com/y.y=z'],
      `invalid device "x.com/y.y=z": invalid character '.' in device class "y.y"`,
    ],
    [
      'a device name ending in a dash',
      'driver',
      'u',
      ['x.com/y=z-'],
      'invalid device "x.com/y=z-": invalid name "z-", should end with a letter or digit',
    ],
  ])('refuses %s with upstream message', (_, driver, uid, devices, message) => {
    expect(() => cdiAnnotation(driver, uid, devices)).toThrow(`can't generate CDI annotations: ${message}`);
  });
});
