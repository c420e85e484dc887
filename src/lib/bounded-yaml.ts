/**
 * Bounded decoding of YAML and JSON text that the kubelet reads from files and URLs (pod
 * manifests, its configuration, kubeconfigs, the credential provider config): no text can exhaust
 * the stack, the heap or the CPU. The bounds: MAX_ALIASES alias expansions per document (a
 * "billion laughs" document fails), MAX_DEPTH levels of nesting, MAX_NODES values; text whose
 * brackets nest deeper than MAX_DEPTH or open more than MAX_NODES collections is refused before
 * it is parsed, and a file is refused by its size before it is read.
 */
import { readFileSync, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { parse } from 'yaml';

export const MAX_ALIASES = 100;
export const MAX_DEPTH = 100;
export const MAX_NODES = 1_000_000;
/** A configuration file (the kubelet's, a kubeconfig, a drop-in) is at most this long. */
export const MAX_CONFIG_BYTES = 10 * 1024 * 1024;

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
export function bracketsError(text: string): string | undefined {
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

/**
 * One YAML (or JSON) document's value within the bounds: `maxBytes` of text, MAX_ALIASES,
 * MAX_DEPTH and MAX_NODES. Throws an Error saying which bound (or what the parser) refused.
 */
export function parseYamlBounded(text: string, maxBytes = MAX_CONFIG_BYTES): unknown {
  if (text.length > maxBytes || Buffer.byteLength(text, 'utf8') > maxBytes)
    throw new Error(`larger than ${maxBytes} bytes`);
  const brackets = bracketsError(text);
  if (brackets) throw new Error(brackets);
  const value: unknown = parse(text, { maxAliasCount: MAX_ALIASES });
  const bad = boundsError(value);
  if (bad) throw new Error(bad);
  return value;
}

/** Why a file of `st` is not read as text of at most `maxBytes`, or undefined. */
function fileError(st: { isFile(): boolean; size: number }, maxBytes: number): string | undefined {
  if (!st.isFile()) return 'not a regular file';
  if (st.size > maxBytes) return `larger than ${maxBytes} bytes`;
  return undefined;
}

/** A regular file's bytes, refused by its size (and kind) before it is read. Throws naming why. */
export async function readBytesBounded(path: string, maxBytes = MAX_CONFIG_BYTES): Promise<Buffer> {
  const bad = fileError(await stat(path), maxBytes);
  if (bad) throw new Error(bad);
  return readFile(path);
}

/** A regular file's text, refused by its size (and kind) before it is read. Throws naming why. */
export async function readTextBounded(path: string, maxBytes = MAX_CONFIG_BYTES): Promise<string> {
  return (await readBytesBounded(path, maxBytes)).toString('utf8');
}

/** readTextBounded, synchronously. */
export function readTextBoundedSync(path: string, maxBytes = MAX_CONFIG_BYTES): string {
  const bad = fileError(statSync(path), maxBytes);
  if (bad) throw new Error(bad);
  return readFileSync(path, 'utf8');
}
