/** A workflow for ./task-cost.test.ts: it waits for `finish`. */
import { condition, defineSignal, setHandler } from '@temporalio/workflow';

export const finish = defineSignal('finish');

export async function waitForFinish(): Promise<string> {
  let finished = false;
  setHandler(finish, () => void (finished = true));
  await condition(() => finished);
  return 'finished';
}
