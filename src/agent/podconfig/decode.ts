/**
 * Decodes manifest text (YAML or JSON, one or many documents, Pod or PodList) into validated pods.
 * Every problem is returned with its document number and reason; valid pods are kept. Decoding is
 * bounded so that no manifest can exhaust memory or throw past this function: at most
 * MAX_MANIFEST_BYTES of text (upstream's 10 MiB), MAX_DOCUMENTS documents, MAX_ALIASES alias
 * expansions per document (a "billion laughs" document fails), MAX_DEPTH levels of nesting and
 * MAX_NODES values per document (the last three lib/bounded-yaml.ts's). Text whose brackets nest
 * deeper than MAX_DEPTH, or open more than MAX_NODES collections, is refused whole before it is parsed.
 */
import { parseAllDocuments } from 'yaml';
import type { Pod } from '../../api/types.js';
import { validatePod } from '../../api/validate.js';
import { messageOf } from '../../lib/errors.js';
import { boundsError, bracketsError, MAX_ALIASES } from '../../lib/bounded-yaml.js';

/** Upstream's cap on a manifest (file or URL body). */
export const MAX_MANIFEST_BYTES = 10 * 1024 * 1024;
export const MAX_DOCUMENTS = 1000;

/** The outcome of decoding one manifest: the pods that are valid and one message per problem. */
export interface DecodeResult {
  pods: Pod[];
  errors: string[];
}

/** A field's value for a message: strings as they are, anything else as JSON. */
const scalar = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

function decodeObject(obj: unknown, where: string, out: DecodeResult): void {
  if (obj === null || obj === undefined) return;
  if (typeof obj !== 'object' || Array.isArray(obj)) {
    out.errors.push(`${where}: not an object`);
    return;
  }
  const o = obj as Record<string, unknown>;
  if (o.kind === 'PodList' || o.kind === 'List') {
    const items = Array.isArray(o.items) ? o.items : [];
    items.forEach((it, i) =>
      decodeObject({ kind: 'Pod', apiVersion: 'v1', ...(it as object) }, `${where} items[${i}]`, out),
    );
    return;
  }
  if (o.kind !== undefined && o.kind !== 'Pod') {
    out.errors.push(`${where}: kind "${scalar(o.kind)}" is not Pod or PodList`);
    return;
  }
  if (o.apiVersion !== undefined && o.apiVersion !== 'v1') {
    out.errors.push(`${where}: apiVersion "${scalar(o.apiVersion)}" is not v1`);
    return;
  }
  const v = validatePod(o);
  if (v.ok) out.pods.push(v.pod);
  else out.errors.push(`${where}: invalid pod: ${v.errors.join('; ')}`);
}

/**
 * `text` as one JSON document, or undefined when it is not one (YAML, several documents, a JSON
 * error: the YAML parser, which reads JSON too, then says what and where). Most manifests a tool
 * writes are JSON, and V8's own parser reads them many times faster than the YAML parser, with no
 * depth that could overflow it (the figures: docs/performance-history.md).
 */
function parseJson(text: string): { value: unknown } | undefined {
  const first = /\S/.exec(text)?.[0];
  if (first !== '{' && first !== '[') return undefined;
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return undefined;
  }
}

/** Parses `text`; `origin` names the file or URL in messages. Never throws. */
export function decodeManifests(text: string, origin: string): DecodeResult {
  const out: DecodeResult = { pods: [], errors: [] };
  if (Buffer.byteLength(text, 'utf8') > MAX_MANIFEST_BYTES) {
    out.errors.push(`${origin}: manifest is larger than ${MAX_MANIFEST_BYTES} bytes`);
    return out;
  }
  const brackets = bracketsError(text);
  if (brackets) {
    out.errors.push(`${origin}: ${brackets}`);
    return out;
  }
  const json = parseJson(text);
  if (json !== undefined) {
    const bad = boundsError(json.value);
    if (bad) out.errors.push(`${origin}: ${bad}`);
    else decodeObject(json.value, origin, out);
    return out;
  }
  let list;
  try {
    list = parseAllDocuments(text, { prettyErrors: false, uniqueKeys: false });
  } catch (err) {
    out.errors.push(`${origin}: ${messageOf(err)}`);
    return out;
  }
  const docs = Array.isArray(list) ? list : [list];
  if (docs.length > MAX_DOCUMENTS) {
    out.errors.push(`${origin}: more than ${MAX_DOCUMENTS} documents`);
    return out;
  }
  docs.forEach((doc, i) => {
    const where = docs.length > 1 ? `${origin} (document ${i + 1})` : origin;
    if (doc.errors.length) {
      out.errors.push(`${where}: ${doc.errors[0].message}`);
      return;
    }
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: MAX_ALIASES });
    } catch (err) {
      out.errors.push(`${where}: ${messageOf(err)}`);
      return;
    }
    const bad = boundsError(value);
    if (bad) {
      out.errors.push(`${where}: ${bad}`);
      return;
    }
    decodeObject(value, where, out);
  });
  return out;
}
