/**
 * The worker thread of `decodeManifestsOffThread`: decodes the manifest text in `workerData` and
 * posts the DecodeResult. Built as an entry of its own (scripts/build.mjs: dist/decode-worker.js).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { decodeManifests } from './decode.js';

const { text, origin } = workerData as { text: string; origin: string };
parentPort?.postMessage(decodeManifests(text, origin));
