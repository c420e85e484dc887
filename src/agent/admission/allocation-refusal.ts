/** Why a manager could not allocate a pod's resources at admission (the CPU, device and topology managers). */
export interface AllocationRefusal {
  reason: string;
  message: string;
}

/**
 * Upstream's UnexpectedAdmissionError for an allocation that failed:
 * `Allocate failed due to <cause>, which is unexpected`.
 */
export const unexpectedAdmissionError = (cause: string): AllocationRefusal => ({
  reason: 'UnexpectedAdmissionError',
  message: `Allocate failed due to ${cause}, which is unexpected`,
});
