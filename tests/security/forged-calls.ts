/**
 * The forged activity calls of tests/security/forged-activities.test.ts, and what each must come to. The signatures
 * are those of the authority design (every activity reads its resource from the apiserver first and refuses with a
 * non-retryable ApplicationFailure of type `Refused`); the arguments are an attacker's: another namespace's resource
 * (its real uid, not claimed by this installation), another uid under the resource's own name, the old argument
 * shapes with a privileged pod template, a TemporalTarget or TemporalRef pointing at the test's counting listener and
 * at a Secret of another namespace, and the live current version as the object of every destructive call.
 */
import { workerDeploymentName } from '../../api/names.js';
import type { ForgedCall } from './attacker-workflows.js';

/**
 * What a call must come to:
 * - `Refused`: it fails with a failure of type `Refused`;
 * - `NotRegistered`: it fails because no such activity is registered (the SDK's `NotFoundError`);
 * - `RefusedOrHarmless`: it is refused, or it completes; the test's snapshot, audit log and listener then show that
 *   it changed and read nothing it must not (a read of the resource's own place, a call that finds nothing to do,
 *   an apply of what the spec declares, the spec's own gate);
 * - `NoDesired`: `readResource` of a resource not claimed by this installation: refused, or found without its spec.
 */
export type Expect = 'Refused' | 'NotRegistered' | 'RefusedOrHarmless' | 'NoDesired';

export interface Attack extends ForgedCall {
  expect: Expect;
}

export interface Owner {
  namespace: string;
  name: string;
  uid: string;
  kind: string;
}

export interface Targets {
  /** The controller's task queue, and its waits queue. */
  queue: string;
  waitsQueue: string;
  /** The resource rolled out (v1 current), as its rollout names it. */
  owner: Owner;
  /** A resource of another namespace, with its real uid, whose connection names the listener and a Secret there. */
  victim: Owner;
  /** Another uid under the resource's own namespace and name. */
  otherUid: Owner;
  /** The Temporal place the resource's connection names now. */
  temporalNamespace: string;
  hostPort: string;
  /** The counting listener. */
  trapHostPort: string;
  elsewhere: string;
  secret: string;
  configMap: string;
  /** The live current build, its Deployment's uid, and the rollout's workflow ID. */
  v1: string;
  v1DeploymentUid: string;
  rolloutWorkflowId: string;
  /** The worker task queue of the resource's pods (where a forged gate workflow would be started). */
  workerQueue: string;
  /** The resource's spec as applied (the base of the forged `desired`). */
  spec: Record<string, unknown>;
}

export const forgedImage = 'attacker.example/evil:latest';
export const forgedBuild = 'forged-build';
export const forgedGateType = 'forgedGate';

/** A pod template no resource declares: privileged, on the host's network, PID space and root filesystem. */
export const privilegedTemplate = {
  spec: {
    hostNetwork: true,
    hostPID: true,
    containers: [
      {
        name: 'worker',
        image: forgedImage,
        securityContext: { privileged: true },
        volumeMounts: [{ name: 'host', mountPath: '/host' }],
      },
    ],
    volumes: [{ name: 'host', hostPath: { path: '/' } }],
  },
};

/** The gate declared by the resource: the gate a forged `runGate` may only ever run. */
export const specGate = { workflowType: 'exampleGate', input: { smoke: true } };

/** A gate run ID of the resource's own form (`glidepath-gate/<ns>/<name>/<uid>/<build>/`), of the attacker's choosing. */
export const forgedGateRunId = (owner: Owner, buildId: string) =>
  `glidepath-gate/${owner.namespace}/${owner.name}/${owner.uid}/${buildId}/rollout/forged-run`;

