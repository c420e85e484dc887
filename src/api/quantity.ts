/**
 * Kubernetes resource quantities ("100m", "0.5", "64Mi", "1G", "1e3") as numbers (upstream
 * resource.Quantity). Pure. `undefined` for a malformed string.
 */

const suffixes: Record<string, number> = {
  '': 1,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** The value of a quantity (bytes, cores, counts). */
export function parseQuantity(q: string | number | undefined): number | undefined {
  if (q === undefined) return undefined;
  if (typeof q === 'number') return Number.isFinite(q) ? q : undefined;
  const m = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/.exec(q.trim());
  if (!m) return undefined;
  const base = Number(m[1]);
  if (m[2]) return base * 10 ** Number(m[2].slice(1));
  return base * suffixes[m[3] ?? ''];
}

/** A CPU quantity in millicores, rounded up as upstream's MilliValue. */
export function milliCpu(q: string | number | undefined): number | undefined {
  const v = parseQuantity(q);
  return v === undefined ? undefined : Math.ceil(Math.round(v * 1e6) / 1e3);
}

/** A byte quantity as an integer, rounded up as upstream's Value. */
export function bytes(q: string | number | undefined): number | undefined {
  const v = parseQuantity(q);
  return v === undefined ? undefined : Math.ceil(v);
}

/** Upstream IsHugePageResourceName: `hugepages-<size>`. */
export const isHugePageResource = (name: string): boolean => name.startsWith('hugepages-');

/** The resource of huge pages of `pageSizeKb` (upstream HugePageResourceName): 2048 kB → `hugepages-2Mi`. */
export const hugePageResourceName = (pageSizeKb: number): string => `hugepages-${binaryQuantity(pageSizeKb * 1024)}`;

/**
 * A whole number of bytes in Go's canonical BinarySI form: the largest binary suffix that keeps it whole ("0", "512",
 * "2Mi", "1Gi").
 */
export function binaryQuantity(n: number): string {
  const units = ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'];
  for (const [i, u] of units.entries()) {
    const size = 2 ** (10 * (units.length - i));
    if (n !== 0 && n % size === 0) return `${n / size}${u}`;
  }
  return String(n);
}

/**
 * A whole number in Go's canonical DecimalSI form: the largest power-of-1000 suffix that keeps it
 * whole ("0", "1500", "100M", "2k").
 */
export function decimalQuantity(n: number): string {
  const units = ['E', 'P', 'T', 'G', 'M', 'k'];
  for (const [i, u] of units.entries()) {
    const size = 1000 ** (units.length - i);
    if (n !== 0 && n % size === 0) return `${n / size}${u}`;
  }
  return String(n);
}

/** How Go formats a parsed quantity again: binary for `Ki`…`Ei` suffixes, else decimal. Pure. */
export const quantityFormat = (q: string): 'BinarySI' | 'DecimalSI' =>
  /[KMGTPE]i$/.test(q.trim()) ? 'BinarySI' : 'DecimalSI';

/** `n` as Go's Quantity.String() gives it in `format`. */
export const formatQuantity = (n: number, format: 'BinarySI' | 'DecimalSI'): string =>
  format === 'BinarySI' && Math.abs(n) >= 1024 ? binaryQuantity(n) : decimalQuantity(n);
