/**
 * An exec / attach / port-forward request as the node API takes it (path and query validated) and the agent turns it
 * into the runtime's streaming URL: the one shape both sides of that seam share.
 */

/** Which streams an exec/attach asked for. */
export interface StreamFlags {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** An exec / attach / port-forward request, after path and query validation. */
export type StreamRequest =
  | {
      kind: 'exec';
      namespace: string;
      podName: string;
      podUid?: string;
      containerName: string;
      command: string[];
      flags: StreamFlags;
    }
  | { kind: 'attach'; namespace: string; podName: string; podUid?: string; containerName: string; flags: StreamFlags }
  | { kind: 'portForward'; namespace: string; podName: string; podUid?: string; ports: number[] };
