/**
 * `--help` as pflag prints the Go kubelet's: each accepted flag once, sorted, with pflag's type name, its default as
 * the kubelet would use it without a config file, and upstream's deprecation note on the config-file flags.
 */
import { describe, expect, it } from 'vitest';
import { flagHelp } from '../../src/config/flag-help.js';
import { parseFlags } from '../../src/config/flags.js';
import { loadConfig } from '../../src/config/load.js';

const help = flagHelp('kubelet');
const flagLines = help.split('\n').filter((l) => /^ {2}(-\w, )?--/.test(l) || /^ {6}--/.test(l));
const lineOf = (name: string) => flagLines.find((l) => new RegExp(`^ *(-\\w, )?--${name}( |$)`).test(l))!;

describe('--help', () => {
  it('lists every flag the kubelet accepts once, sorted by name, each usage starting in one column', () => {
    const names = flagLines.map((l) => /--([\w-]+)/.exec(l)![1]);
    expect(names).toEqual([...names].sort());
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(() => parseFlags([`--${name}=1`]), name).not.toThrow(/unknown flag/);
    expect(names.length).toBeGreaterThan(130);
    const columns = new Set(flagLines.map((l) => /^(.*?\S) {2,}/.exec(l)![0].length));
    expect(columns.size).toBe(1);
    expect(help).toContain('Usage:\n  kubelet [flags]\n');
  });

  it("gives pflag's type names and the defaults the kubelet uses without a config file", async () => {
    expect(lineOf('max-pods')).toMatch(/^ {6}--max-pods int32 +The number of pods .* \(default 110\) \(DEPRECATED: /);
    expect(lineOf('address')).toMatch(/--address ip .*\(default 0\.0\.0\.0\)/);
    expect(lineOf('sync-frequency')).toMatch(/--sync-frequency duration .*\(default 1m0s\)/);
    expect(lineOf('root-dir')).toMatch(/--root-dir string .*\(default "\/var\/lib\/kubelet"\)$/);
    expect(lineOf('eviction-hard')).toMatch(/--eviction-hard mapStringString .*\(default .*memory\.available<100Mi/);
    expect(lineOf('cgroups-per-qos')).toMatch(/^ {6}--cgroups-per-qos +.*\(default true\)/);
    expect(lineOf('v')).toMatch(/^ {2}-v, --v Level +/);
    expect(lineOf('help')).toMatch(/^ {2}-h, --help +/);
    // What a kubelet started without --config reads, flag by flag: the help's defaults are the loaded ones.
    const loaded = await loadConfig(parseFlags([]));
    expect(lineOf('read-only-port')).toContain(`(default ${loaded.kc.readOnlyPort})`);
    expect(lineOf('authorization-mode')).toContain(`(default "${loaded.kc.authorization.mode}")`);
    // A zero value shows no default, as pflag prints none.
    expect(lineOf('pods-per-core')).not.toContain('(default');
  });

  it('marks the config-file flags deprecated with upstream’s reason, and not the command-line-only ones', () => {
    expect(lineOf('port')).toContain(
      "(DEPRECATED: This parameter should be set via the config file specified by the Kubelet's --config flag.",
    );
    for (const name of ['kubeconfig', 'config', 'root-dir', 'node-ip', 'hostname-override'])
      expect(lineOf(name), name).not.toContain('DEPRECATED');
  });
});
