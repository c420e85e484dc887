/**
 * Decoding long manifests in a bounded worker thread: the same pods as decoding in place, the
 * event loop free meanwhile, and a manifest too costly to decode stopped by its deadline or its
 * heap limit and reported, not run to the end.
 */
import { describe, expect, it } from 'vitest';
import { decodeManifests } from '../../../src/agent/podconfig/decode.js';
import { decodeManifestsOffThread, OFF_THREAD_BYTES } from '../../../src/agent/podconfig/decode-off-thread.js';

const podList = (n: number) =>
  `apiVersion: v1\nkind: PodList\nitems:\n${Array.from(
    { length: n },
    (_, i) =>
      `- metadata: {name: p${i}, labels: {app: a${i}}}\n  spec:\n    containers:\n    - name: c\n      image: busybox\n      command: [sleep, "${i}"]\n`,
  ).join('')}`;
/** 200,000 YAML values: seconds to parse under --lite-mode, and ~1 KB of heap each. */
const heavy = `a: [${'b,'.repeat(200_000)}c]\n`;

/** Runs `f`, counting the turns the event loop took meanwhile. */
async function turnsDuring<T>(f: () => Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  const tick = setInterval(() => turns++, 1);
  try {
    return { value: await f(), turns };
  } finally {
    clearInterval(tick);
  }
}

describe('decodeManifestsOffThread', () => {
  it('decodes a long manifest in a worker to the pods decoding in place gives, and the event loop runs meanwhile', async () => {
    const text = podList(300);
    expect(text.length).toBeGreaterThan(OFF_THREAD_BYTES);
    const { value, turns } = await turnsDuring(() => decodeManifestsOffThread(text, 'list.yaml'));
    expect(value).toEqual(decodeManifests(text, 'list.yaml'));
    expect(value.pods).toHaveLength(300);
    expect(value.pods[299].spec.containers[0].command).toEqual(['sleep', '299']);
    expect(turns).toBeGreaterThan(0);
  });

  it('decodes short text in place', async () => {
    const { value, turns } = await turnsDuring(() => decodeManifestsOffThread(podList(2), 'short.yaml'));
    expect(value.pods.map((p) => p.metadata.name)).toEqual(['p0', 'p1']);
    expect(turns).toBe(0);
  });

  it('errors in a long manifest come back with their document and reason', async () => {
    const text = `${podList(200)}---\nkind: Pod\napiVersion: v1\nmetadata: {name: bad}\nspec: {containers: [{name: c}]}\n`;
    const r = await decodeManifestsOffThread(text, 'two.yaml');
    expect(r.pods).toHaveLength(200);
    expect(r.errors).toEqual(decodeManifests(text, 'two.yaml').errors);
    expect(r.errors[0]).toMatch(/^two\.yaml \(document 2\): invalid pod: .*image/);
  });

  it('stops a decode that runs past its deadline and says so', async () => {
    const r = await decodeManifestsOffThread(heavy, 'heavy.yaml', { deadlineMs: 200 });
    expect(r).toEqual({
      pods: [],
      errors: ['heavy.yaml: too large or too complex to decode (took longer than 0.2 s)'],
    });
  });

  it('stops a decode whose heap passes its limit and says so', async () => {
    const r = await decodeManifestsOffThread(heavy, 'heavy.yaml', { deadlineMs: 60_000, maxHeapMb: 16 });
    expect(r).toEqual({
      pods: [],
      errors: ['heavy.yaml: too large or too complex to decode (needed more than 16 MiB)'],
    });
  });

  it('stops when aborted', async () => {
    const ac = new AbortController();
    const pending = decodeManifestsOffThread(heavy, 'heavy.yaml', { signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    expect(await pending).toEqual({ pods: [], errors: ['heavy.yaml: could not be decoded: aborted'] });
  });
});
