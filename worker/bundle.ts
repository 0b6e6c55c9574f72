/**
 * Builds the RolloutWorkflow bundle into a file: `tsx worker/bundle.ts OUT`. The controller runs it as a child
 * process, so webpack's memory (≈ 130 MB) is given back to the system instead of staying in the controller's heap.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';

const out = process.argv[2];
if (!out) throw new Error('usage: tsx worker/bundle.ts OUT');
const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
const { code } = await bundleWorkflowCode({ workflowsPath, logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } });
writeFileSync(out, code);
