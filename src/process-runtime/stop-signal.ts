/**
 * The signal StopContainer sends first: the config's CRI `stop_signal` (ContainerStopSignals), else
 * SIGTERM — the embedded runtime's "images" carry no STOPSIGNAL, so its default is containerd's for
 * an image without one. The status reports it as containerd does. Pure.
 */
import { constants } from 'node:os';
import type * as cri from '../cri/types.js';

/** Linux's real-time signal range as glibc (and so `kill -l`) numbers it: 32 and 33 are the C library's own. */
const SIGRTMIN = 34;
const SIGRTMAX = 64;

/** The CRI name of the signal that stops a container made with `config`. */
export function stopSignalOf(config: Pick<cri.ContainerConfig, 'stop_signal'>): string {
  const named = config.stop_signal;
  return named && named !== 'RUNTIME_DEFAULT' && killSignalOf(named) !== undefined ? named : 'SIGTERM';
}

/**
 * The kernel's number of the CRI signal `name` (SIGCLD is SIGCHLD; SIGRTMINPLUS3 is SIGRTMIN+3); undefined when none.
 */
export function killSignalOf(name: string): number | undefined {
  const realTime = /^SIGRT(MIN|MAX)(?:(PLUS|MINUS)(\d+))?$/.exec(name);
  if (realTime) {
    const offset = realTime[3] === undefined ? 0 : Number(realTime[3]) * (realTime[2] === 'PLUS' ? 1 : -1);
    const signal = (realTime[1] === 'MIN' ? SIGRTMIN : SIGRTMAX) + offset;
    return signal >= SIGRTMIN && signal <= SIGRTMAX ? signal : undefined;
  }
  const signals = constants.signals as Record<string, number | undefined>;
  return signals[name === 'SIGCLD' ? 'SIGCHLD' : name];
}
