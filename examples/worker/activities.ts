/** The example worker's one activity: reports the behaviour its pod's env asks for. */
import { parseDuration } from '../../api/duration.js';

export interface Behaviour {
  holdMs: number;
  failureShare: number;
  gateFails: boolean;
}

/** Reads the behaviour switches from an env (a pod template's env, in the simulator). */
export function behaviourFromEnv(env: Record<string, string | undefined>): Behaviour {
  const share = Number(env.EXAMPLE_FAILURE_SHARE ?? '0');
  if (!(share >= 0 && share <= 1))
    throw new Error(`EXAMPLE_FAILURE_SHARE must be between 0 and 1, got "${env.EXAMPLE_FAILURE_SHARE}"`);
  return {
    holdMs: env.EXAMPLE_WORKFLOW_HOLD ? parseDuration(env.EXAMPLE_WORKFLOW_HOLD) : 0,
    failureShare: share,
    gateFails: env.EXAMPLE_GATE_FAIL === 'true',
  };
}

export function createActivities(env: Record<string, string | undefined>) {
  const b = behaviourFromEnv(env);
  return { behaviour: async (): Promise<Behaviour> => b };
}

export type ExampleActivities = ReturnType<typeof createActivities>;
