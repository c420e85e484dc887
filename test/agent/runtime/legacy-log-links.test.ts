/** The legacy container log links (/var/log/containers) on a real filesystem. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  containerIdOfLink,
  legacyLogSymlink,
  linkContainerLog,
  removeContainerLogs,
  removeDanglingLinks,
} from '../../../src/agent/runtime/logs/legacy-log-links.js';

const ID = 'a'.repeat(64);
let dir: string;
const lexists = (p: string) => !!lstatSync(p, { throwIfNoEntry: false });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tsk-links-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('names', () => {
  it('is <pod>_<namespace>_<container>-<id>.log, cut to 255 bytes before the suffix as upstream', () => {
    expect(legacyLogSymlink('/var/log/containers', ID, 'main', 'web-0', 'prod')).toBe(
      `/var/log/containers/web-0_prod_main-${ID}.log`,
    );
    const long = legacyLogSymlink('/d', ID, 'c'.repeat(63), 'p'.repeat(253), 'n'.repeat(63));
    const name = long.slice('/d/'.length);
    expect(name.length).toBe(255);
    expect(name.endsWith('.log')).toBe(true);
    expect(name.startsWith('p'.repeat(251))).toBe(true);
  });

  it('reads the container ID back from a name (after the last dash, at least 6 characters)', () => {
    expect(containerIdOfLink(`web-0_prod_main-${ID}.log`)).toBe(ID);
    expect(containerIdOfLink('web-0_prod_main-abc.log')).toBeUndefined();
    expect(containerIdOfLink(`web-0_prod_main-${ID}.txt`)).toBeUndefined();
  });
});

describe('linking', () => {
  it('links to an existing log, making the links directory when it is missing', async () => {
    const log = join(dir, 'pod', 'main', '0.log');
    mkdirSync(join(dir, 'pod', 'main'), { recursive: true });
    writeFileSync(log, 'hello\n');
    const link = legacyLogSymlink(join(dir, 'containers'), ID, 'main', 'p', 'ns');
    expect(await linkContainerLog(link, log)).toBe(true);
    expect(readlinkSync(link)).toBe(log);
    expect(readFileSync(link, 'utf8')).toBe('hello\n');
  });

  it('makes no dangling link when the log does not exist', async () => {
    const link = join(dir, `p_ns_main-${ID}.log`);
    expect(await linkContainerLog(link, join(dir, 'missing.log'))).toBe(false);
    expect(lexists(link)).toBe(false);
  });

  it('fails, without replacing it, when the link is already there', async () => {
    const log = join(dir, '0.log');
    writeFileSync(log, '');
    const link = join(dir, `p_ns_main-${ID}.log`);
    symlinkSync('/elsewhere', link);
    await expect(linkContainerLog(link, log)).rejects.toThrow(/EEXIST/);
    expect(readlinkSync(link)).toBe('/elsewhere');
  });
});

describe('removal', () => {
  it("removes a container's log, its rotated copies and its link, and nothing of its neighbours", async () => {
    const logs = join(dir, 'pod', 'main');
    mkdirSync(logs, { recursive: true });
    for (const f of ['0.log', '0.log.20261124-101500.gz', '0.log.20261124-101600', '1.log', '1.log.20261124-101700'])
      writeFileSync(join(logs, f), 'x');
    const link = join(dir, `p_ns_main-${ID}.log`);
    symlinkSync(join(logs, '0.log'), link);
    await removeContainerLogs({ logPath: join(logs, '0.log'), link });
    expect(lexists(link)).toBe(false);
    for (const f of ['0.log', '0.log.20261124-101500.gz', '0.log.20261124-101600'])
      expect(existsSync(join(logs, f))).toBe(false);
    for (const f of ['1.log', '1.log.20261124-101700']) expect(existsSync(join(logs, f))).toBe(true);
    // Again: nothing left is not an error.
    await removeContainerLogs({ logPath: join(logs, '0.log'), link });
  });

  it('removes dangling links of containers gone or exited, keeps live ones and links whose log exists', async () => {
    const ids = { gone: 'g'.repeat(64), exited: 'e'.repeat(64), running: 'r'.repeat(64), present: 'p'.repeat(64) };
    writeFileSync(join(dir, 'present.log'), '');
    for (const [k, id] of Object.entries(ids))
      symlinkSync(join(dir, k === 'present' ? 'present.log' : `${k}-missing.log`), join(dir, `p_ns_c-${id}.log`));
    writeFileSync(join(dir, 'unrelated.txt'), '');
    const asked: string[] = [];
    const removed = await removeDanglingLinks(dir, async (id) => {
      asked.push(id);
      return id === ids.running;
    });
    expect(removed.sort()).toEqual([join(dir, `p_ns_c-${ids.exited}.log`), join(dir, `p_ns_c-${ids.gone}.log`)]);
    expect(lexists(join(dir, `p_ns_c-${ids.running}.log`))).toBe(true);
    expect(lexists(join(dir, `p_ns_c-${ids.present}.log`))).toBe(true);
    expect(existsSync(join(dir, 'unrelated.txt'))).toBe(true);
    // The runtime is asked only about dangling links.
    expect(asked.sort()).toEqual([ids.exited, ids.gone, ids.running]);
  });

  it('does nothing when the links directory does not exist', async () => {
    expect(await removeDanglingLinks(join(dir, 'none'), async () => false)).toEqual([]);
  });
});
