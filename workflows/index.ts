/** The workflows the `glidepath` task queue runs (the bundler's entry point). */
export { RolloutWorkflow } from './rollout-workflow.js';
