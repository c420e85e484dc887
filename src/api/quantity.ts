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

const decimalExponents: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const binaryPowers: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};

/**
 * A quantity exactly, in units of 10⁻⁹ (upstream keeps nano precision and rounds up below it), for sums that must not
 * pick up floating-point error ("50m" + "100m" is "150m"). Undefined for a malformed string.
 */
export function nanoUnits(q: string): bigint | undefined {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$/.exec(q.trim());
  if (!m || (!m[2] && !m[3])) return undefined;
  const [, sign, whole, fraction = '', exponent, suffix = ''] = m;
  const scale = (exponent ? Number(exponent) : (decimalExponents[suffix] ?? 0)) - fraction.length + 9;
  let value = BigInt(`${whole}${fraction}` || '0') * (binaryPowers[suffix] ?? 1n);
  if (scale >= 0) value *= 10n ** BigInt(scale);
  else {
    const unit = 10n ** BigInt(-scale);
    value = value / unit + (value % unit === 0n ? 0n : 1n);
  }
  return sign === '-' ? -value : value;
}

/**
 * `nano` (units of 10⁻⁹) as Go's Quantity.String() spells it in `format`: BinarySI for a whole number of at least 1024
 * ("1536Mi"), else the largest power-of-1000 suffix that keeps the number whole ("150m", "1500m", "2", "100k").
 */
export function formatNanoUnits(nano: bigint, format: 'BinarySI' | 'DecimalSI'): string {
  if (nano === 0n) return '0';
  const whole = nano % 1_000_000_000n === 0n ? nano / 1_000_000_000n : undefined;
  if (format === 'BinarySI' && whole !== undefined && (whole >= 1024n || whole <= -1024n))
    for (const suffix of ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki', '']) {
      const size = binaryPowers[suffix] ?? 1n;
      if (whole % size === 0n) return `${whole / size}${suffix}`;
    }
  for (const [suffix, exponent] of Object.entries(decimalExponents).sort((a, b) => b[1] - a[1])) {
    const unit = 10n ** BigInt(exponent + 9);
    if (nano % unit === 0n) return `${nano / unit}${suffix}`;
  }
  return `${nano}n`;
}
