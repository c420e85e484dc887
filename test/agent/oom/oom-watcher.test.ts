/**
 * The OOM watcher: the kernel's OOM reports as upstream's cAdvisor oomparser reads them (Linux ≥ 5.0 and before),
 * SystemOOM events for the kills of a whole machine's OOM only, read from a log as /dev/kmsg gives it, each kill
 * reported once across restarts of the kubelet within a boot; and the real /dev/kmsg read without blocking.
 */
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { constants, accessSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KmsgReader, parseKmsgLines } from '../../../src/agent/oom/kmsg.js';
import { OomParser, systemOomMessage, type OomInstance } from '../../../src/agent/oom/oom-parser.js';
import { OOM_STATE_FILE, OomWatcher } from '../../../src/agent/oom/oom-watcher.js';
import { createLogger } from '../../../src/lib/logger.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-oom-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A global OOM as Linux 6.1 logs it: the summary has no oom_memcg, the kill line names the process. */
const GLOBAL_OOM = [
  'stress invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, oom_score_adj=0',
  'CPU: 1 PID: 4242 Comm: stress Not tainted 6.1.0-13-amd64 #1  Debian 6.1.55-1',
  'Tasks state (memory values in pages):',
  'oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice/user-0.slice/session-1.scope,task=stress,pid=4242,uid=0',
  'Out of memory: Killed process 4242 (stress) total-vm:1052000kB, anon-rss:1000000kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:2000kB oom_score_adj:0',
];
/** A container's OOM at its cgroup's limit (Linux ≥ 5.0). */
const MEMCG_OOM = [
  'stress invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=1000',
  'memory: usage 102400kB, limit 102400kB, failcnt 42',
  'oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=abc,mems_allowed=0,oom_memcg=/kubepods/burstable/pod1/abc,task_memcg=/kubepods/burstable/pod1/abc,task=stress,pid=5151,uid=0',
  'Memory cgroup out of memory: Killed process 5151 (stress) total-vm:110000kB, anon-rss:102000kB',
];
/** The same before Linux 5.0. */
const LEGACY_MEMCG_OOM = [
  'stress invoked oom-killer: gfp_mask=0x24000c0, order=0, oom_score_adj=0',
  'Task in /kubepods/burstable/pod1/abc killed as a result of limit of /kubepods/burstable/pod1/abc',
  'Memory cgroup out of memory: Kill process 5151 (stress) score 1000 or sacrifice child',
  'Killed process 5151 (stress) total-vm:110000kB, anon-rss:102000kB, file-rss:0kB',
];

function parse(messages: string[]): OomInstance[] {
  const parser = new OomParser();
  return messages.flatMap((m) => parser.push(m) ?? []);
}

describe("the kernel's OOM reports", () => {
  it('a global OOM is a system OOM, named by its victim', () => {
    const [oom] = parse(['unrelated line', ...GLOBAL_OOM]);
    expect(oom).toEqual({
      pid: 4242,
      processName: 'stress',
      containerName: '/',
      victimContainerName: '/',
      constraint: '',
    });
    expect(systemOomMessage(oom)).toBe('System OOM encountered, victim process: stress, pid: 4242');
  });

  it("a cgroup's OOM is not, in either kernel's words", () => {
    const [modern, legacy] = parse([...MEMCG_OOM, ...LEGACY_MEMCG_OOM]);
    expect(modern).toMatchObject({
      pid: 5151,
      processName: 'stress',
      victimContainerName: '/kubepods/burstable/pod1/abc',
      constraint: 'CONSTRAINT_MEMCG',
    });
    expect(legacy).toMatchObject({ pid: 5151, victimContainerName: '/kubepods/burstable/pod1/abc' });
    expect([modern, legacy].map(systemOomMessage)).toEqual([undefined, undefined]);
  });

  it('without the kill line naming a process, the message says only that it happened', () => {
    expect(
      systemOomMessage({ pid: 0, processName: '', containerName: '/', victimContainerName: '/', constraint: '' }),
    ).toBe('System OOM encountered');
  });

  it("reads /dev/kmsg's records: sequence and message, continuation lines skipped", () => {
    expect(
      parseKmsgLines(['6,25177,28036782548,-;veth0: entered promiscuous mode', ' SUBSYSTEM=net', ' DEVICE=n3', 'junk']),
    ).toEqual([{ sequence: 25177, message: 'veth0: entered promiscuous mode' }]);
  });
});

