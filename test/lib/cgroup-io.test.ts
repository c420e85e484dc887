/**
 * A cgroup's block I/O as libcontainer reads it for cAdvisor (v1's blkio groups in order, v2's
 * io.stat in v1's names), and the device names cAdvisor gives it (the machine's disks, then the
 * sources of mounted filesystems).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseBlkioV1, parseIoStat, readCgroupIo } from '../../src/lib/cgroup-io.js';
import { deviceNamer, mountedDevices, parseScheduler, readDiskMap } from '../../src/lib/block-devices.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-cgio-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const write = (path: string, text: string) => {
  mkdirSync(join(dir, path, '..'), { recursive: true });
  writeFileSync(join(dir, path), text);
};

const V1 =
  '254:0 Read 8192\n254:0 Write 4096\n254:0 Sync 12288\n254:0 Async 0\n254:0 Discard 0\n254:0 Total 12288\n8:16 Read 1\nTotal 12289\n';

describe('cgroup I/O', () => {
  it("parses v1's per-device operations, skipping the file's Total line and what is not a device line", () => {
    const name = (ma: number, mi: number) => (ma === 254 ? '/dev/vda' : `${ma}:${mi}?`);
    expect(parseBlkioV1(V1 + 'garbage\n9:x Read 1\n', name)).toEqual([
      {
        major: 254,
        minor: 0,
        device: '/dev/vda',
        ops: { Read: 8192, Write: 4096, Sync: 12288, Async: 0, Discard: 0, Total: 12288 },
      },
      { major: 8, minor: 16, device: '8:16?', ops: { Read: 1 } },
    ]);
    expect(parseBlkioV1('Total 0\n')).toEqual([]);
  });

  it("maps v2's io.stat to v1's tables: bytes and operations by Read/Write, io.cost's counters; discards are not mapped (as runc)", () => {
    const io = parseIoStat(
      '254:0 rbytes=8192 wbytes=4096 rios=2 wios=1 dbytes=7 dios=1 cost.usage=1500000 cost.wait=3\n8:0 rbytes=1 wbytes=0 rios=1 wios=0\n',
    );
    expect(io.serviceBytes).toEqual([
      { major: 254, minor: 0, device: '', ops: { Read: 8192, Write: 4096 } },
      { major: 8, minor: 0, device: '', ops: { Read: 1, Write: 0 } },
    ]);
    expect(io.serviced[0].ops).toEqual({ Read: 2, Write: 1 });
    expect(io.costUsage[0].ops).toEqual({ Count: 1500000 });
    expect(io.costWait[0].ops).toEqual({ Count: 3 });
    expect(io.costIndebt).toEqual([]);
  });

  it("reads v1 groups in libcontainer's order: an empty BFQ file falls through to the throttle policy's", () => {
    write('v1/blkio.bfq.io_serviced_recursive', 'Total 0\n');
    write('v1/blkio.bfq.io_service_bytes_recursive', 'Total 0\n');
    write('v1/blkio.throttle.io_serviced_recursive', '254:0 Read 2\n254:0 Write 1\nTotal 3\n');
    write('v1/blkio.throttle.io_service_bytes_recursive', V1);
    const d = { version: 1 as const, cpuDir: '', memoryDir: '', blkioDir: join(dir, 'v1') };
    const io = readCgroupIo(d)!;
    expect(io.serviced).toEqual([{ major: 254, minor: 0, device: '', ops: { Read: 2, Write: 1 } }]);
    expect(io.serviceBytes.map((e) => e.ops.Write)).toEqual([4096, undefined]);
    // BFQ's counters win when they have entries.
    write('v1/blkio.bfq.io_serviced_recursive', '254:0 Read 9\n');
    write('v1/blkio.bfq.io_service_bytes_recursive', '254:0 Read 99\n');
    expect(readCgroupIo(d)!.serviceBytes[0].ops).toEqual({ Read: 99 });
    // No I/O yet: empty tables. No blkio hierarchy or files: nothing to report.
    const idle = { ...d, blkioDir: join(dir, 'idle') };
    write('idle/blkio.throttle.io_serviced_recursive', 'Total 0\n');
    expect(readCgroupIo(idle)).toMatchObject({ serviced: [], serviceBytes: [] });
    expect(readCgroupIo({ ...d, blkioDir: undefined })).toBeUndefined();
    expect(readCgroupIo({ ...d, blkioDir: join(dir, 'none') })).toBeUndefined();
    write('v2/io.stat', '254:0 rbytes=5 wbytes=6 rios=1 wios=1\n');
    expect(readCgroupIo({ version: 2, dir: join(dir, 'v2') }, () => '/dev/vda')!.serviceBytes).toEqual([
      { major: 254, minor: 0, device: '/dev/vda', ops: { Read: 5, Write: 6 } },
    ]);
  });

  it('bounds what one file can make: at most 256 devices', () => {
    const text = Array.from({ length: 1000 }, (_, i) => `8:${i} Read 1`).join('\n');
    expect(parseBlkioV1(text)).toHaveLength(256);
    expect(parseIoStat(text.replace(/ Read /g, ' rbytes=')).serviceBytes).toHaveLength(256);
  });
});

describe('block devices', () => {
  it("reads the machine's disks as cAdvisor's DiskMap: not loop, ram or sr devices; size in bytes; the scheduler in brackets", () => {
    write('sys/block/vda/dev', '254:0\n');
    write('sys/block/vda/size', '4096\n');
    write('sys/block/vda/queue/scheduler', 'none [mq-deadline] kyber bfq\n');
    write('sys/block/nvme0n1/dev', '259:0\n');
    write('sys/block/nvme0n1/size', '8\n');
    write('sys/block/loop0/dev', '7:0\n');
    write('sys/block/sr0/dev', '11:0\n');
    write('sys/block/ram0/dev', '1:0\n');
    expect(Object.fromEntries(readDiskMap(join(dir, 'sys/block')))).toEqual({
      '254:0': { name: 'vda', major: 254, minor: 0, size: 4096 * 512, scheduler: 'mq-deadline' },
      '259:0': { name: 'nvme0n1', major: 259, minor: 0, size: 8 * 512, scheduler: 'none' },
    });
    expect(readDiskMap(join(dir, 'nowhere')).size).toBe(0);
    expect(parseScheduler('none\n')).toBe('none');
    expect(parseScheduler('[none] mq-deadline\n')).toBe('none');
  });

  it('names a device /dev/<disk>, else by the source of a filesystem mounted from it, else ""', () => {
    const mounts = mountedDevices(
      [
        '27 1 254:1 / / rw,relatime - ext4 /dev/vda1 rw',
        '31 27 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
        '40 27 253:3 / /data rw shared:1 - xfs /dev/mapper/vg-data rw',
      ].join('\n'),
    );
    expect([...mounts]).toEqual([
      ['254:1', '/dev/vda1'],
      ['253:3', '/dev/mapper/vg-data'],
    ]);
    const name = deviceNamer(readDiskMap(join(dir, 'sys/block')), mounts);
    expect([name(254, 0), name(254, 1), name(253, 3), name(0, 28), name(7, 0)]).toEqual([
      '/dev/vda',
      '/dev/vda1',
      '/dev/mapper/vg-data',
      '',
      '',
    ]);
  });
});
