/**
 * --node-labels as upstream's ValidateKubeletFlags checks them: a label in the reserved `kubernetes.io` and `k8s.io`
 * namespaces only where a kubelet may set it (else the apiserver's NodeRestriction admission would refuse the Node it
 * registers, and it would retry for ever), every key and value a valid label; upstream's messages (its own test's).
 */
import { describe, expect, it } from 'vitest';
import { nodeLabelsError } from '../../src/config/node-labels.js';
import { loadConfig, ConfigError } from '../../src/config/load.js';
import { parseFlags } from '../../src/config/flags.js';

describe('--node-labels', () => {
  it("refuses a reserved label the kubelet may not set, with upstream's message", () => {
    expect(nodeLabelsError({ 'beta.kubernetes.io/metadata-proxy-ready': 'true' })).toBe(
      "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [beta.kubernetes.io/metadata-proxy-ready]\n" +
        "--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix (kubelet.kubernetes.io, " +
        'node.kubernetes.io) or be in the specifically allowed set (beta.kubernetes.io/arch, ' +
        'beta.kubernetes.io/instance-type, beta.kubernetes.io/os, failure-domain.beta.kubernetes.io/region, ' +
        'failure-domain.beta.kubernetes.io/zone, kubernetes.io/arch, kubernetes.io/hostname, kubernetes.io/os, ' +
        'node.kubernetes.io/instance-type, topology.kubernetes.io/region, topology.kubernetes.io/zone)',
    );
    expect(nodeLabelsError({ 'node-role.kubernetes.io/worker': '', 'example.k8s.io/x': 'y' })).toMatch(
      /^unknown .* --node-labels: \[example\.k8s\.io\/x node-role\.kubernetes\.io\/worker\]\n/,
    );
  });

  it('takes the labels a kubelet may set and any outside the reserved namespaces', () => {
    expect(
      nodeLabelsError({
        'cloud.google.com/metadata-proxy-ready': 'true',
        'node.kubernetes.io/pool': 'a',
        'a.kubelet.kubernetes.io/b': 'c',
        'topology.kubernetes.io/zone': 'z1',
        'kubernetes.io.example.com/x': 'y',
        tier: '',
      }),
    ).toBeUndefined();
    expect(nodeLabelsError({})).toBeUndefined();
  });

  it('refuses a key or value that is no label', () => {
    expect(nodeLabelsError({ 'example.com/a b': 'ok' })).toBe(
      "invalid node labels: 'example.com/a b' - name part must consist of alphanumeric characters, '-', '_' or '.', " +
        "and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', " +
        "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    );
    expect(nodeLabelsError({ tier: '-bad' })).toBe(
      "invalid node labels: '-bad' - a valid label must be an empty string or consist of alphanumeric characters, " +
        "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or " +
        "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    );
    expect(nodeLabelsError({ tier: 'x'.repeat(64) })).toBe(
      `invalid node labels: '${'x'.repeat(64)}' - must be no more than 63 characters`,
    );
    // An empty name part: upstream gives both reasons.
    expect(nodeLabelsError({ 'example.com/': 'y' })).toMatch(
      /^invalid node labels: 'example.com\/' - name part must be non-empty, name part must consist of/,
    );
    expect(nodeLabelsError({ 'Example.com/x': 'y' })).toMatch(/prefix part a lowercase RFC 1123 subdomain/);
  });

  it('stops the start before the config file is read', async () => {
    const error = await loadConfig(
      parseFlags(['--node-labels=node-role.kubernetes.io/worker=', '--config=/nonexistent']),
    ).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(
      /^failed to validate kubelet flags: unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: \[node-role\.kubernetes\.io\/worker\]/,
    );
  });
});
