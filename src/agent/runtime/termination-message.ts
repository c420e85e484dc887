/**
 * A terminated container's message (upstream toKubeContainerStatus + getTerminationMessage):
 * the runtime's own message, then ": " and what the container wrote to its termination-message
 * file (the last 4 KiB, found through the mount whose container path is the annotated
 * terminationMessagePath) — or, with FallbackToLogsOnError, a non-zero exit and an empty file,
 * the last 80 lines / 2 KiB of its log.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { Writable } from 'node:stream';
import type * as cri from '../../cri/types.js';
import { ContainerTerminationMessagePathAnnotation, ContainerTerminationMessagePolicyAnnotation } from './labels.js';
import { readLogs } from './logs/read-logs.js';

/** Upstream MaxContainerTerminationMessageLength, …LogLines, …LogLength. */
export const MAX_TERMINATION_MESSAGE_BYTES = 4096;
export const MAX_TERMINATION_LOG_LINES = 80;
export const MAX_TERMINATION_LOG_BYTES = 2048;

/** Where the message comes from (pure): the host file, and whether logs are the fallback. */
export function terminationMessageSource(s: cri.ContainerStatus): { file?: string; fallbackToLogs: boolean } {
  const path = s.annotations?.[ContainerTerminationMessagePathAnnotation] ?? '';
  const fallbackToLogs =
    s.annotations?.[ContainerTerminationMessagePolicyAnnotation] === 'FallbackToLogsOnError' &&
    Number(s.exit_code) !== 0 &&
    s.reason !== 'ContainerCannotRun';
  const mount = path ? (s.mounts ?? []).find((m) => m.container_path === path) : undefined;
  return { file: mount?.host_path, fallbackToLogs };
}

/** The last `max` bytes of a small local file (synchronous: the kubelet's own termination-log file). */
async function readTail(path: string, max: number): Promise<string | undefined> {
  let fd;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return undefined;
    const len = Math.min(st.size, max);
    const buf = Buffer.alloc(len);
    const n = readSync(fd, buf, 0, len, st.size - len);
    return buf.toString('utf8', 0, n);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

async function lastLogLines(path: string): Promise<string> {
  const chunks: Buffer[] = [];
  const sink = new Writable({
    write(c: Buffer, _e, cb) {
      chunks.push(c);
      cb();
    },
  });
  try {
    await readLogs(path, { tailLines: MAX_TERMINATION_LOG_LINES, limitBytes: MAX_TERMINATION_LOG_BYTES }, sink);
  } catch {
    return '';
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The message for an exited container's status. */
export async function terminationMessage(s: cri.ContainerStatus): Promise<string> {
  const src = terminationMessageSource(s);
  let msg = src.file ? ((await readTail(src.file, MAX_TERMINATION_MESSAGE_BYTES)) ?? '') : '';
  if (!msg && src.fallbackToLogs && s.log_path) msg = await lastLogLines(s.log_path);
  if (!msg) return s.message ?? '';
  return s.message ? `${s.message}: ${msg}` : msg;
}
