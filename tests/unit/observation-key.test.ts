import { describe, expect, it } from '@jest/globals';
import type { DeploymentObservation } from '../../api/resource.js';
import { observationKey } from '../../kube/versioned-deployment.js';

const base: DeploymentObservation = {
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

describe('observationKey: what wakes a rollout', () => {
  it('ignores status churn that leaves availability alone', () => {
    const churn = { ...base, availableReplicas: 2, resourceVersion: '11' };
    expect(observationKey(churn)).toBe(observationKey(base));
  });

  it('changes when the Deployment becomes available, or stops being', () => {
    const available = { ...base, availableReplicas: 3, resourceVersion: '12' };
    expect(observationKey(available)).not.toBe(observationKey(base));
    expect(observationKey({ ...available, availableReplicas: 2 })).not.toBe(observationKey(available));
  });

  it('is not available until the controller has seen the latest generation', () => {
    const edited = { ...base, availableReplicas: 3, generation: 2 };
    expect(observationKey(edited)).not.toBe(observationKey({ ...edited, observedGeneration: 2 }));
  });

  it('changes with existence, owner, generation, replicas and a missed progress deadline', () => {
    const k = observationKey(base);
    for (const changed of [
      { exists: false },
      { ownerUid: 'uid-2' },
      { generation: 2 },
      { replicas: 0 },
      { progressDeadlineExceeded: true },
      { name: 'worker-v2-b' },
    ])
      expect(observationKey({ ...base, ...changed })).not.toBe(k);
  });
});
