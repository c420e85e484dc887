/**
 * The message of Go's utilerrors.Aggregate (an ErrorList's, a PodSyncResult's): one error as it is, more in
 * brackets joined by ", ", a message repeated only once, as upstream prints them. Pure.
 */
export function aggregateMessage(errors: readonly string[]): string {
  const unique = [...new Set(errors)];
  return unique.length === 1 ? unique[0] : `[${unique.join(', ')}]`;
}
