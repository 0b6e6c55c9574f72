/** Workflows for ./task-cost.test.ts. */
import { condition, defineSignal, proxyLocalActivities, setHandler } from '@temporalio/workflow';

export const finish = defineSignal('finish');

export async function waitForFinish(): Promise<string> {
  let finished = false;
  setHandler(finish, () => void (finished = true));
  await condition(() => finished);
  return 'finished';
}

const { echo } = proxyLocalActivities<{ echo(x: string): Promise<string> }>({ startToCloseTimeout: '5s' });

/** Two local activities, one after the other, inside its first workflow task: one completion. */
export async function twoLocals(): Promise<string> {
  return (await echo('one')) + (await echo('two'));
}
