/** metav1.LabelSelector as apimachinery's LabelSelectorAsSelector reads it. */
import { describe, expect, it } from 'vitest';
import { labelSelectorMatcher, LabelSelectorError } from '../../src/lib/label-selector.js';

describe('labelSelectorMatcher', () => {
  it('no selector matches nothing, an empty one everything', () => {
    expect(labelSelectorMatcher(undefined)({ a: '1' })).toBe(false);
    expect(labelSelectorMatcher(null)({})).toBe(false);
    expect(labelSelectorMatcher({})({})).toBe(true);
    expect(labelSelectorMatcher({})(undefined)).toBe(true);
  });

  it('matchLabels and every expression must hold', () => {
    const matches = labelSelectorMatcher({
      matchLabels: { tier: 'ca' },
      matchExpressions: [
        { key: 'env', operator: 'In', values: ['prod', 'staging'] },
        { key: 'legacy', operator: 'DoesNotExist' },
        { key: 'owner', operator: 'Exists' },
        { key: 'zone', operator: 'NotIn', values: ['a'] },
      ],
    });
    expect(matches({ tier: 'ca', env: 'prod', owner: 'x' })).toBe(true);
    expect(matches({ tier: 'ca', env: 'prod', owner: 'x', zone: 'b' })).toBe(true);
    expect(matches({ tier: 'ca', env: 'prod', owner: 'x', zone: 'a' })).toBe(false);
    expect(matches({ tier: 'ca', env: 'dev', owner: 'x' })).toBe(false);
    expect(matches({ tier: 'ca', env: 'prod', owner: 'x', legacy: '' })).toBe(false);
    expect(matches({ tier: 'ca', env: 'prod' })).toBe(false);
    expect(matches({ tier: 'web', env: 'prod', owner: 'x' })).toBe(false);
    expect(matches(undefined)).toBe(false);
  });

  it('refuses what apimachinery refuses, with its words', () => {
    expect(() => labelSelectorMatcher({ matchExpressions: [{ key: 'k', operator: 'Near' }] })).toThrow(
      new LabelSelectorError('"Near" is not a valid label selector operator'),
    );
    expect(() => labelSelectorMatcher({ matchExpressions: [{ key: 'k', operator: 'In', values: [] }] })).toThrow(
      "for 'in', 'notin' operators, values set can't be empty",
    );
    expect(() => labelSelectorMatcher({ matchExpressions: [{ key: 'k', operator: 'Exists', values: ['v'] }] })).toThrow(
      'values set must be empty for exists and does not exist',
    );
  });
});
