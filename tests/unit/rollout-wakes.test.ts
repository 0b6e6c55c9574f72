import { describe, expect, it } from '@jest/globals';
import type { DeploymentObservation } from '../../api/resource.js';
import { readinessOf, wakesRollout } from '../../kube/versioned-deployment.js';

const created: DeploymentObservation = {
  buildId: 'v2',
  name: 'worker-v2',
  exists: true,
  generation: 1,
  observedGeneration: 1,
  replicas: 3,
  availableReplicas: 0,
  resourceVersion: '10',
  ownerUid: 'uid-1',
};
const available = { ...created, availableReplicas: 3, resourceVersion: '12' };
const wakes = (before: DeploymentObservation | undefined, after: DeploymentObservation) =>
  wakesRollout(before && readinessOf(before), readinessOf(after));

describe('wakesRollout: which Deployment changes wake a rollout', () => {
  it('wakes when the Deployment becomes available, not while pods come up', () => {
    expect(wakes(undefined, created)).toBe(false); // the rollout applied it: nothing to wait for yet
    expect(wakes(created, { ...created, availableReplicas: 2, resourceVersion: '11' })).toBe(false);
    expect(wakes(created, available)).toBe(true);
    expect(wakes(undefined, available)).toBe(true); // first seen available (a watcher that just started)
  });

  it('is not available before the controller saw the latest generation', () => {
    const edited = { ...available, generation: 2 };
    expect(readinessOf(edited).available).toBe(false);
    expect(wakes(available, edited)).toBe(false);
    expect(wakes(edited, { ...edited, observedGeneration: 2 })).toBe(true);
  });

  it('wakes when it is available at a new generation or with more replicas, the changes between coalesced away', () => {
    const next = { ...available, generation: 2, observedGeneration: 2, resourceVersion: '20' };
    expect(wakes(available, next)).toBe(true);
    expect(wakes(available, { ...next, replicas: 4, availableReplicas: 4 })).toBe(true);
    expect(wakes(next, { ...next, resourceVersion: '21' })).toBe(false); // status churn
  });

  it('does not wake for a scale-down or lost pods: no wait is for them', () => {
    expect(wakes(available, { ...available, replicas: 0, generation: 2 })).toBe(false);
    const scaledDown = { ...available, replicas: 2, availableReplicas: 2, generation: 2, observedGeneration: 2 };
    expect(wakes(available, scaledDown)).toBe(false);
    expect(wakes(available, { ...available, availableReplicas: 1 })).toBe(false);
    expect(readinessOf({ ...available, replicas: 0, availableReplicas: 0 }).available).toBe(false);
  });

  it('wakes when it is gone, once', () => {
    const gone = { ...available, exists: false };
    expect(wakes(available, gone)).toBe(true);
    expect(wakes(undefined, gone)).toBe(true);
    expect(wakes(gone, gone)).toBe(false);
  });

  it('does not wake when a Deployment scaled to 0 goes (a sunset deletes what it scaled down)', () => {
    const scaledDown = { ...available, replicas: 0, availableReplicas: 0, generation: 2, observedGeneration: 2 };
    expect(wakes(scaledDown, { ...scaledDown, exists: false })).toBe(false);
  });

  it('wakes when it misses its progress deadline, or is another incarnation of the resource', () => {
    expect(wakes(created, { ...created, progressDeadlineExceeded: true })).toBe(true);
    expect(wakes(created, { ...created, ownerUid: 'uid-2' })).toBe(true);
  });
});
