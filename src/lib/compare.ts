/**
 * Code-unit order of two strings (byte order for ASCII), as Go's `<` on strings and sort.Strings:
 * for names, label pairs and RFC 3339 timestamps. Never `localeCompare`, which orders by the
 * locale's collation and runs ICU.
 */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
