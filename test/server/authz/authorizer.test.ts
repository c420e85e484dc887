import { describe, expect, it } from 'vitest';
import { cleanPath, requestAttributes } from '../../../src/server/authz/authorizer.js';

const user = { name: 'u', groups: [] };

describe('requestAttributes (upstream kubelet auth.go mapping)', () => {
  const cases: [string, string, string, string][] = [
    ['GET', '/pods', 'get', 'proxy'],
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
    ['PATCH', '/pods', 'patch', 'proxy'],
    ['DELETE', '/pods', 'delete', 'proxy'],
    ['HEAD', '/pods', '', 'proxy'],
    ['GET', '/stats/../exec/ns/p/c', 'get', 'proxy'],
    ['GET', '/pods/../stats/summary', 'get', 'stats'],
    ['GET', '/%6Cogs/x', 'get', 'log'],
    ['GET', '//metrics//cadvisor', 'get', 'metrics'],
  ];
  for (const [method, path, verb, sub] of cases) {
    it(`${method} ${path} → ${verb || '(empty)'} nodes/${sub}`, () => {
      expect(requestAttributes(user, method, path, 'n1')).toMatchObject({
        verb,
        subresource: sub,
        resource: 'nodes',
        name: 'n1',
        apiGroup: '',
        apiVersion: 'v1',
      });
    });
  }
  it('cleans paths as Go path.Clean', () => {
    expect([cleanPath('/a/./b/../c/'), cleanPath('/../..'), cleanPath('/%zz')]).toEqual(['/a/c', '/', '/%zz']);
  });
});
