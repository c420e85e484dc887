/** imagePullSecrets → CRI auth, as upstream's keyring matches registries. */
import { describe, expect, it } from 'vitest';
import { credentialsFor, imageRegistry } from '../../../src/agent/images/keyring.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const dockerconfigjson = (auths: Record<string, unknown>) => ({
  type: 'kubernetes.io/dockerconfigjson',
  data: { '.dockerconfigjson': b64(JSON.stringify({ auths })) },
});

describe('keyring', () => {
  it('finds the registry of an image', () => {
    expect(imageRegistry('busybox')).toEqual({ host: 'docker.io', path: 'library/busybox' });
    expect(imageRegistry('user/app:1')).toEqual({ host: 'docker.io', path: 'user/app' });
    expect(imageRegistry('registry.example.com:5000/team/app@sha256:abc')).toEqual({
      host: 'registry.example.com:5000',
      path: 'team/app',
    });
    expect(imageRegistry('localhost/x')).toEqual({ host: 'localhost', path: 'x' });
  });
  it('matches hosts, Docker Hub aliases, path prefixes and globs; most specific first', () => {
    const secrets = [
      dockerconfigjson({
        'https://index.docker.io/v1/': { auth: b64('hub:pw') },
        'registry.example.com': { username: 'any', password: '1' },
      }),
      dockerconfigjson({
        'registry.example.com/team': { username: 'team', password: '2' },
        '*.corp.example': { username: 'glob', password: '3', identitytoken: 'tok' },
      }),
      {
        type: 'kubernetes.io/dockercfg',
        data: { '.dockercfg': b64(JSON.stringify({ 'quay.io': { auth: b64('q:pw') } })) },
      },
    ];
    expect(credentialsFor('busybox', secrets)).toEqual([
      { username: 'hub', password: 'pw', auth: b64('hub:pw'), identity_token: undefined, registry_token: undefined },
    ]);
    expect(credentialsFor('registry.example.com/team/app', secrets).map((a) => a.username)).toEqual(['team', 'any']);
    expect(credentialsFor('registry.example.com/other/app', secrets).map((a) => a.username)).toEqual(['any']);
    expect(credentialsFor('reg.corp.example/x', secrets)).toMatchObject([{ username: 'glob', identity_token: 'tok' }]);
    expect(credentialsFor('a.b.corp.example/x', secrets)).toEqual([]);
    expect(credentialsFor('quay.io/x/y', secrets)).toMatchObject([{ username: 'q', password: 'pw' }]);
    expect(credentialsFor('ghcr.io/x', secrets)).toEqual([]);
  });
  it('ignores malformed secrets', () => {
    expect(credentialsFor('busybox', [{ data: { '.dockerconfigjson': b64('{not json') } }, { data: {} }])).toEqual([]);
  });
});
