/** Parses a port-forward request's `?port=` (comma-separated or repeated, for WebSocket clients) as upstream; pure. */
export function portsFromQuery(q: URLSearchParams): number[] | { error: string } {
  const raw = q
    .getAll('port')
    .flatMap((p) => p.split(','))
    .map((p) => p.trim())
    .filter(Boolean);
  const ports: number[] = [];
  for (const p of raw) {
    const n = Number(p);
    if (!/^\d+$/.test(p) || n < 1 || n > 65535)
      return { error: `unable to parse "${p}" as a port: must be an integer between 1 and 65535` };
    ports.push(n);
  }
  return ports;
}