describe('the OOM watcher', () => {
  const bootID = 'b0075e11-0000-4000-8000-000000000001';
  let sequence = 100;
  const record = (message: string) => `3,${sequence++},${sequence * 1000},-;${message}\n SUBSYSTEM=test\n`;

  function watcher(log: string, boot = bootID) {
    const events: string[] = [];
    const w = new OomWatcher({
      reader: KmsgReader.open(log),
      rootDir: dir,
      bootID: boot,
      systemOom: (message) => events.push(message),
      logger: createLogger({ level: 'fatal' }),
    });
    return { w, events };
  }

  it('reports each system OOM once, including one that happened before it started, and once across restarts', async () => {
    const log = join(dir, 'kmsg');
    writeFileSync(log, [...GLOBAL_OOM, ...MEMCG_OOM].map(record).join(''));
    const first = watcher(log);
    await first.w.poll();
    expect(first.events).toEqual(['System OOM encountered, victim process: stress, pid: 4242']);
    // Written while it runs, in two reads' worth: the report's lines may come apart.
    const next = GLOBAL_OOM.map((m) => m.replace(/4242/g, '777').replace(/stress/g, 'java'));
    appendFileSync(log, next.slice(0, 2).map(record).join(''));
    await first.w.poll();
    appendFileSync(log, next.slice(2).map(record).join(''));
    await first.w.poll();
    await first.w.poll();
    expect(first.events).toEqual([
      'System OOM encountered, victim process: stress, pid: 4242',
      'System OOM encountered, victim process: java, pid: 777',
    ]);
    expect(JSON.parse(readFileSync(join(dir, OOM_STATE_FILE), 'utf8'))).toEqual({ bootID, sequence: sequence - 1 });
    // A restarted kubelet reads the log from its start again and reports nothing twice.
    const restarted = watcher(log);
    await restarted.w.poll();
    expect(restarted.events).toEqual([]);
    appendFileSync(log, GLOBAL_OOM.map(record).join(''));
    await restarted.w.poll();
    expect(restarted.events).toEqual(['System OOM encountered, victim process: stress, pid: 4242']);
    // After a reboot the log is another: what it holds is reported.
    const rebooted = watcher(log, 'b0075e11-0000-4000-8000-000000000002');
    await rebooted.w.poll();
    expect(rebooted.events).toHaveLength(3);
  });
});

/** Whether this process may read the kernel's log (root, and a /dev/kmsg). */
function kmsgReadable(): boolean {
  try {
    accessSync('/dev/kmsg', constants.R_OK);
    return existsSync('/dev/kmsg');
  } catch {
    return false;
  }
}

describe.skipIf(!kmsgReadable())('/dev/kmsg', () => {
  it('is read to its newest record without blocking, then a read finds nothing new', () => {
    const reader = KmsgReader.open('/dev/kmsg');
    try {
      const records = reader.readAvailable();
      expect(records.length).toBeGreaterThan(0);
      for (let i = 1; i < records.length; i++) expect(records[i].sequence).toBeGreaterThan(records[i - 1].sequence);
      const again = reader.readAvailable();
      for (const r of again) expect(r.sequence).toBeGreaterThan(records.at(-1)!.sequence);
      // This machine's own OOM reports (the tests' containers killed at their limits, if any ran), parsed whole.
      const parser = new OomParser();
      for (const oom of records.flatMap((r) => parser.push(r.message) ?? [])) {
        expect(oom.pid).toBeGreaterThan(0);
        expect(oom.processName).not.toBe('');
      }
    } finally {
      reader.close();
    }
  });
});
