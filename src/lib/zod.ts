/**
 * zod for the edge decoders (configuration, pod manifests) is the tree-shakable `zod/mini`, with
 * the English messages of classic zod, set here. Classic zod is ~700 KB of code to compile at every
 * start; what the schemas use of zod/mini is ~50 KB. Import this module for its effect, and
 * `* as z from 'zod/mini'` where schemas are built (member accesses on that namespace are what
 * the bundler can shake).
 */
import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

config(en());
