/**
 * User namespaces on the process runtime (CRI `userns_options` mode POD): the container's main
 * process and its execs run as root of a user namespace of their own, mapped onto the pod's host
 * range (the host sees the range's first ID), another runAsUser has no capabilities there, the
 * handler says it supports them as root, and mappings it cannot make are refused.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as cri from '../../src/cri/types.js';
import { userNamespaceRange } from '../../src/process-runtime/user-namespace.js';
import { processRuntimeFixture } from './runtime-fixture.js';
import { until } from '../e2e/helpers.js';

const range = (hostId: number, length = 65536): cri.UserNamespace => ({
  mode: 'POD',
  uids: [{ host_id: hostId, container_id: 0, length }],
  gids: [{ host_id: hostId, container_id: 0, length }],
});

describe('userNamespaceRange', () => {
  it('takes one range from 0, the same for users and groups; refuses others', () => {
    expect(userNamespaceRange(undefined)).toBeUndefined();
    expect(userNamespaceRange({ mode: 'NODE' })).toBeUndefined();
    expect(userNamespaceRange(range(131072))).toEqual({ hostId: 131072, length: 65536 });
    expect(() =>
      userNamespaceRange({ ...range(65536), gids: [{ host_id: 131072, container_id: 0, length: 65536 }] }),
    ).toThrow(/one range of IDs from 0, the same for users and groups/);
    expect(() => userNamespaceRange({ mode: 'POD', uids: [], gids: [] })).toThrow(/one range/);
    expect(() => userNamespaceRange(range(2 ** 32 - 10))).toThrow(/invalid range/);
  });
});

describe.runIf(process.getuid?.() === 0)('containers in a user namespace of their own', () => {
  const { dir, runtime } = processRuntimeFixture('tsk-userns-rt-');
  const sandboxConfig = (uid: string, userns: cri.UserNamespace): cri.PodSandboxConfig => ({
    metadata: { name: uid, uid, namespace: 'default', attempt: 0 },
    log_directory: join(dir, 'logs', uid),
    linux: { security_context: { namespace_options: { userns_options: userns } } },
  });

  /**
   * Runs `script` as a container of pod `uid` in a user namespace mapped onto `hostId` (as `runAsUser` when given);
   * resolves with its log once it holds `until`, and the container's ID and sandbox's.
   */
  async function runInUserNamespace(uid: string, hostId: number, script: string, until_: string, runAsUser?: number) {
    const userns = range(hostId);
    const sb = sandboxConfig(uid, userns);
    const sandboxId = await runtime.runPodSandbox(sb);
    const id = await runtime.createContainer(
      sandboxId,
      {
        metadata: { name: 'main', attempt: 0 },
        image: { image: 'busybox' },
        command: ['sh', '-c', `${script}; exec sleep 60`],
        log_path: 'main.log',
        linux: {
          security_context: {
            namespace_options: { userns_options: userns },
            ...(runAsUser === undefined ? {} : { run_as_user: { value: runAsUser } }),
          },
        },
      },
      sb,
    );
    await runtime.startContainer(id);
    const log = await until(
      () => {
        try {
          const text = readFileSync(join(dir, 'logs', uid, 'main.log'), 'utf8');
          return text.includes(until_) ? text : undefined;
        } catch {
          return undefined;
        }
      },
      10_000,
      'the container log',
    );
    return { log, id, sandboxId };
  }

  it('runs the main process and execs as root inside, the range’s first ID outside; the handler says so', async () => {
    expect((await runtime.status()).runtime_handlers?.[0]?.features?.user_namespaces).toBe(true);
    const { log, id, sandboxId } = await runInUserNamespace(
      'userns-pod',
      196608,
      'echo "uid=$(id -u) pid=$$"; cat /proc/self/uid_map',
      '196608',
    );
    expect(log).toContain('uid=0 ');
    expect(log).toMatch(/ 0\s+196608\s+65536\n/);
    const pid = /pid=(\d+)/.exec(log)?.[1];
    expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(/\nUid:\s+196608\s/);
    // An exec enters the same namespace.
    const exec = await runtime.execSync(id, ['sh', '-c', 'id -u; cat /proc/self/uid_map'], 10);
    expect(exec.exit_code).toBe(0);
    expect(Buffer.from(exec.stdout).toString()).toMatch(/^0\n\s+0\s+196608\s+65536\n$/);
    await runtime.stopContainer(id, 0);
    await runtime.removePodSandbox(sandboxId);
  });

  it('gives another runAsUser no capabilities in the namespace', async () => {
    const { log, id, sandboxId } = await runInUserNamespace(
      'userns-user',
      262144,
      'id -u; grep -E "^Cap(Eff|Prm|Amb)" /proc/self/status',
      'CapAmb',
      1000,
    );
    expect(log).toContain(' 1000\n');
    for (const cap of ['CapPrm', 'CapEff', 'CapAmb']) expect(log).toMatch(new RegExp(`${cap}:\\s+0+\\n`));
    await runtime.stopContainer(id, 0);
    await runtime.removePodSandbox(sandboxId);
  });

  it('refuses a mapping it cannot make', async () => {
    await expect(
      runtime.runPodSandbox(
        sandboxConfig('userns-bad', { mode: 'POD', uids: [{ host_id: 65536, container_id: 1, length: 10 }], gids: [] }),
      ),
    ).rejects.toThrow(/one range of IDs from 0/);
  });
});
