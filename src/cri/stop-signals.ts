/**
 * Stop signals between the Kubernetes API and CRI (ContainerStopSignals): the API names a signal as
 * the kernel does ("SIGTERM", "SIGRTMIN+1", "SIGRTMAX-2"), CRI's `Signal` enum spells the real-time
 * offsets out ("SIGRTMINPLUS1", "SIGRTMAXMINUS2") and has RUNTIME_DEFAULT for "none given". Pure.
 */

/** CRI's name of the API signal `name`; RUNTIME_DEFAULT for a name CRI does not have, as upstream. */
export function criSignalOf(name: string): string {
  const cri = name.replace('+', 'PLUS').replace('-', 'MINUS');
  return CRI_SIGNALS.has(cri) ? cri : 'RUNTIME_DEFAULT';
}

/** The API name of the CRI signal `cri`; undefined for RUNTIME_DEFAULT (the runtime's own choice) or an unknown one. */
export function apiSignalOf(cri: string | undefined): string | undefined {
  if (cri === undefined || !CRI_SIGNALS.has(cri)) return undefined;
  return cri.replace('PLUS', '+').replace('MINUS', '-');
}

/** CRI's signals (runtime.v1 Signal) but RUNTIME_DEFAULT. */
const CRI_SIGNALS: ReadonlySet<string> = new Set(
  [
    ...['ABRT', 'ALRM', 'BUS', 'CHLD', 'CLD', 'CONT', 'FPE', 'HUP', 'ILL', 'INT', 'IO', 'IOT', 'KILL', 'PIPE'],
    ...['POLL', 'PROF', 'PWR', 'QUIT', 'SEGV', 'STKFLT', 'STOP', 'SYS', 'TERM', 'TRAP', 'TSTP', 'TTIN', 'TTOU'],
    ...['URG', 'USR1', 'USR2', 'VTALRM', 'WINCH', 'XCPU', 'XFSZ', 'RTMIN', 'RTMAX'],
    ...Array.from({ length: 15 }, (_, i) => `RTMINPLUS${i + 1}`),
    ...Array.from({ length: 14 }, (_, i) => `RTMAXMINUS${i + 1}`),
  ].map((s) => `SIG${s}`),
);
