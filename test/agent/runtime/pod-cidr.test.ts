/**
 * What the runtime is told of the pod CIDRs (upstream's updatePodCIDR): a value once, a new value again, nothing for
 * the same one; a refusal counts as a change and is tried again; calls one at a time.
 */
import { describe, expect, it } from 'vitest';
import { PodCidr } from '../../../src/agent/runtime/pod-cidr.js';
import { silentLogger as logger } from '../../../src/lib/logger.js';

describe('PodCidr', () => {
  it('tells the runtime a new value, not the same one again; "" (no podCIDR configured) is never told', async () => {
    const told: string[] = [];
    const podCidr = new PodCidr({
      runtime: { updateRuntimeConfig: async (c) => void told.push(c.network_config!.pod_cidr!) },
      logger,
    });
    expect(await podCidr.update('')).toBe(false);
    expect(await podCidr.update('10.244.0.0/24')).toBe(true);
    expect(await podCidr.update('10.244.0.0/24')).toBe(false);
    expect(await podCidr.update('10.244.7.0/24')).toBe(true);
    expect(told).toEqual(['10.244.0.0/24', '10.244.7.0/24']);
  });

  it('a runtime that refuses is told again at the next update; the refusal counts as a change', async () => {
    let refuse = true;
    const told: string[] = [];
    const podCidr = new PodCidr({
      runtime: {
        updateRuntimeConfig: async (c) => {
          told.push(c.network_config!.pod_cidr!);
          if (refuse) throw new Error('rpc error: code = Unavailable');
        },
      },
      logger,
    });
    expect(await podCidr.update('10.244.0.0/24')).toBe(true);
    expect(podCidr.value()).toBe('');
    refuse = false;
    expect(await podCidr.update('10.244.0.0/24')).toBe(true);
    expect(podCidr.value()).toBe('10.244.0.0/24');
    expect(told).toEqual(['10.244.0.0/24', '10.244.0.0/24']);
  });

  it('updates asked at once run one after the other, so the same value is told once', async () => {
    let inFlight = 0;
    let most = 0;
    const told: string[] = [];
    const podCidr = new PodCidr({
      runtime: {
        updateRuntimeConfig: async (c) => {
          most = Math.max(most, ++inFlight);
          await new Promise((resolve) => setTimeout(resolve, 20));
          told.push(c.network_config!.pod_cidr!);
          inFlight--;
        },
      },
      logger,
    });
    const answers = await Promise.all([podCidr.update('10.0.0.0/24'), podCidr.update('10.0.0.0/24')]);
    expect(answers).toEqual([true, false]);
    expect(told).toEqual(['10.0.0.0/24']);
    expect(most).toBe(1);
  });
});
