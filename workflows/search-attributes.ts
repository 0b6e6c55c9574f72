/**
 * Custom search attributes RolloutWorkflow upserts, so rollouts can be found by phase or build in the Web UI
 * (`GlidepathPhase="Ramping"`). The dev server registers them at start (`--search-attribute`).
 */
import { defineSearchAttributeKey } from '@temporalio/common';

export const phaseKey = defineSearchAttributeKey('GlidepathPhase', 'KEYWORD');
export const targetBuildKey = defineSearchAttributeKey('GlidepathTargetBuild', 'KEYWORD');
export const currentBuildKey = defineSearchAttributeKey('GlidepathCurrentBuild', 'KEYWORD');

/** Every custom search attribute RolloutWorkflow upserts. */
export const searchAttributeKeys = [phaseKey, targetBuildKey, currentBuildKey];

/** Every custom search attribute, as `temporal server start-dev --search-attribute` takes them. */
export const searchAttributeFlags = searchAttributeKeys.map((k) => `${k.name}=Keyword`);
