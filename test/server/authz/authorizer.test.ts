import { describe, expect, it } from 'vitest';
import { cleanPath, forbiddenMessage, requestAttributes } from '../../../src/server/authz/authorizer.js';

const user = { name: 'u', groups: [] };

describe('requestAttributes (upstream kubelet auth.go mapping)', () => {
  const cases: [string, string, string, string][] = [
    ['GET', '/pods', 'get', 'pods proxy'],
    ['GET', '/pods/', 'get', 'pods proxy'],
    ['GET', '/runningpods/', 'get', 'pods proxy'],
    ['GET', '/healthz', 'get', 'healthz proxy'],
    ['GET', '/healthz/syncloop', 'get', 'healthz proxy'],
    ['GET', '/configz', 'get', 'configz proxy'],
    ['GET', '/statusz', 'get', 'statusz'],
    ['GET', '/flagz', 'get', 'flagz'],
    ['GET', '/podsx', 'get', 'proxy'],
    ['GET', '/stats/summary', 'get', 'stats'],
    ['POST', '/stats/summary', 'create', 'stats'],
    ['GET', '/stats', 'get', 'stats'],
    ['GET', '/statsx', 'get', 'proxy'],
    ['GET', '/metrics', 'get', 'metrics'],
    ['GET', '/metrics/cadvisor', 'get', 'metrics'],
    ['GET', '/metrics/resource?x=1', 'get', 'metrics'],
    ['GET', '/logs/', 'get', 'log'],
    ['GET', '/logs/syslog', 'get', 'log'],
    ['GET', '/logs', 'get', 'log'],
    ['POST', '/checkpoint/ns/p/c', 'create', 'checkpoint'],
    ['POST', '/exec/ns/p/c?command=ls', 'create', 'proxy'],
    ['GET', '/exec/ns/p/c', 'get', 'proxy'],
    ['PUT', '/debug/flags/v', 'update', 'proxy'],
    ['PATCH', '/pods', 'patch', 'pods proxy'],
    ['DELETE', '/pods', 'delete', 'pods proxy'],
    ['HEAD', '/pods', '', 'pods proxy'],
    ['GET', '/stats/../exec/ns/p/c', 'get', 'proxy'],
    ['GET', '/pods/../stats/summary', 'get', 'stats'],
    ['GET', '/%6Cogs/x', 'get', 'log'],
    ['GET', '//metrics//cadvisor', 'get', 'metrics'],
  ];
  for (const [method, path, verb, sub] of cases) {
    it(`${method} ${path} → ${verb || '(empty)'} nodes/{${sub}}`, () => {
      const asked = requestAttributes(user, method, path, 'n1');
      expect(asked.map((a) => a.subresource)).toEqual(sub.split(' '));
      for (const attrs of asked)
        expect(attrs).toMatchObject({ verb, resource: 'nodes', name: 'n1', apiGroup: '', apiVersion: 'v1' });
    });
  }
  it('names every subresource asked in the 403, as Go prints a slice', () => {
    expect(forbiddenMessage(requestAttributes(user, 'GET', '/pods', 'n1'))).toBe(
      'Forbidden (user=u, verb=get, resource=nodes, subresource(s)=[pods proxy])\n',
    );
  });
  it('cleans paths as Go path.Clean', () => {
    expect([cleanPath('/a/./b/../c/'), cleanPath('/../..'), cleanPath('/%zz')]).toEqual(['/a/c', '/', '/%zz']);
  });
});
