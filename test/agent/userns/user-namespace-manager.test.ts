/**
 * The user namespace manager as upstream's (pkg/kubelet/userns): each `hostUsers: false` pod's ID
 * range out of the kubelet's, kept in upstream's `<root-dir>/pods/<uid>/userns` file, found again
 * after a restart, released with the pod; the kubelet's range from the `kubelet` user's
 * subordinate IDs; upstream's messages for a range or a file that does not fit.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  decodeUserNamespace,
  podUserNamespaceOptions,
  UserNamespaceManager,
} from '../../../src/agent/userns/user-namespace-manager.js';
import { defaultKubeletMapping, kubeletMapping, parseGetSubIds } from '../../../src/agent/userns/kubelet-mappings.js';

const root = mkdtempSync(join(tmpdir(), 'tsk-userns-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const podsDir = () => {
  const dir = join(root, `pods-${dirs++}`);
  mkdirSync(dir);
  return dir;
};
const manager = (dir: string, o: Partial<ConstructorParameters<typeof UserNamespaceManager>[0]> = {}) => {
  const m = new UserNamespaceManager({
    podsDir: dir,
    idsPerPod: 65536,
    kubeletRange: defaultKubeletMapping(65536),
    maxPods: 110,
    ...o,
  });
  m.start();
  return m;
};
const podDir = (dir: string, uid: string) => {
  mkdirSync(join(dir, uid), { recursive: true });
  return join(dir, uid);
};
/** The file as a Go kubelet v1.36 writes it (json.Marshal of its userNamespace). */
const goFile = (hostId: number) =>
  `{"uidMappings":[{"hostId":${hostId},"containerId":0,"length":65536}],"gidMappings":[{"hostId":${hostId},"containerId":0,"length":65536}]}`;

describe('user namespace manager', () => {
  it("gives each pod a range of its own from 65536 up, in upstream's file, and the same one again", () => {
    const dir = podsDir();
    const m = manager(dir);
    podDir(dir, 'a');
    podDir(dir, 'b');
    expect(m.mappingsFor('a').uidMappings).toEqual([{ hostId: 65536, containerId: 0, length: 65536 }]);
    expect(m.mappingsFor('b').uidMappings).toEqual([{ hostId: 131072, containerId: 0, length: 65536 }]);
    expect(readFileSync(join(dir, 'a', 'userns'), 'utf8')).toBe(goFile(65536));
    expect(m.mappingsFor('a').uidMappings[0].hostId).toBe(65536);
    expect(podUserNamespaceOptions(m.mappingsFor('b'))).toEqual({
      mode: 'POD',
      uids: [{ host_id: 131072, container_id: 0, length: 65536 }],
      gids: [{ host_id: 131072, container_id: 0, length: 65536 }],
    });
  });

  it("finds the ranges in use after a restart — a Go kubelet's files too — and gives a new pod a free one", () => {
    const dir = podsDir();
    writeFileSync(join(podDir(dir, 'go-pod'), 'userns'), goFile(65536));
    writeFileSync(join(podDir(dir, 'other'), 'userns'), goFile(196608));
    podDir(dir, 'no-userns');
    const m = manager(dir);
    expect([...m.allocations()]).toEqual([
      ['go-pod', 65536],
      ['other', 196608],
    ]);
    podDir(dir, 'new');
    expect(m.mappingsFor('new').uidMappings[0].hostId).toBe(131072);
    expect(m.mappingsFor('go-pod').uidMappings[0].hostId).toBe(65536);
  });

  it('releases a range with its pod: its file goes, and the range is given again', () => {
    const dir = podsDir();
    const m = manager(dir);
    podDir(dir, 'a');
    podDir(dir, 'b');
    m.mappingsFor('a');
    m.mappingsFor('b');
    // Pod a is known no more (its directory stays until the GC removes it); pod b's directory went.
    rmSync(join(dir, 'b'), { recursive: true });
    m.cleanupOrphans((uid) => uid === 'kept');
    expect([...m.allocations()]).toEqual([]);
    expect(() => readFileSync(join(dir, 'a', 'userns'))).toThrow(/ENOENT/);
    podDir(dir, 'c');
    expect(m.mappingsFor('c').uidMappings[0].hostId).toBe(65536);
    m.cleanupOrphans((uid) => uid === 'c');
    expect([...m.allocations()]).toEqual([['c', 65536]]);
  });

  it("refuses a file it did not write, and a range that does not fit, in upstream's words", () => {
    expect(() => decodeUserNamespace('{"uidMappings":[]}')).toThrow(
      'invalid user namespace configuration: no more than one mapping allowed.',
    );
    expect(() =>
      decodeUserNamespace(
        '{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}',
      ),
    ).toThrow('invalid user namespace configuration: GID and UID mapping should be identical');
    expect(() =>
      decodeUserNamespace(
        '{"uidMappings":[{"hostId":65536,"containerId":1,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":1,"length":65536}]}',
      ),
    ).toThrow('invalid user namespace configuration: UID 0 must be mapped');
    expect(() => decodeUserNamespace('{')).toThrow(/^invalid user namespace mappings file: /);
    const dir = podsDir();
    writeFileSync(join(podDir(dir, 'odd'), 'userns'), goFile(65536 + 1));
    expect(() => manager(dir)).toThrow(
      'record pod mappings for existing pod "odd": wrong user namespace offset specified 65537',
    );
    const twice = podsDir();
    writeFileSync(join(podDir(twice, 'a'), 'userns'), goFile(65536));
    writeFileSync(join(podDir(twice, 'b'), 'userns'), goFile(65536));
    expect(() => manager(twice)).toThrow(
      'record pod mappings for existing pod "b": range picked for pod "b" already taken',
    );
    expect(() => manager(podsDir(), { kubeletRange: { firstId: 0, length: 2 ** 31 } })).toThrow(
      'kubelet user assigned ID 0 must be greater or equal to 65536',
    );
    expect(() => manager(podsDir(), { kubeletRange: { firstId: 65536, length: 65536 * 10 } })).toThrow(
      'kubelet user assigned IDs are not enough to support 110 pods',
    );
    expect(() => manager(podsDir(), { idsPerPod: 1000 })).toThrow(
      'kubelet user namespace length 1000 is not a multiple of 65536',
    );
  });

  it('runs out of ranges with a message when every one is taken', () => {
    const dir = podsDir();
    const m = manager(dir, { kubeletRange: { firstId: 65536, length: 2 * 65536 }, maxPods: 2 });
    for (const uid of ['a', 'b', 'c']) podDir(dir, uid);
    m.mappingsFor('a');
    m.mappingsFor('b');
    expect(() => m.mappingsFor('c')).toThrow(
      'create user namespace: could not find an empty slot to allocate a user namespace',
    );
  });
});

