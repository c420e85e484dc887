/** env[].valueFrom.fileKeyRef (EnvFiles): an env file in a pod volume gives a variable its value. */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Container, Pod } from '../../../src/api/types.js';
import { ENV_FILE_MAX_BYTES, envFileKey, parseEnvFile, readEnvFiles } from '../../../src/agent/runtime/env-file.js';
import { containerEnv } from '../../../src/agent/runtime/env.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-envfile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ref = (key: string, optional?: boolean) => ({
  name: key,
  valueFrom: { fileKeyRef: { volumeName: 'config', path: 'app/config.env', key, ...(optional ? { optional } : {}) } },
});
const container = (env: unknown[]): Container => ({ name: 'main', image: 'busybox', env }) as Container;
const pod: Pod = { metadata: { name: 'p', namespace: 'd', uid: 'u' }, spec: { containers: [] } };
const ctx = { podIPs: [], hostIPs: [], nodeName: 'n' };

describe('env files', () => {
  it('parses KEY=value lines, skipping blanks and comments; single quotes are taken as written', () => {
    expect([...parseEnvFile("# made by init\nA=1\n\nB = two words \nC='x=y #z'\nbroken\n=nokey\r\nD=\n")]).toEqual([
      ['A', '1'],
      ['B', ' two words'],
      ['C', 'x=y #z'],
      ['D', ''],
    ]);
  });

  it('reads each file once, within its volume and its size bound', async () => {
    mkdirSync(join(dir, 'vol', 'app'), { recursive: true });
    writeFileSync(join(dir, 'vol', 'app', 'config.env'), 'MAIN=from-file\n');
    writeFileSync(join(dir, 'vol', 'big.env'), 'X='.padEnd(ENV_FILE_MAX_BYTES + 10, 'x'));
    const volumes = new Map([
      ['config', { path: join(dir, 'vol'), readOnly: false, plugin: 'kubernetes.io~empty-dir' }],
    ]);
    const files = await readEnvFiles(
      container([
        ref('MAIN'),
        ref('OTHER'),
        { name: 'ESCAPE', valueFrom: { fileKeyRef: { volumeName: 'config', path: '../../etc/passwd', key: 'root' } } },
        { name: 'BIG', valueFrom: { fileKeyRef: { volumeName: 'config', path: 'big.env', key: 'X' } } },
        { name: 'NOVOL', valueFrom: { fileKeyRef: { volumeName: 'absent', path: 'a.env', key: 'A' } } },
      ]),
      volumes,
    );
    expect(files.get(envFileKey({ volumeName: 'config', path: 'app/config.env' }))).toBe('MAIN=from-file\n');
    expect(files.get(envFileKey({ volumeName: 'config', path: '../../etc/passwd' }))).toBeNull();
    expect(files.get(envFileKey({ volumeName: 'config', path: 'big.env' }))).toBeNull();
    expect(files.get(envFileKey({ volumeName: 'absent', path: 'a.env' }))).toBeNull();
    expect(files.size).toBe(4);
  });

  it('gives the variable its value; a missing key is a config error unless optional', () => {
    const envFiles = new Map([[envFileKey({ volumeName: 'config', path: 'app/config.env' }), 'MAIN=v1\n']]);
    expect(containerEnv(pod, container([ref('MAIN'), ref('GONE', true)]), { ...ctx, envFiles })).toEqual({
      ok: true,
      env: [{ key: 'MAIN', value: 'v1' }],
    });
    expect(containerEnv(pod, container([ref('GONE')]), { ...ctx, envFiles })).toEqual({
      ok: false,
      message: "couldn't find key GONE in env file app/config.env in volume config",
    });
    expect(containerEnv(pod, container([ref('MAIN')]), ctx)).toEqual({
      ok: false,
      message: "couldn't read env file app/config.env in volume config for env MAIN",
    });
  });
});
