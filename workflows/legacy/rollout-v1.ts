/**
 * RolloutWorkflow as it was before the `core-v2` patch, frozen: runs started by it replay and run on with it
 * until their next ContinueAsNew, which starts the current code (see ../rollout.ts). Do not change it; it
 * goes when no run of it is left (then `deprecatePatch('core-v2')`).
 */
import {
  CancellationScope,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities, Routing, TemporalTarget, VersionRegistration } from '../../activities/index.js';
import { parseDuration } from '../../api/duration.js';
import { workerDeploymentName } from '../../api/names.js';
import type { Gate, Phase, Reason } from '../../api/temporal-worker-deployment.js';
import {
  drainPollDelay,
  firstVersionRouting,
  isDrained,
  isPaused,
  planSpecChange,
  renderStatus,
  rolloutPending,
  stepSummary,
  sunsetAction,
  versionsToMakeRoom,
} from './decisions-v1.js';
import * as messages from '../messages.js';
import { currentBuildKey, phaseKey, targetBuildKey } from '../search-attributes.js';
import { defaultTimings, type DeploymentObservation, type Desired, type Owner, type RolloutState, type Timings } from './state-v1.js';

const kube = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});
const temporal = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s' },
});
/** Long waits inside one activity (polling with backoff), which heartbeat so a dead worker is noticed fast. */
const watching = proxyActivities<Activities>({
  startToCloseTimeout: '24h',
  heartbeatTimeout: '20s',
  retry: { initialInterval: '1s', maximumInterval: '10s' },
});

export interface RolloutInput {
  owner: Owner;
  /** Carried across ContinueAsNew. */
  state?: RolloutState;
  timings?: Partial<Timings>;
}

const now = () => new Date();

