/**
 * A metav1.LabelSelector as a predicate over an object's labels, as apimachinery's LabelSelectorAsSelector reads one:
 * no selector matches nothing, an empty one everything; `matchLabels` and every `matchExpressions` requirement must
 * hold. Pure.
 */

export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** A selector that cannot be read: an unknown operator, or values that do not fit it (apimachinery's messages). */
export class LabelSelectorError extends Error {}

type Labels = Readonly<Record<string, string>> | undefined;

/** One requirement as a predicate; throws LabelSelectorError for one apimachinery would not accept. */
function requirement({ key, operator, values = [] }: LabelSelectorRequirement): (labels: Labels) => boolean {
  switch (operator) {
    case 'In':
    case 'NotIn': {
      if (values.length === 0)
        throw new LabelSelectorError(
          `values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty`,
        );
      const set = new Set(values);
      return operator === 'In'
        ? (labels) => labels?.[key] !== undefined && set.has(labels[key])
        : (labels) => labels?.[key] === undefined || !set.has(labels[key]);
    }
    case 'Exists':
    case 'DoesNotExist':
      if (values.length > 0)
        throw new LabelSelectorError(
          `values: Invalid value: ${JSON.stringify(values)}: values set must be empty for exists and does not exist`,
        );
      return operator === 'Exists' ? (labels) => labels?.[key] !== undefined : (labels) => labels?.[key] === undefined;
    default:
      throw new LabelSelectorError(`${JSON.stringify(operator)} is not a valid label selector operator`);
  }
}

/** `selector` as a predicate over labels. Throws LabelSelectorError for a selector apimachinery refuses. */
export function labelSelectorMatcher(selector: LabelSelector | null | undefined): (labels: Labels) => boolean {
  if (selector === null || selector === undefined) return () => false;
  const requirements = [
    ...Object.entries(selector.matchLabels ?? {}).map(([key, value]) =>
      requirement({ key, operator: 'In', values: [value] }),
    ),
    ...(selector.matchExpressions ?? []).map(requirement),
  ];
  return (labels) => requirements.every((matches) => matches(labels));
}
