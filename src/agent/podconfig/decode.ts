/**
 * Decodes manifest text (YAML or JSON, one or many documents, Pod or PodList) into validated pods.
 * Every problem is returned with its document number and reason; valid pods are kept. Decoding is
 * bounded so that no manifest can exhaust memory or throw past this function: at most
 * MAX_MANIFEST_BYTES of text (upstream's 10 MiB), MAX_DOCUMENTS documents, MAX_ALIASES alias
 * expansions per document (a "billion laughs" document fails), MAX_DEPTH levels of nesting and
 * MAX_NODES values per document. Text whose brackets nest deeper than MAX_DEPTH, or open more than
 * MAX_NODES collections, is refused whole before it is parsed.
 */
import { parseAllDocuments } from 'yaml';
import type { Pod } from '../../api/types.js';
import { validatePod } from '../../api/validate.js';
import { messageOf } from '../../lib/errors.js';

/** Upstream's cap on a manifest (file or URL body). */
export const MAX_MANIFEST_BYTES = 10 * 1024 * 1024;
export const MAX_DOCUMENTS = 1000;
export const MAX_ALIASES = 100;
export const MAX_DEPTH = 100;
export const MAX_NODES = 1_000_000;

/** The outcome of decoding one manifest: the pods that are valid and one message per problem. */
export interface DecodeResult {
  pods: Pod[];
  errors: string[];
}

/** A field's value for a message: strings as they are, anything else as JSON. */
const scalar = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

const TOO_DEEP = `nested too deeply (more than ${MAX_DEPTH} levels)`;
const TOO_MANY = `too many values (more than ${MAX_NODES})`;

/**
 * Why `v` is too deep or too big, or undefined. Iterative: a deep value cannot overflow the
 * stack. A collection whose members would take the count past MAX_NODES fails before they are
 * queued (a list of millions is not copied to learn that it is too long).
 */
export function boundsError(v: unknown): string | undefined {
  const stack: [unknown, number][] = [[v, 1]];
  let nodes = 0;
  while (stack.length) {
    const [x, depth] = stack.pop()!;
    if (++nodes > MAX_NODES) return TOO_MANY;
    if (x === null || typeof x !== 'object') continue;
    if (depth > MAX_DEPTH) return TOO_DEEP;
    const members = Array.isArray(x) ? (x as unknown[]) : Object.values(x);
    if (nodes + stack.length + members.length > MAX_NODES) return TOO_MANY;
    for (const c of members) stack.push([c, depth + 1]);
  }
  return undefined;
}

/**
 * Refuses, before any parser reads it, text whose brackets nest deeper than MAX_DEPTH or open more
 * than MAX_NODES collections: "[" and "{" against "]" and "}", outside double-quoted strings
 * (JSON's and YAML's, with backslash escapes). Such text is what parsing costs most on: the YAML
 * parser recursed until the stack overflowed (40,000 levels took 0.6 s, a 10 MiB file of them
 * minutes), JSON.parse built millions of arrays (a 10 MiB file: 2 s and 290 MiB of heap nested,
 * 7 s flat). A manifest's own brackets come nowhere near either bound; only YAML text outside
 * double quotes (a comment, a plain, single-quoted or block scalar) holding over 100 unclosed
 * brackets would be refused wrongly.
 */
function bracketsError(text: string): string | undefined {
  let depth = 0;
  let opened = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // a double-quoted string: skip to its closing quote, over escaped characters
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_DEPTH) return TOO_DEEP;
      if (++opened > MAX_NODES) return TOO_MANY;
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
  }
  return undefined;
}

function decodeObject(obj: unknown, where: string, out: DecodeResult): void {
  if (obj === null || obj === undefined) return;
  if (typeof obj !== 'object' || Array.isArray(obj)) {
    out.errors.push(`${where}: not an object`);
    return;
  }
  const o = obj as Record<string, unknown>;
  if (o.kind === 'PodList' || o.kind === 'List') {
    const items = Array.isArray(o.items) ? o.items : [];
    items.forEach((it, i) => decodeObject({ kind: 'Pod', apiVersion: 'v1', ...(it as object) }, `${where} items[${i}]`, out));
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
 * writes are JSON, and V8's parser (iterative, so no depth can overflow it) is ~10× faster than
 * the YAML parser: 100 one-pod manifests decoded and validated in 4 ms instead of 39 under
 * --lite-mode.
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
