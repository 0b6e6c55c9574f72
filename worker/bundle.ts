/**
 * Builds the RolloutWorkflow bundle into a file: `tsx worker/bundle.ts OUT`. The controller runs it as a child
 * process, so webpack's memory (≈ 130 MB) is given back to the system instead of staying in the controller's heap.
 */
import { writeFileSync } from 'node:fs';
import { rolloutBundle } from './controller.js';

const out = process.argv[2];
if (!out) throw new Error('usage: tsx worker/bundle.ts OUT');
writeFileSync(out, (await rolloutBundle()).code);
