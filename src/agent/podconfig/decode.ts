/**
 * Decodes manifest text (YAML or JSON, one or many documents, Pod or PodList) into validated pods.
 * Every problem is returned with its document number and reason; valid pods are kept.
 */
import { parseAllDocuments } from 'yaml';
import type { Pod } from '../../api/types.js';
import { validatePod } from '../../api/validate.js';

/** The outcome of decoding one manifest: the pods that are valid and one message per problem. */
export interface DecodeResult { pods: Pod[]; errors: string[] }

function decodeObject(obj: unknown, where: string, out: DecodeResult): void {
  if (obj === null || obj === undefined) return;
  if (typeof obj !== 'object' || Array.isArray(obj)) { out.errors.push(`${where}: not an object`); return; }
  const o = obj as Record<string, unknown>;
  if (o.kind === 'PodList' || o.kind === 'List') {
    const items = Array.isArray(o.items) ? o.items : [];
    items.forEach((it, i) => decodeObject({ kind: 'Pod', apiVersion: 'v1', ...(it as object) }, `${where} items[${i}]`, out));
    return;
  }
  if (o.kind !== undefined && o.kind !== 'Pod') { out.errors.push(`${where}: kind "${String(o.kind)}" is not Pod or PodList`); return; }
  if (o.apiVersion !== undefined && o.apiVersion !== 'v1') { out.errors.push(`${where}: apiVersion "${String(o.apiVersion)}" is not v1`); return; }
  const v = validatePod(o);
  if (v.ok) out.pods.push(v.pod);
  else out.errors.push(`${where}: invalid pod: ${v.errors.join('; ')}`);
}

/** Parses `text`; `origin` names the file or URL in messages. */
export function decodeManifests(text: string, origin: string): DecodeResult {
  const out: DecodeResult = { pods: [], errors: [] };
  const docs = parseAllDocuments(text, { prettyErrors: false });
  const list = Array.isArray(docs) ? docs : [docs];
  list.forEach((doc, i) => {
    const where = list.length > 1 ? `${origin} (document ${i + 1})` : origin;
    if (doc.errors.length) { out.errors.push(`${where}: ${doc.errors[0].message}`); return; }
    decodeObject(doc.toJS(), where, out);
  });
  return out;
}
