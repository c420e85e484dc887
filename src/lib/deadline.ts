/**
 * A signal for an operation with a deadline: it aborts when `timeoutMs` have passed (reason: a TimeoutError, as
 * AbortSignal.timeout's) or when `signal` aborts (its reason). Not `AbortSignal.any([signal,
 * AbortSignal.timeout(ms)])`: Node 20's composite holds its timeout signal weakly, and a garbage collection can take
 * it before it fires, so the deadline never comes (nodejs/node#57736). Here the timer holds the controller. `done()`
 * clears the timer and the listener once the operation has ended.
 */
export function deadlineSignal(timeoutMs: number, signal?: AbortSignal): { signal: AbortSignal; done(): void } {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    timeoutMs,
  );
  const follow = () => controller.abort(signal?.reason);
  if (signal?.aborted) follow();
  else signal?.addEventListener('abort', follow, { once: true });
  return {
    signal: controller.signal,
    done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', follow);
    },
  };
}
