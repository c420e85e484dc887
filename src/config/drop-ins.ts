/**
 * Drop-in configuration (`--config-dir`, upstream's kubelet drop-in directory, beta and on since
 * 1.30): every `*.conf` file under the directory, in lexical order of its path, is a
 * KubeletConfiguration fragment (YAML or JSON) applied over the config file as a JSON merge patch
 * (RFC 7386): objects merge, anything else (lists too) replaces, null removes. Flags still win
 * over both. A file that cannot be read or decoded stops the start with upstream's message.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { messageOf } from '../lib/errors.js';
import { parseYamlBounded, readTextBounded } from '../lib/bounded-yaml.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);

/** `patch` applied to `target` as a JSON merge patch (RFC 7386). Pure. */
export function mergePatch(target: Obj, patch: Obj): Obj {
  const out: Obj = { ...target };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = isObj(v) && isObj(out[k]) ? mergePatch(out[k] as Obj, v) : v;
  }
  return out;
}

/** Bounds: an operator's files, but a stray huge or looping one must not hang the start. */
const MAX_FILE_BYTES = 1 << 20;
const MAX_FILES = 1000;

/** The `*.conf` files under `dir` (and its subdirectories), in the order upstream's WalkDir visits them. */
async function dropInFiles(dir: string, out: string[] = []): Promise<string[]> {
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  for (const e of entries) {
    if (out.length >= MAX_FILES) throw new Error(`more than ${MAX_FILES} drop-in files under ${dir}`);
    const path = join(dir, e.name);
    if (e.isDirectory()) await dropInFiles(path, out);
    else if (e.name.endsWith('.conf')) out.push(path);
  }
  return out;
}

/** One drop-in as an object (its apiVersion and kind, when given, must be a KubeletConfiguration's). */
async function readDropIn(path: string): Promise<Obj> {
  const doc = (parseYamlBounded(await readTextBounded(path, MAX_FILE_BYTES), MAX_FILE_BYTES) ?? {}) as unknown;
  if (!isObj(doc)) throw new Error('not a KubeletConfiguration object');
  if (doc.apiVersion !== undefined && doc.apiVersion !== 'kubelet.config.k8s.io/v1beta1')
    throw new Error(`unknown apiVersion ${JSON.stringify(doc.apiVersion)}`);
  if (doc.kind !== undefined && doc.kind !== 'KubeletConfiguration')
    throw new Error(`unknown kind ${JSON.stringify(doc.kind)}`);
  return doc;
}

/** `base` with every drop-in of `dir` applied in order. */
export async function applyDropIns(base: Obj, dir: string): Promise<Obj> {
  let files: string[];
  try {
    files = await dropInFiles(dir);
  } catch (err) {
    throw new Error(`failed to read the kubelet drop-in directory "${dir}": ${messageOf(err)}`, { cause: err });
  }
  let out = base;
  for (const path of files) {
    let patch: Obj;
    try {
      patch = await readDropIn(path);
    } catch (err) {
      throw new Error(`failed to load kubelet dropin file, path: ${path}, error: ${messageOf(err)}`, { cause: err });
    }
    out = mergePatch(out, patch);
  }
  return out;
}
