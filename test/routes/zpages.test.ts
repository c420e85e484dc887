/** /statusz and /flagz text as component-base's z-pages print it, and the flag values as pflag prints them. */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  acceptsPlainText,
  flagzObject,
  flagzText,
  negotiateZpage,
  statuszObject,
  statuszText,
  unixDate,
  uptimeText,
  zpagesRoutes,
} from '../../src/routes/zpages.js';
import { schemasAsDocumentation } from '../../src/server/servers.js';
import { flagzValues } from '../../src/config/flagz.js';
import { parseFlags } from '../../src/config/flags.js';
import { loadConfig } from '../../src/config/load.js';

describe('z-pages', () => {
  it('prints times as Go: time.UnixDate and the uptime in hr/min/sec', () => {
    expect(unixDate(Date.parse('2024-09-06T06:19:51Z'))).toBe('Fri Sep  6 06:19:51 UTC 2024');
    expect(unixDate(Date.parse('2026-11-28T23:05:00Z'))).toBe('Sat Nov 28 23:05:00 UTC 2026');
    expect([uptimeText(30.9), uptimeText(3 * 3600 + 61)]).toEqual(['0 hr 00 min 30 sec', '3 hr 01 min 01 sec']);
  });

  it('serves text/plain to clients that accept it (upstream AcceptableMediaType)', () => {
    for (const accept of [
      undefined,
      '*/*',
      'text/plain',
      'text/*',
      'text/plain; charset=utf-8',
      'application/json, */*',
    ])
      expect(acceptsPlainText(accept), String(accept)).toBe(true);
    for (const accept of [
      'application/json',
      'text/html',
      'text/plain; charset=latin1',
      'text/plain;v=1;charset=utf-8',
    ])
      expect(acceptsPlainText(accept), accept).toBe(false);
  });

  it('serves the structured page to an Accept naming its group, version and kind; text else; nothing to plain JSON', () => {
    const cases: [string | undefined, ReturnType<typeof negotiateZpage>][] = [
      ['application/json;v=v1alpha1;g=config.k8s.io;as=Statusz', { format: 'json', version: 'v1alpha1' }],
      ['application/json; v=v1beta1; g=config.k8s.io; as=Statusz', { format: 'json', version: 'v1beta1' }],
      ['application/json;v=foo;g=config.k8s.io;as=Statusz,*/*', { format: 'text' }],
      ['text/plain, application/json;v=v1beta1;g=config.k8s.io;as=Statusz', { format: 'text' }],
      [undefined, { format: 'text' }],
      ['application/json', undefined],
      ['application/json;v=v1alpha1;g=config.k8s.io', undefined],
      ['application/json;v=v1alpha1;g=config.k8s.io;as=Flagz', undefined],
      ['application/xml', undefined],
      // YAML since v1.36 (kubernetes/kubernetes#135309).
      ['application/yaml;v=v1beta1;g=config.k8s.io;as=Statusz', { format: 'yaml', version: 'v1beta1' }],
      ['application/yaml', undefined],
    ];
    for (const [accept, served] of cases) expect(negotiateZpage(accept, 'Statusz'), String(accept)).toEqual(served);
  });

  it('structured statusz and flagz: upstream kinds, the start as RFC 3339, the uptime in seconds, flags by name', () => {
    const options = {
      component: 'kubelet',
      binaryVersion: '1.36.2',
      runtimeVersion: 'node v20.0.0',
      startedAtMs: Date.parse('2026-11-28T23:00:00.250Z'),
      nowMs: () => Date.parse('2026-11-28T23:01:05Z'),
      paths: ['/pods', '/stats/summary', '/healthz', '/pods/x'],
      flags: { 'node-ip': '10.0.0.1', 'cluster-dns': '[10.0.0.10]' },
    };
    expect(statuszObject(options, 'v1beta1')).toEqual({
      kind: 'Statusz',
      apiVersion: 'config.k8s.io/v1beta1',
      metadata: { name: 'kubelet' },
      startTime: '2026-11-28T23:00:00Z',
      uptimeSeconds: 64,
      goVersion: 'node v20.0.0',
      binaryVersion: '1.36.2',
      emulationVersion: '1.36',
      paths: ['/healthz', '/pods', '/stats'],
    });
    expect(JSON.stringify(flagzObject(options, 'v1alpha1'))).toBe(
      '{"kind":"Flagz","apiVersion":"config.k8s.io/v1alpha1","metadata":{"name":"kubelet"},"flags":{"cluster-dns":"[10.0.0.10]","node-ip":"10.0.0.1"}}',
    );
  });

  it('statusz: header, warning, start, uptime, versions and the served top-level paths', () => {
    const text = statuszText(
      {
        component: 'kubelet',
        binaryVersion: '1.36.2',
        runtimeVersion: 'node v20.0.0',
        startedAtMs: Date.parse('2026-11-28T23:00:00Z'),
        nowMs: () => Date.parse('2026-11-28T23:01:05Z'),
        paths: ['/pods', '/stats/summary', '/healthz', '/pods/x'],
        flags: {},
      },
      '=',
    );
    expect(text).toBe(
      [
        '',
        'kubelet statusz',
        'Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.',
        '',
        'Started= Sat Nov 28 23:00:00 UTC 2026',
        'Up= 0 hr 01 min 05 sec',
        'Go version= node v20.0.0',
        'Binary version= 1.36.2',
        'Emulation version= 1.36',
        'Paths= /healthz /pods /stats',
        '',
      ].join('\n'),
    );
  });

  it('flagz: every implemented flag with the value in effect, sorted, formatted as pflag prints it', async () => {
    const parsed = parseFlags([
      '--hostname-override=n1',
      '--cluster-dns=10.0.0.10,10.0.0.11',
      '--eviction-hard=memory.available<200Mi',
      '--kube-reserved=memory=1Gi,cpu=1',
      '--fail-swap-on=false',
    ]);
    const config = await loadConfig(parsed);
    const values = flagzValues(parsed, config.kc);
    expect(values).toMatchObject({
      'hostname-override': 'n1',
      'cluster-dns': '[10.0.0.10,10.0.0.11]',
      'kube-reserved': 'cpu=1,memory=1Gi',
      'fail-swap-on': 'false',
      'max-pods': '110',
      'sync-frequency': '1m0s',
      'node-ip': '',
    });
    const text = flagzText({ component: 'kubelet', flags: { b: '2', a: '1' } }, ': ');
    expect(text.split('\n').slice(0, 2)).toEqual(['', 'kubelet flags']);
    expect(text.endsWith('\na: 1\nb: 2\n')).toBe(true);
  });
});

