/**
 * A terminated container's message (upstream toKubeContainerStatus + getTerminationMessage):
 * the runtime's own message, then ": " and what the container wrote to its termination-message
 * file (the last 4 KiB, found through the mount whose container path is the annotated
 * terminationMessagePath) — or, with FallbackToLogsOnError, a non-zero exit and an empty file,
 * the last 80 lines / 2 KiB of its log.
 */
import { open } from 'node:fs/promises';
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
    s.annotations?.[ContainerTerminationMessagePolicyAnnotation] === 'FallbackToLogsOnError' && Number(s.exit_code) !== 0 && s.reason !== 'ContainerCannotRun';
  const mount = path ? (s.mounts ?? []).find((m) => m.container_path === path) : undefined;
  return { file: mount?.host_path, fallbackToLogs };
}

async function readTail(path: string, max: number): Promise<string | undefined> {
  let fh;
  try {
    fh = await open(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const { size } = await fh.stat();
    const len = Math.min(size, max);
    const buf = Buffer.alloc(len);
    await fh.read(buf, 0, len, size - len);
    return buf.toString('utf8');
  } finally {
    await fh.close();
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
