/**
 * Remote command (exec/attach) protocol facts as pure functions: versions, negotiation, the
 * error-channel payloads, resize messages.
 */

/** Channel / stream ids. */
export const Channel = { stdin: 0, stdout: 1, stderr: 2, error: 3, resize: 4, close: 255 } as const;

/** SPDY `X-Stream-Protocol-Version` values we serve, most preferred first (upstream's list). */
export const spdyRemoteCommandProtocols = [
  'v5.channel.k8s.io',
  'v4.channel.k8s.io',
  'v3.channel.k8s.io',
  'v2.channel.k8s.io',
  'channel.k8s.io',
] as const;

/** WebSocket subprotocols we serve for remote command. */
export const wsRemoteCommandProtocols = [
  'v5.channel.k8s.io',
  'v4.channel.k8s.io',
  'v4.base64.channel.k8s.io',
  'base64.channel.k8s.io',
  'channel.k8s.io',
] as const;

/** The protocol generation: 1–3 plain-text errors, 4+ Status JSON, 5 CLOSE (WebSocket). */
export function protocolVersion(protocol: string): number {
  const m = /^v(\d)\./.exec(protocol);
  return m ? Number(m[1]) : 1;
}

/** How the command ended. */
export type CommandResult = { exitCode: number } | { error: string };

/**
 * The error-channel payload for `result` (undefined: send nothing). v4+: a meta/v1 Status
 * (NonZeroExitCode with an ExitCode cause); v1–v3: the message as text, nothing on success.
 */
export function statusPayload(result: CommandResult, version: number, command: readonly string[]): Buffer | undefined {
  let status: Record<string, unknown>;
  if ('error' in result)
    status = {
      metadata: {},
      status: 'Failure',
      message: result.error,
      reason: 'InternalError',
      details: { causes: [{ message: result.error }] },
      code: 500,
    };
  else if (result.exitCode === 0) status = { metadata: {}, status: 'Success' };
  else {
    status = {
      metadata: {},
      status: 'Failure',
      message: `command terminated with non-zero exit code: error executing command [${command.join(' ')}], exit code ${result.exitCode}`,
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: String(result.exitCode) }] },
    };
  }
  if (version >= 4) return Buffer.from(JSON.stringify(status));
  return status.status === 'Success' ? undefined : Buffer.from(String(status.message));
}

/** A terminal size. */
export interface TerminalSize {
  width: number;
  height: number;
}

/** Splits a resize byte stream into complete `{"Width":…,"Height":…}` messages; returns the rest. */
export function parseResizeMessages(buf: string): { sizes: TerminalSize[]; rest: string } {
  const sizes: TerminalSize[] = [];
  let start = buf.indexOf('{');
  while (start >= 0) {
    const end = buf.indexOf('}', start);
    if (end < 0) return { sizes, rest: buf.slice(start) };
    try {
      const o = JSON.parse(buf.slice(start, end + 1)) as { Width?: number; Height?: number };
      if (Number.isInteger(o.Width) && Number.isInteger(o.Height)) sizes.push({ width: o.Width!, height: o.Height! });
    } catch {
      /* a malformed message is skipped, as upstream logs and continues */
    }
    start = buf.indexOf('{', end + 1);
  }
  return { sizes, rest: '' };
}

/** Which streams an exec/attach request asked for (upstream NewOptions: tty drops stderr). */
export interface StreamOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** Parses exec/attach query flags as upstream (only "1" is true; a TTY drops stderr). */
export function streamOptionsFromQuery(q: URLSearchParams): StreamOptions | { error: string } {
  const on = (k: string) => q.get(k) === '1';
  const tty = on('tty');
  const o = { stdin: on('input'), stdout: on('output'), stderr: on('error') && !tty, tty };
  if (!o.stdin && !o.stdout && !o.stderr) return { error: 'you must specify at least 1 of stdin, stdout, stderr' };
  return o;
}