export async function legacyRolloutWorkflow(input: RolloutInput): Promise<void> {
  let state: RolloutState = input.state ?? {
    owner: input.owner,
    deprecated: [],
    phase: 'Pending',
    reason: 'Deploying',
    message: 'waiting for the first spec',
    since: now().toISOString(),
    deleting: false,
    deployments: {},
    timings: { ...defaultTimings, ...input.timings },
  };
  const { owner } = state;
  let rolloutScope: CancellationScope | undefined;
  const sunsets = new Map<string, CancellationScope>();
  let sunsetActivities = 0;
  let promoteRequest: messages.PromoteRequest | undefined;
  let resyncRequested = false;
  let reapplyRequested = false;
  /** The final routing change of a rollout is in flight. */
  let promoting = false;

  const temporalTarget = (): TemporalTarget => {
    const d = state.desired!;
    return {
      connection: d.connection,
      k8sNamespace: owner.namespace,
      temporalNamespace: d.spec.workerOptions.temporalNamespace,
      deploymentName: workerDeploymentName(owner.namespace, owner.name),
    };
  };
  /** Versions whose sunset is deleting them: their Deployment going away is not a reason to recreate it. */
  const removing = new Set<string>();
  const isLive = (buildId: string) =>
    !removing.has(buildId) &&
    (state.current?.buildId === buildId ||
      state.target?.buildId === buildId ||
      state.deprecated.some((v) => v.buildId === buildId));

  // ---- messages ----
  setHandler(messages.specChanged, (input) => {
    const desired = input as Desired;
    const decision = planSpecChange(state, desired, now());
    if (decision.ignored) return;
    state = decision.state;
    if (decision.superseded) {
      log.info('target superseded', { superseded: decision.superseded, target: desired.buildId });
      rolloutScope?.cancel();
    }
    if (decision.reapply) reapplyRequested = true;
    syncSunsets();
  });
  setHandler(messages.deleted, () => {
    state.deleting = true;
    rolloutScope?.cancel();
    for (const scope of sunsets.values()) scope.cancel();
  });
  setHandler(messages.deploymentObserved, (input) => {
    const obs = input as DeploymentObservation;
    state.deployments[obs.buildId] = obs;
    if (!obs.exists && isLive(obs.buildId) && !state.deleting) resyncRequested = true;
  });
  setHandler(messages.resync, () => void (resyncRequested = true));
  setHandler(messages.pause, (req) => void (state.pausedBy = { reason: req?.reason ?? 'paused by signal' }));
  setHandler(messages.resume, () => void (state.pausedBy = undefined));
  setHandler(messages.promote, (req) => {
    // Only a rollout in progress can be promoted: a stray promote must not approve a later one.
    if (state.target && !state.deleting) promoteRequest = { full: req?.full ?? false };
  });
  setHandler(messages.abort, (req) => {
    const target = state.target;
    // Too late once the final routing change is under way: the target is becoming current (a new spec rolls back).
    if (!target || state.deleting || promoting) {
      log.warn('abort ignored: no rollout in flight, or its target is already being made current', { reason: req?.reason });
      return;
    }
    state.aborted = { buildId: target.buildId, reason: req?.reason ?? 'aborted by signal' };
    retire(target.buildId);
    state.target = undefined;
    rolloutScope?.cancel();
  });
  setHandler(messages.status, () => ({
    phase: state.phase,
    reason: state.reason,
    message: state.message,
    paused: isPaused(state),
    current: state.current?.buildId,
    target: state.target,
    deprecated: state.deprecated,
    generation: state.desired?.generation,
    lastAbortReason: state.aborted?.reason,
  }));

  // ---- status ----
  async function writeStatus(): Promise<void> {
    await kube.writeStatus(owner, renderStatus(state));
  }

  /** Records a transition: status on the resource, a K8s Event, search attributes. */
  async function transition(phase: Phase, reason: Reason, message: string, eventType: 'Normal' | 'Warning' = 'Normal') {
    Object.assign(state, { phase, reason, message, since: now().toISOString() });
    upsertSearchAttributes([
      { key: phaseKey, value: phase },
      { key: targetBuildKey, value: state.target?.buildId ?? '' },
      { key: currentBuildKey, value: state.current?.buildId ?? '' },
    ]);
    await Promise.all([writeStatus(), kube.recordEvent(owner, { type: eventType, reason, message })]);
  }

  // ---- sunset ----
  function retire(buildId: string) {
    if (!state.deprecated.some((v) => v.buildId === buildId)) state.deprecated.push({ buildId, deprecatedSince: now().toISOString() });
  }

  /** Starts a sunset for every deprecated version that has none, and stops those brought back. */
  function syncSunsets() {
    for (const [buildId, scope] of sunsets) {
      if (!state.deprecated.some((v) => v.buildId === buildId)) {
        scope.cancel();
        sunsets.delete(buildId);
      }
    }
    for (const v of state.deprecated) {
      if (sunsets.has(v.buildId) || state.deleting) continue;
      const scope = new CancellationScope();
      sunsets.set(v.buildId, scope);
      scope
        .run(() => sunset(v.buildId))
        .catch((err) => {
          if (!isCancellation(err)) throw err;
        })
        .finally(() => {
          if (sunsets.get(v.buildId) === scope) sunsets.delete(v.buildId);
        });
    }
  }

  async function busy<T>(work: () => Promise<T>): Promise<T> {
    sunsetActivities++;
    try {
      return await work();
    } finally {
      sunsetActivities--;
    }
  }

  /** Wait for DRAINED (backed-off polling, never an early scale-down), scale to 0, then delete. */
  async function sunset(buildId: string): Promise<void> {
    let attempt = 0;
    for (;;) {
      const version = state.deprecated.find((v) => v.buildId === buildId);
      if (!version || !state.desired) return;
      const action = sunsetAction(version, state.desired.spec.sunset, now());
      switch (action.kind) {
        case 'waitForDrained': {
          const status = await busy(() => temporal.versionStatus(temporalTarget(), buildId));
          if (status !== version.status) {
            version.status = status;
            if (isDrained(status)) {
              version.drainedSince = now().toISOString();
              await busy(() => kube.recordEvent(owner, { type: 'Normal', reason: 'VersionDrained', message: `${buildId} is drained` }));
            }
            await busy(writeStatus);
          }
          if (!isDrained(status)) await sleep(drainPollDelay(attempt++, state.timings.drainPollMaxMs), { summary: `check drainage of ${buildId}` });
          break;
        }
        case 'waitUntil':
          await sleep(Math.max(0, action.atMs - now().getTime()), { summary: `${action.then === 'scaleDown' ? 'scale to 0' : 'delete'} ${buildId}` });
          break;
        case 'scaleDown':
          await busy(() => kube.scaleDeployment(owner, buildId, 0));
          version.scaledDown = true;
          await busy(() => Promise.all([writeStatus(), kube.recordEvent(owner, { type: 'Normal', reason: 'VersionScaledDown', message: `${buildId} scaled to 0` })]));
          break;
        case 'delete':
          removing.add(buildId);
          try {
            await busy(async () => {
              await kube.deleteDeployment(owner, buildId);
              await temporal.deleteVersion(temporalTarget(), buildId);
              state.deprecated = state.deprecated.filter((v) => v.buildId !== buildId);
              delete state.deployments[buildId];
              delete state.templates?.[buildId];
              await Promise.all([writeStatus(), kube.recordEvent(owner, { type: 'Normal', reason: 'VersionDeleted', message: `${buildId} deleted` })]);
            });
          } finally {
            removing.delete(buildId);
          }
          return;
      }
    }
  }

  // ---- the rollout ----
  const available = (buildId: string, replicas: number) => {
    const d = state.deployments[buildId];
    return !!d?.exists && (d.observedGeneration ?? 0) >= (d.generation ?? 0) && (d.availableReplicas ?? 0) >= replicas;
  };

  async function waitWhilePaused(): Promise<void> {
    if (!isPaused(state)) return;
    const before = { phase: state.phase, reason: state.reason, message: state.message };
    await transition('Paused', 'Paused', state.pausedBy?.reason ?? 'paused by spec.rollout.paused');
    await condition(() => !isPaused(state) || promoteRequest !== undefined);
    await transition(before.phase, before.reason, `${before.message} (resumed)`);
  }

  /** Waits for the Deployment to be available; the progress deadline excludes paused time. */
  async function waitUntilAvailable(buildId: string): Promise<void> {
    const spec = state.desired!.spec;
    let remaining = spec.progressDeadlineSeconds * 1000;
    while (!available(buildId, spec.replicas)) {
      const started = Date.now();
      const woke = await condition(() => available(buildId, spec.replicas) || isPaused(state), remaining, {
        summary: `wait for ${buildId} to be available`,
      });
      remaining -= Date.now() - started;
      if (!woke || remaining <= 0) {
        await transition('Failed', 'ProgressDeadlineExceeded', `${buildId} not available after ${spec.progressDeadlineSeconds}s`, 'Warning');
        await condition(() => available(buildId, spec.replicas));
        return;
      }
      if (isPaused(state)) await condition(() => !isPaused(state));
    }
  }

  /** Runs a gate workflow pinned to the target; returns whether the rollout goes on. */
  async function passGate(gate: Gate, registration: VersionRegistration, label: string): Promise<boolean> {
    const buildId = state.target!.buildId;
    for (;;) {
      await transition('Gating', 'Gating', `running ${gate.workflowType} on ${buildId} (${label})`);
      const input = gate.inputFrom ? await kube.readGateInput(owner.namespace, gate.inputFrom) : gate.input;
      const result = await watching.runGate(temporalTarget(), {
        buildId,
        workflowType: gate.workflowType,
        taskQueue: gate.taskQueue ?? registration.taskQueues[0] ?? '',
        input,
        workflowId: `glidepath-gate/${owner.namespace}/${owner.name}/${buildId}/${label}`,
        timeoutMs: parseDuration(gate.timeout ?? '10m'),
      });
      if (result.passed) return true;
      const why = `gate ${gate.workflowType} failed on ${buildId}: ${result.message}`;
      if (state.desired!.spec.rollout.gateFailurePolicy === 'Abort') {
        // The main loop clears its ramp, sunsets it and reports the abort.
        state.aborted = { buildId, reason: why, cause: 'GateFailed' };
        retire(buildId);
        state.target = undefined;
        return false;
      }
      state.pausedBy = { reason: why };
      await transition('Paused', 'GateFailed', `${why}; resume to run it again, promote to skip it`, 'Warning');
      await condition(() => !isPaused(state) || promoteRequest !== undefined);
      if (promoteRequest) {
        promoteRequest = undefined;
        state.pausedBy = undefined;
        return true;
      }
    }
  }

  /** Holds a Progressive step for its pause (paused time excluded), or until promoted. */
  async function holdStep(stepIndex: number): Promise<'elapsed' | 'promoted' | 'promotedFully'> {
    const steps = state.desired!.spec.rollout.steps ?? [];
    const step = steps[stepIndex]!;
    const label = `step ${stepIndex + 1}/${steps.length}`;
    const takePromote = () => {
      const full = promoteRequest?.full;
      promoteRequest = undefined;
      return full ? 'promotedFully' : 'promoted';
    };
    if (!step.pauseDuration) {
      await transition('AwaitingPromotion', 'AwaitingPromotion', `${label}: ${stepSummary(step)}`);
      if (patched('pause-while-awaiting-promotion')) {
        // A pause shows as Paused here too; a promote still ends the wait.
        while (promoteRequest === undefined) {
          await condition(() => promoteRequest !== undefined || isPaused(state));
          if (promoteRequest === undefined) await waitWhilePaused();
        }
      } else {
        await condition(() => promoteRequest !== undefined);
      }
      return takePromote();
    }
    let remaining = parseDuration(step.pauseDuration);
    for (;;) {
      await waitWhilePaused();
      if (promoteRequest) return takePromote();
      if (remaining <= 0) return 'elapsed';
      const started = Date.now();
      const interrupted = await condition(() => isPaused(state) || promoteRequest !== undefined, remaining, {
        summary: stepSummary(step, remaining),
      });
      if (!interrupted) return 'elapsed';
      remaining -= Date.now() - started;
    }
  }

  async function clearRampIf(buildId: string) {
    await CancellationScope.nonCancellable(() => temporal.clearRampIf(temporalTarget(), buildId));
  }

  async function makeCurrent(buildId: string): Promise<void> {
    await waitWhilePaused();
    // Once asked, Temporal makes it current whatever happens here: finish the step and record it, so the
    // status never disagrees with the routing (an abort arriving now is refused, see its handler).
    promoting = true;
    try {
      await CancellationScope.nonCancellable(() => temporal.setCurrent(temporalTarget(), buildId));
      const previous = state.current;
      state.current = { buildId, since: now().toISOString() };
      if (state.target?.buildId === buildId) state.target = undefined;
      state.deprecated = state.deprecated.filter((v) => v.buildId !== buildId);
      if (previous && previous.buildId !== buildId) retire(previous.buildId);
      syncSunsets();
    } finally {
      promoting = false;
    }
    await transition('Ready', 'RolloutComplete', `${buildId} is current`);
  }

  /** Makes room under the server's version cap; says so in a condition while none can be made. */
  async function makeRoomForVersion(buildId: string, routing?: Routing): Promise<void> {
    for (;;) {
      routing ??= await temporal.describeRouting(temporalTarget());
      if (routing.versions.some((v) => v.buildId === buildId)) return;
      const keep = [buildId, ...[state.current?.buildId, routing.current, routing.ramping].filter((b): b is string => !!b)];
      const plan = versionsToMakeRoom(routing.versions, keep, state.timings.maxVersions);
      for (const b of plan.remove) await temporal.deleteVersion(temporalTarget(), b);
      if (!plan.atCap) return;
      await transition('Deploying', 'VersionLimitReached', `the worker deployment has ${routing.versions.length} versions (the server allows ${state.timings.maxVersions}); waiting for old ones to drain`, 'Warning');
      await sleep('1m', { summary: 'wait for room under the version cap' });
      routing = undefined;
    }
  }

  async function rollOut(): Promise<void> {
    const target = state.target!;
    const { buildId } = target;
    const spec = state.desired!.spec;
    const ensureDeployment = async () => {
      const observed = await kube.ensureVersionedDeployment({ owner, desired: state.desired!, buildId, template: templateOf(buildId)! });
      state.deployments[buildId] = pickNewer(state.deployments[buildId], observed);
    };
    // Adopt what Temporal already routes to (a resource migrated from temporal-worker-controller keeps it).
    const adopt = (routing: Routing) => {
      if (!state.current && routing.current) state.current = { buildId: routing.current, since: now().toISOString() };
    };

    if (patched('deployment-first')) {
      // The Deployment first: it is what someone who just ran `kubectl apply` waits to see. Temporal is asked
      // meanwhile; pods take far longer to poll (and so to add a version) than the version-cap check takes.
      const [routing] = await Promise.all([
        temporal.describeRouting(temporalTarget()),
        ensureDeployment(),
        transition('Deploying', 'Deploying', `applying the Deployment of ${buildId}`),
      ]);
      adopt(routing);
      if (state.current?.buildId === buildId) return makeCurrent(buildId);
      await makeRoomForVersion(buildId, routing);
    } else {
      adopt(await temporal.describeRouting(temporalTarget()));
      if (state.current?.buildId === buildId) return makeCurrent(buildId);
      await makeRoomForVersion(buildId);
      await transition('Deploying', 'Deploying', `applying the Deployment of ${buildId}`);
      await ensureDeployment();
    }
    await waitUntilAvailable(buildId);

    await transition('WaitingForPollers', 'WaitingForPollers', `waiting for ${buildId} workers to poll Temporal`);
    const registration = await watching.awaitVersionRegistered(temporalTarget(), buildId);

    if (spec.rollout.gate && !target.gatePassed) {
      if (!(await passGate(spec.rollout.gate, registration, 'rollout'))) return;
      target.gatePassed = true;
    }

    if (!state.current && firstVersionRouting(registration.unversionedPollers) === 'currentNow') return makeCurrent(buildId);
    if (spec.rollout.strategy === 'AllAtOnce') return makeCurrent(buildId);
    if (spec.rollout.strategy === 'Manual') {
      await transition('AwaitingPromotion', 'AwaitingPromotion', `${buildId} is ready; send promote to make it current`);
      await condition(() => promoteRequest !== undefined);
      promoteRequest = undefined;
      return makeCurrent(buildId);
    }
    const steps = spec.rollout.steps ?? [];
    for (let i = target.stepIndex ?? 0; i < steps.length; i++) {
      const step = steps[i]!;
      if (target.stepIndex !== i || target.rampPercentage !== step.rampPercentage) {
        await waitWhilePaused();
        await temporal.setRamping(temporalTarget(), buildId, step.rampPercentage);
        Object.assign(target, { stepIndex: i, rampPercentage: step.rampPercentage, rampingSince: target.rampingSince ?? now().toISOString() });
      }
      await transition('Ramping', 'Ramping', `step ${i + 1}/${steps.length}: ${stepSummary(step)}`);
      const outcome = await holdStep(i);
      if (step.gate && outcome === 'elapsed' && !(await passGate(step.gate, registration, `step-${i + 1}`))) return;
      if (outcome === 'promotedFully') break;
    }
    return makeCurrent(buildId);
  }

  // ---- housekeeping ----
  /** A build's own pod template (unknown for a version adopted from Temporal, which we then never re-apply). */
  const templateOf = (buildId: string) => state.templates?.[buildId];

  /** Live Deployments, with the replicas and template each should have. */
  const liveVersions = () =>
    [
      ...[state.current?.buildId, state.target?.buildId].filter((b): b is string => !!b).map((buildId) => ({ buildId, replicas: state.desired!.spec.replicas })),
      ...state.deprecated.filter((v) => !removing.has(v.buildId)).map((v) => ({ buildId: v.buildId, replicas: v.scaledDown ? 0 : state.desired!.spec.replicas })),
    ].flatMap((v) => {
      const template = templateOf(v.buildId);
      return template ? [{ ...v, template }] : [];
    });

  /** Level-triggered self-healing: recreates a live Deployment deleted by hand. Reads only, unless one is missing. */
  async function resyncLoop(): Promise<never> {
    for (;;) {
      await condition(() => resyncRequested, state.timings.resyncIntervalMs, { summary: 'periodic resync' });
      resyncRequested = false;
      if (!state.desired || state.deleting) continue;
      // Counted with the sunsets' activities: ContinueAsNew waits for it rather than dropping it.
      await busy(async () => {
        const recreated = await kube.ensureDeploymentsExist({ owner, desired: state.desired!, versions: liveVersions() });
        for (const name of recreated) await kube.recordEvent(owner, { type: 'Warning', reason: 'DeploymentRecreated', message: `${name} was missing and is recreated` });
        if (patched('remove-strays')) {
          // Deployments of ours that no version needs any more, already at 0 pods (a crash between scale-down and
          // delete, or an older controller's leftovers). One with pods is left alone: work may be pinned to it.
          const live = [...liveVersions().map((v) => v.buildId), ...removing];
          const removed = await kube.deleteStrayDeployments(owner, live);
          for (const name of removed) await kube.recordEvent(owner, { type: 'Normal', reason: 'StrayDeploymentDeleted', message: `${name} belongs to no live version and had no pods` });
        }
      });
    }
  }

  /** New connection or Deployment settings: re-apply the live Deployments that are not scaled down. */
  async function reapplyLive(): Promise<void> {
    for (const { buildId, replicas, template } of liveVersions()) {
      if (replicas > 0) await kube.ensureVersionedDeployment({ owner, desired: state.desired!, buildId, template });
    }
  }

  async function deleteEverything(): Promise<void> {
    await transition('Deleting', 'Deleting', 'cleaning up Temporal and Kubernetes');
    if (state.desired) {
      await temporal.routeAway(temporalTarget());
      await kube.scaleOwnedDeployments(owner, 0);
      await temporal.deleteWorkerDeployment(temporalTarget());
    }
    await kube.deleteOwnedDeployments(owner);
    await kube.removeFinalizer(owner);
  }

  const continueAsNewDue = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > (state.timings.historyLimit ?? 10_000);

  // ---- main loop ----
  void resyncLoop();
  syncSunsets();
  for (;;) {
    await condition(() => state.deleting || rolloutPending(state) || reapplyRequested || continueAsNewDue());
    if (state.deleting) break;
    if (reapplyRequested) {
      reapplyRequested = false;
      await reapplyLive();
    }
    if (rolloutPending(state)) {
      const buildId = state.target!.buildId;
      rolloutScope = new CancellationScope();
      try {
        await rolloutScope.run(rollOut);
      } catch (err) {
        if (!isCancellation(err)) throw err;
      } finally {
        rolloutScope = undefined;
        promoteRequest = undefined; // a promote not taken by this rollout is not carried to the next
      }
      if (state.deleting) break;
      if (state.target?.buildId !== buildId && state.current?.buildId !== buildId) {
        // Superseded or aborted: no new work for it, and it is sunset.
        await clearRampIf(buildId);
        syncSunsets();
        if (state.aborted?.buildId === buildId) await transition('Aborted', state.aborted.cause ?? 'Aborted', state.aborted.reason, 'Warning');
      }
      continue;
    }
    if (continueAsNewDue()) {
      await condition(() => sunsetActivities === 0 && allHandlersFinished());
      // What came in meanwhile and is not in `state` (a re-apply, a promote for the new target) is done here first.
      if (state.deleting || rolloutPending(state) || reapplyRequested) continue;
      await continueAsNew<typeof legacyRolloutWorkflow>({ owner, state });
    }
  }
  await deleteEverything();
}

/** The fresher of two observations of one Deployment (signals and activity results can arrive in any order). */
function pickNewer<T extends { observedGeneration?: number }>(a: T | undefined, b: T): T {
  return a && (a.observedGeneration ?? 0) > (b.observedGeneration ?? 0) ? a : b;
}
