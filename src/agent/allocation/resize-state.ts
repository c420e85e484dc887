/** Where a pod's in-place resize stands: its PodResizePending and PodResizeInProgress conditions. */
export interface ResizeState {
  /** The spec asks for resources the node cannot give now (Deferred) or ever (Infeasible). */
  pending?: { reason: 'Deferred' | 'Infeasible'; message: string };
  /** The allocated resources are not all applied yet; `error`: why the last attempt failed. */
  inProgress?: { error?: string };
}
