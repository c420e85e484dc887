/**
 * Go's strconv parsing where configuration values follow it (flags, the CPU and topology
 * managers' policy options): what it accepts and its error text, which upstream's messages embed.
 * Pure.
 */

/** Go's strconv.ParseBool; undefined for anything it refuses. */
export function parseGoBool(raw: string): boolean | undefined {
  if (/^(1|t|T|TRUE|true|True)$/.test(raw)) return true;
  if (/^(0|f|F|FALSE|false|False)$/.test(raw)) return false;
  return undefined;
}

/** strconv.ParseBool's error for `raw`. */
export const parseBoolError = (raw: string): string =>
  `strconv.ParseBool: parsing ${JSON.stringify(raw)}: invalid syntax`;