describe("the kubelet's ID range", () => {
  const passwd = join(root, 'passwd');
  writeFileSync(passwd, 'root:x:0:0:root:/root:/bin/sh\nkubelet:x:999:999::/var/lib/kubelet:/usr/sbin/nologin\n');
  const noKubelet = join(root, 'passwd-plain');
  writeFileSync(noKubelet, 'root:x:0:0:root:/root:/bin/sh\n');

  it("is every ID above the first pod range without a kubelet user, else that user's subordinate IDs", () => {
    expect(kubeletMapping(65536, { passwdFile: noKubelet })).toEqual({ firstId: 65536, length: 2 ** 32 - 65536 });
    expect(defaultKubeletMapping(131072)).toEqual({ firstId: 131072, length: 2 ** 32 - 131072 });
    const getsubids = (args: string[]) => `0: kubelet ${args[0] === '-g' ? 65536 : 65536} 2147483648\n`;
    expect(kubeletMapping(65536, { passwdFile: passwd, getsubids })).toEqual({ firstId: 65536, length: 2147483648 });
    const missing = () => {
      throw Object.assign(new Error('spawn getsubids ENOENT'), { code: 'ENOENT' });
    };
    expect(kubeletMapping(65536, { passwdFile: passwd, getsubids: missing })).toEqual(defaultKubeletMapping(65536));
    expect(() =>
      kubeletMapping(65536, {
        passwdFile: passwd,
        getsubids: (args) => (args[0] === '-g' ? '0: kubelet 131072 65536\n' : '0: kubelet 65536 65536\n'),
      }),
    ).toThrow('mismatched subuids and subgids for user "kubelet"');
    expect(() => parseGetSubIds('0: kubelet 65536\n')).toThrow('invalid line "0: kubelet 65536\\n"');
    expect(() => parseGetSubIds('0: kubelet 1 2\n1: kubelet 3 4\n')).toThrow(/it must contain only one line/);
  });
});
