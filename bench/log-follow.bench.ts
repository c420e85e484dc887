/**
 * What following a container's log costs and how soon a line arrives (`kubectl logs -f`, /containerLogs?follow=true):
 * the kubelet's log reader (readLogs) on CRI log files, in this process.
 * - delivery: one file, a line appended every 50 ms with its write time in it, FOLLOWERS followers; the time from the
 *   write to the first follower's receipt (p50, p99), and the process's CPU over the run;
 * - idle: IDLE_FOLLOWERS followers of as many files nobody writes; the process's CPU over 10 s.
 * Prints a table and writes bench/results/log-follow.json. Not part of the tests.
 */
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { readLogs } from '../src/agent/runtime/logs/read-logs.js';
import { machine, percentile, report, round } from './lib.js';

const FOLLOWERS = Number(process.env.BENCH_LOG_FOLLOWERS ?? 100);
const IDLE_FOLLOWERS = Number(process.env.BENCH_LOG_IDLE_FOLLOWERS ?? 100);
const LINES = 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nowNs = () => (performance.timeOrigin + performance.now()) * 1e6;
const cpuMs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
};

const dir = mkdtempSync(join(tmpdir(), 'tsk-log-follow-'));
const running = { isRunning: async () => true };

async function delivery(followers: number) {
  const file = join(dir, `delivery-${followers}.log`);
  writeFileSync(file, '');
  const latenciesMs: number[] = [];
  const aborts: AbortController[] = [];
  for (let i = 0; i < followers; i++) {
    const abort = new AbortController();
    aborts.push(abort);
    const out = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        if (i === 0)
          for (const line of chunk.toString().split('\n')) if (line) latenciesMs.push((nowNs() - Number(line)) / 1e6);
        callback();
      },
    });
    void readLogs(file, { follow: true }, out, { ...running, signal: abort.signal });
  }
  await sleep(300);
  const cpu = process.cpuUsage();
  for (let i = 0; i < LINES; i++) {
    appendFileSync(file, `2026-11-30T00:00:00.000000000Z stdout F ${Math.round(nowNs())}\n`);
    await sleep(50);
  }
  await sleep(300);
  const used = cpuMs(cpu);
  for (const abort of aborts) abort.abort();
  return {
    followers,
    lines: latenciesMs.length,
    p50Ms: round(percentile(latenciesMs, 50)),
    p99Ms: round(percentile(latenciesMs, 99)),
    cpuPercent: round((used / (LINES * 50 + 600)) * 100),
  };
}

async function idle(followers: number) {
  const aborts: AbortController[] = [];
  for (let i = 0; i < followers; i++) {
    const abort = new AbortController();
    aborts.push(abort);
    const file = join(dir, `idle-${i}.log`);
    writeFileSync(file, '2026-11-30T00:00:00.000000000Z stdout F hello\n');
    const out = new Writable({ write: (_chunk, _encoding, callback) => callback() });
    void readLogs(file, { follow: true }, out, { ...running, signal: abort.signal });
  }
  await sleep(1000);
  const cpu = process.cpuUsage();
  await sleep(10_000);
  const used = cpuMs(cpu);
  for (const abort of aborts) abort.abort();
  return { followers, cpuPercent: round((used / 10_000) * 100) };
}

try {
  report('log-follow', {
    date: new Date().toISOString(),
    machine: machine(),
    deliveryOneFollower: await delivery(1),
    deliveryManyFollowers: await delivery(FOLLOWERS),
    idleFollowers: await idle(IDLE_FOLLOWERS),
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