export function forgedCalls(t: Targets): Attack[] {
  const calls: Attack[] = [];
  let n = 0;
  const add = (expect: Expect, activity: string, args: unknown[], taskQueue = t.queue) =>
    calls.push({ id: `${++n} ${activity}`, activity, taskQueue, args, expect });

  // The connection an attacker would like used: the listener, with a Secret of the other namespace.
  const forgedConnection = { hostPort: t.trapHostPort, apiKeySecretRef: { name: t.secret, key: 'apiKey' } };
  const ref = { owner: t.owner, temporalNamespace: t.temporalNamespace, hostPort: t.hostPort };
  const deploymentName = workerDeploymentName(t.owner.namespace, t.owner.name);
  const forgedRefs: [string, unknown][] = [
    // The old shape, with no owner: what to connect to, and in which namespace its Secrets are, named by the caller.
    [
      'TemporalTarget',
      {
        connection: forgedConnection,
        k8sNamespace: t.elsewhere,
        temporalNamespace: t.temporalNamespace,
        deploymentName,
      },
    ],
    // The resource's own owner, another place.
    ['TemporalRef elsewhere', { ...ref, hostPort: t.trapHostPort }],
    // Another namespace's resource, its uid right, at the place its connection names: only its claim is missing.
    ['TemporalRef of victim', { owner: t.victim, temporalNamespace: t.temporalNamespace, hostPort: t.trapHostPort }],
  ];
  // The resource's own owner and place, with the old shape's fields beside them: they must not choose anything.
  const mixedRef = { ...ref, connection: forgedConnection, k8sNamespace: t.elsewhere, deploymentName };
  const gateRun = (buildId: string, workflowId: string) => ({
    buildId,
    gate: 'rollout',
    workflowId,
    taskQueue: t.workerQueue,
    // The old GateRun's fields: a workflow type, input and timeout of the caller's choosing.
    workflowType: forgedGateType,
    input: { forged: true },
    inputFrom: { secretKeyRef: { name: t.secret, key: 'apiKey' } },
    timeoutMs: 5000,
  });
  const sinceIso = new Date(Date.now() - 3_600_000).toISOString();
  // Every Temporal activity, with its arguments after the first; `waits`: scheduled on the waits queue.
  const temporal: [string, unknown[], boolean?][] = [
    ['describeRouting', []],
    ['claimManager', []],
    ['versionStatus', [t.v1]],
    ['countOpenExecutions', [[t.v1]]],
    ['countPinned', [t.v1]],
    ['countOutcomes', [t.v1, { sinceIso }]],
    ['awaitVersionRegistered', [t.v1, 1000], true],
    ['awaitDrained', [t.v1, 1000], true],
    ['setRamping', [t.v1, 50, {}]],
    ['setCurrent', [t.v1, {}]],
    ['clearRampIf', [t.v1]],
    ['routeAway', []],
    ['deleteWorkerDeployment', []],
    ['deleteVersion', [t.v1]],
    ['runGate', [gateRun(t.v1, forgedGateRunId(t.owner, t.v1))], true],
    ['cancelGate', [forgedGateRunId(t.owner, t.v1)]],
    ['actOnPinned', [t.v1, { kind: 'Terminate' }, 'forged']],
    ['movePinned', [t.v1, forgedBuild, 'forged']],
  ];
  for (const [, first] of forgedRefs)
    for (const [activity, rest, waits] of temporal)
      add('Refused', activity, [first, ...rest], waits ? t.waitsQueue : t.queue);
  for (const activity of ['describeRouting', 'versionStatus', 'countOpenExecutions', 'countOutcomes', 'clearRampIf']) {
    const rest = temporal.find(([a]) => a === activity)![1];
    add('RefusedOrHarmless', activity, [mixedRef, ...rest]);
  }

  // The resource's own ref, each call beyond what the resource declares or its state allows.
  add('Refused', 'setCurrent', [ref, forgedBuild, {}]); // a build the resource never declared
  add('Refused', 'setRamping', [ref, forgedBuild, 50, {}]);
  add('Refused', 'routeAway', [ref]); // the resource is not being deleted
  add('Refused', 'deleteWorkerDeployment', [ref]);
  add('Refused', 'deleteVersion', [ref, t.v1]); // current, with its Deployment's pods
  // The spec's gate on the spec's build, under a gate ID of the resource: what runs is the spec's gate (its type and
  // input), never the caller's; the test reads the run to say so. Another build, another ID: refused.
  add('RefusedOrHarmless', 'runGate', [ref, gateRun(t.v1, forgedGateRunId(t.owner, t.v1))], t.waitsQueue);
  add('Refused', 'runGate', [ref, gateRun(forgedBuild, forgedGateRunId(t.owner, forgedBuild))], t.waitsQueue);
  add('Refused', 'runGate', [ref, gateRun(t.v1, 'attacker-chosen-gate-id')], t.waitsQueue);
  add('Refused', 'cancelGate', [ref, t.rolloutWorkflowId]); // not a gate of the resource
  // The spec says nothing of pinned executions: no maxDrainDuration, no onMaxDrain; v1 is current.
  add('Refused', 'actOnPinned', [ref, t.v1, { kind: 'Terminate' }, 'forged']);
  add('Refused', 'actOnPinned', [ref, t.v1, { kind: 'Signal', signalName: 'finish' }, 'forged']);
  add('Refused', 'movePinned', [ref, t.v1, forgedBuild, 'forged']); // from the current version

  // The old argument shapes: a `desired` and a pod template of the caller's choosing.
  const desired = {
    generation: 999999,
    spec: { ...t.spec, replicas: 5, template: privilegedTemplate },
    buildId: forgedBuild,
    connection: forgedConnection,
    connectionVersion: '999999',
    uid: t.owner.uid,
  };
  const kube = (o: Owner): [string, unknown[]][] => [
    ['findSuccessor', [o]],
    ['readDeployment', [o, t.v1]],
    ['ensureVersionedDeployment', [{ owner: o, desired, buildId: forgedBuild, template: privilegedTemplate }]],
    ['adoptOrApplyDeployment', [{ owner: o, desired, buildId: forgedBuild, template: privilegedTemplate }]],
    ['adoptForeignDeployments', [{ owner: o, template: privilegedTemplate }]],
    ['updateAdoptedDeployment', [{ owner: o, desired, buildId: t.v1, replicas: 0 }]],
    [
      'reconcileDeployments',
      [{ owner: o, desired, versions: [{ buildId: t.v1, replicas: 0, template: privilegedTemplate, heal: true }] }],
    ],
    ['scaleDeployment', [o, t.v1, 0]],
    ['deleteDeployment', [o, t.v1]],
    ['removeStrayDeployments', [o, [], [t.v1DeploymentUid]]],
    ['scaleOwnedDeployments', [o, 0]],
    ['deleteOwnedDeployments', [o]],
    ['removeFinalizer', [o]],
    ['writeStatus', [o, { phase: 'Ready', message: 'forged' }]],
    ['recordEvent', [o, { type: 'Warning', reason: 'Forged', message: 'forged' }]],
    [
      'report',
      [
        o,
        {
          status: { phase: 'Ready', message: 'forged' },
          events: [{ type: 'Normal', reason: 'Forged', message: 'forged' }],
        },
      ],
    ],
  ];
  // Another namespace's resource (its uid right, not claimed here), and another uid under the resource's name.
  add('NoDesired', 'readResource', [t.victim]);
  // Of a uid no object has any more, a deletion's steps touch only what carries that uid, and a status or Event
  // finds nothing to write to: harmless, as the snapshot and the audit log then show.
  const ofGoneUid = new Set([
    'scaleOwnedDeployments',
    'deleteOwnedDeployments',
    'removeFinalizer',
    'writeStatus',
    'recordEvent',
    'report',
  ]);
  for (const o of [t.victim, t.otherUid])
    for (const [activity, args] of kube(o))
      add(
        activity === 'findSuccessor' || (o === t.otherUid && ofGoneUid.has(activity)) ? 'RefusedOrHarmless' : 'Refused',
        activity,
        args,
      );

  // The resource's own owner: the live current version scaled down, deleted, swept; the resource's teardown while
  // it is not being deleted; builds and templates it never declared.
  const owner = t.owner;
  add('Refused', 'scaleDeployment', [owner, t.v1, 0]);
  add('Refused', 'deleteDeployment', [owner, t.v1]);
  add('Refused', 'scaleOwnedDeployments', [owner, 0]);
  add('Refused', 'deleteOwnedDeployments', [owner]);
  add('Refused', 'removeFinalizer', [owner]);
  add('Refused', 'ensureVersionedDeployment', [{ owner, desired, buildId: forgedBuild, template: privilegedTemplate }]);
  add('Refused', 'ensureVersionedDeployment', [{ owner, buildId: forgedBuild, replicas: 3 }]);
  add('Refused', 'adoptOrApplyDeployment', [{ owner, desired, buildId: forgedBuild, template: privilegedTemplate }]);
  // v1 is the spec's build: what is applied is the spec's template, never the argument's; the snapshot says so.
  add('RefusedOrHarmless', 'ensureVersionedDeployment', [
    { owner, desired, buildId: t.v1, template: privilegedTemplate },
  ]);
  // Never a sweep of a build Temporal reports current, nor of the spec's build.
  add('RefusedOrHarmless', 'removeStrayDeployments', [owner, [], [t.v1DeploymentUid]]);
  // The live current version to 0 replicas by the calls that apply or heal Deployments: refused, or not scaled.
  add('RefusedOrHarmless', 'ensureVersionedDeployment', [{ owner, buildId: t.v1, replicas: 0 }]);
  add('RefusedOrHarmless', 'adoptOrApplyDeployment', [{ owner, buildId: t.v1, replicas: 0 }]);
  add('RefusedOrHarmless', 'updateAdoptedDeployment', [{ owner, buildId: t.v1, replicas: 0 }]);
  add('RefusedOrHarmless', 'reconcileDeployments', [{ owner, versions: [{ buildId: t.v1, replicas: 0, heal: true }] }]);
  // The same calls on the waits queue: its worker has the same activities.
  add('Refused', 'scaleDeployment', [owner, t.v1, 0], t.waitsQueue);
  add('Refused', 'removeFinalizer', [owner], t.waitsQueue);
  add('Refused', 'setCurrent', [ref, forgedBuild, {}], t.waitsQueue);

  // Gone from the design: no longer registered on either queue, whatever its arguments.
  for (const q of [t.queue, t.waitsQueue]) {
    add('NotRegistered', 'readGateInput', [t.elsewhere, { secretKeyRef: { name: t.secret, key: 'apiKey' } }], q);
    add('NotRegistered', 'readGateInput', [t.elsewhere, { configMapKeyRef: { name: t.configMap, key: 'input' } }], q);
  }
  return calls;
}
