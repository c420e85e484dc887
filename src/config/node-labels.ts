/**
 * Upstream's check of --node-labels (ValidateKubeletFlags), made before anything starts: a label in the
 * `kubernetes.io` or `k8s.io` namespaces is the kubelet's to set only if it is one of the labels it owns or under one
 * of the prefixes it may use — any other the apiserver's NodeRestriction admission refuses, so a kubelet started with
 * one could never register its Node; and every key and value must be a valid label. The messages are upstream's.
 * Pure.
 */

import { dns1123SubdomainErrors } from '../agent/runtime/pod-hostname.js';
import { regexError } from '../api/validation-messages.js';

/** The labels a kubelet may set in the reserved namespaces (upstream kubeletapis.KubeletLabels). */
const KUBELET_LABELS = [
  'beta.kubernetes.io/arch',
  'beta.kubernetes.io/instance-type',
  'beta.kubernetes.io/os',
  'failure-domain.beta.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'kubernetes.io/arch',
  'kubernetes.io/hostname',
  'kubernetes.io/os',
  'node.kubernetes.io/instance-type',
  'topology.kubernetes.io/region',
  'topology.kubernetes.io/zone',
];

/** The prefixes under which a kubelet may set any label (upstream kubeletapis.KubeletLabelNamespaces). */
const KUBELET_LABEL_NAMESPACES = ['kubelet.kubernetes.io', 'node.kubernetes.io'];

const namespaceOf = (key: string): string => (key.includes('/') ? key.slice(0, key.indexOf('/')) : '');

const inNamespace = (namespace: string, of: string) => namespace === of || namespace.endsWith(`.${of}`);

/** Upstream isKubernetesLabel: in `kubernetes.io`, `k8s.io` or a subdomain of either. */
export const isKubernetesLabel = (key: string) =>
  inNamespace(namespaceOf(key), 'kubernetes.io') || inNamespace(namespaceOf(key), 'k8s.io');

/** Upstream IsKubeletLabel. */
export const isKubeletLabel = (key: string) =>
  KUBELET_LABELS.includes(key) || KUBELET_LABEL_NAMESPACES.some((allowed) => inNamespace(namespaceOf(key), allowed));

const NAME_FORMAT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const NAME = new RegExp(`^${NAME_FORMAT}$`);
const VALUE_FORMAT = `(${NAME_FORMAT})?`;
const VALUE = new RegExp(`^${VALUE_FORMAT}$`);
const MAX_LENGTH = 63;

const NAME_ERROR = regexError(
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
  NAME_FORMAT,
  'MyName',
  'my.name',
  '123-abc',
);

/** apimachinery's IsQualifiedName messages for `key` (none when valid). */
function qualifiedNameErrors(key: string): string[] {
  const parts = key.split('/');
  if (parts.length > 2)
    return [`a qualified name ${NAME_ERROR} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  const name = parts.at(-1)!;
  const errors: string[] = [];
  if (parts.length === 2) {
    const prefix = parts[0];
    if (!prefix.length) errors.push('prefix part must be non-empty');
    else errors.push(...dns1123SubdomainErrors(prefix).map((why) => `prefix part ${why}`));
  }
  if (!name.length) errors.push('name part must be non-empty');
  else if (name.length > MAX_LENGTH) errors.push(`name part must be no more than ${MAX_LENGTH} characters`);
  // An empty name fails the pattern too, and upstream says so as well.
  if (!NAME.test(name)) errors.push(`name part ${NAME_ERROR}`);
  return errors;
}

/** apimachinery's IsValidLabelValue messages for `value` (none when valid). */
function labelValueErrors(value: string): string[] {
  const errors: string[] = [];
  if (value.length > MAX_LENGTH) errors.push(`must be no more than ${MAX_LENGTH} characters`);
  if (!VALUE.test(value))
    errors.push(
      regexError(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', " +
          'and must start and end with an alphanumeric character',
        VALUE_FORMAT,
        'MyValue',
        'my_value',
        '12345',
      ),
    );
  return errors;
}

/** Upstream's error for `labels` given with --node-labels, or undefined when they are valid. */
export function nodeLabelsError(labels: Readonly<Record<string, string>>): string | undefined {
  const unknown = Object.keys(labels)
    .filter((key) => isKubernetesLabel(key) && !isKubeletLabel(key))
    .sort();
  if (unknown.length)
    return (
      `unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [${unknown.join(' ')}]\n` +
      `--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix ` +
      `(${KUBELET_LABEL_NAMESPACES.join(', ')}) or be in the specifically allowed set (${KUBELET_LABELS.join(', ')})`
    );
  const invalid = new Map<string, string[]>();
  for (const [key, value] of Object.entries(labels)) {
    const keyErrors = qualifiedNameErrors(key);
    if (keyErrors.length) invalid.set(key, [...(invalid.get(key) ?? []), ...keyErrors]);
    const valueErrors = labelValueErrors(value);
    if (valueErrors.length) invalid.set(value, [...(invalid.get(value) ?? []), ...valueErrors]);
  }
  if (!invalid.size) return undefined;
  const described = [...invalid].map(([what, errors]) => `'${what}' - ${errors.join(', ')}`);
  return `invalid node labels: ${described.join('; ')}`;
}
