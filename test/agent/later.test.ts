/** The agent's late-bound parts (the wiring's cycles): read before they are wired, or wired twice, is a named error. */
import { describe, expect, it } from 'vitest';
import { later } from '../../src/agent/later.js';

describe('later', () => {
  it('gives the part once it is bound, and names a wiring error', () => {
    const part = later<number>('sync loop');
    expect(() => part.get()).toThrow("the agent's sync loop was used before it was wired");
    part.set(3);
    expect(part.get()).toBe(3);
    expect(() => part.set(4)).toThrow("the agent's sync loop was wired twice");
  });
});
