/**
 * Go's strconv parsing where configuration values follow it (flags, the CPU and topology
 * managers' policy options, CPU lists, the systemd watchdog's environment, node log queries): what
 * it accepts and its error text, which upstream's messages embed.
 * Pure.
 */

/** Go's strconv.ParseBool; undefined for anything it refuses. */
export function parseGoBool(raw: string): boolean | undefined {
  if (/^(1|t|T|TRUE|true|True)$/.test(raw)) return true;
  if (/^(0|f|F|FALSE|false|False)$/.test(raw)) return false;
  return undefined;
}

/** Go's strconv.Atoi (decimal, an optional sign); throws its error for anything it refuses. */
export function goAtoi(raw: string): number {
  if (!/^[+-]?\d+$/.test(raw)) throw new Error(`strconv.Atoi: parsing ${JSON.stringify(raw)}: invalid syntax`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw new Error(`strconv.Atoi: parsing ${JSON.stringify(raw)}: value out of range`);
  return n;
}

/** strconv.ParseBool's error for `raw`. */
export const parseBoolError = (raw: string): string =>
  `strconv.ParseBool: parsing ${JSON.stringify(raw)}: invalid syntax`;
