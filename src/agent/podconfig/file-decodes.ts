/**
 * The decodes of the file source's manifests, by file: text that decodes in place
 * (`decodesInPlace`) at once, longer text in a bounded worker (decode-off-thread.ts) whose outcome
 * a later read takes, `onDone` asking for that read. Text that failed is remembered and not decoded
 * again until it changes. A decode whose file changes again, or is forgotten (gone, empty, back to
 * its last good text), is stopped, so a file rewritten faster than it decodes queues nothing.
 */
import { decodeManifests, type DecodeResult } from './decode.js';
import { decodesInPlace, type ManifestDecoder } from './decode-off-thread.js';

/** A file's text being decoded, or decoded: `result` once done. */
interface Decode {
  text: string;
  done: Promise<DecodeResult>;
  result?: DecodeResult;
  /** Stops the decode (its text was replaced or its file forgotten). */
  stop?: AbortController;
}

/** The file source's decodes (file.ts). */
export class FileDecodes {
  private readonly byFile = new Map<string, Decode>();

  constructor(
    private readonly decode: ManifestDecoder,
    private readonly onDone: () => void,
  ) {}

  /**
   * The outcome of decoding `text` of file `f`: at once when it decodes in place (or is known),
   * else undefined while a worker decodes it (`onDone` when it is done).
   */
  outcome(f: string, text: string, signal: AbortSignal | undefined): DecodeResult | undefined {
    const known = this.byFile.get(f);
    if (known?.text === text) return known.result;
    known?.stop?.abort();
    if (decodesInPlace(text)) {
      const result = decodeManifests(text, f);
      if (result.errors.length) this.byFile.set(f, { text, result, done: Promise.resolve(result) });
      else this.byFile.delete(f);
      return result;
    }
    const stop = new AbortController();
    const d: Decode = {
      text,
      stop,
      done: this.decode(text, f, { signal: signal ? AbortSignal.any([signal, stop.signal]) : stop.signal }),
    };
    d.done = d.done.then((result) => {
      d.result = result;
      if (this.byFile.get(f) === d && !signal?.aborted) this.onDone();
      return result;
    });
    this.byFile.set(f, d);
    return undefined;
  }

  /** The outcome of `f`'s decode once it is done (after `outcome` gave undefined). */
  wait(f: string): Promise<DecodeResult> {
    return this.byFile.get(f)!.done;
  }

  /** `f`'s outcome was taken: one without errors need not be remembered (the source keeps its pods). */
  taken(f: string, r: DecodeResult): void {
    if (!r.errors.length) this.byFile.delete(f);
  }

  /** Drops file `f`'s decode, stopping it if it still runs. */
  forget(f: string): void {
    this.byFile.get(f)?.stop?.abort();
    this.byFile.delete(f);
  }

  /** Forgets every file not in `files`. */
  keepOnly(files: readonly string[]): void {
    for (const f of [...this.byFile.keys()]) if (!files.includes(f)) this.forget(f);
  }
}