describe('the z-pages served', () => {
  it('answers the structured page as YAML to an Accept of application/yaml with its group, version and kind', async () => {
    const app = Fastify({ schemaController: schemasAsDocumentation });
    await app.register(zpagesRoutes, {
      component: 'kubelet',
      binaryVersion: '1.36.2',
      runtimeVersion: 'node v20',
      startedAtMs: Date.parse('2026-11-30T05:00:00Z'),
      nowMs: () => Date.parse('2026-11-30T05:01:00Z'),
      paths: ['/pods', '/stats/summary'],
      flags: { v: '2', 'node-ip': '10.0.0.1' },
    });
    const yaml = await app.inject({
      url: '/flagz',
      headers: { accept: 'application/yaml;v=v1beta1;g=config.k8s.io;as=Flagz' },
    });
    expect([yaml.statusCode, yaml.headers['content-type']]).toEqual([200, 'application/yaml']);
    expect(parseYaml(yaml.body)).toEqual({
      apiVersion: 'config.k8s.io/v1beta1',
      kind: 'Flagz',
      metadata: { name: 'kubelet' },
      flags: { 'node-ip': '10.0.0.1', v: '2' },
    });
    // Keys sorted, as sigs.k8s.io/yaml writes them.
    expect(yaml.body.split('\n')[0]).toBe('apiVersion: config.k8s.io/v1beta1');
    const statusz = await app.inject({
      url: '/statusz',
      headers: { accept: 'application/yaml;v=v1alpha1;g=config.k8s.io;as=Statusz' },
    });
    expect(parseYaml(statusz.body)).toMatchObject({ kind: 'Statusz', uptimeSeconds: 60, paths: ['/pods', '/stats'] });
    await app.close();
  });
});
