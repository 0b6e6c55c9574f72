/**
 * A rollout as its users watch it in the Temporal Web UI: the dev server's own UI, opened in headless Chromium
 * (Debian's, driven by playwright-core), shows on the RolloutWorkflow's page the static summary naming the
 * resource, the current details saying where the rollout stands, and the summaries of its timers and activities in
 * the event history.
 *
 * A screenshot of the workflow's User Metadata tab goes to .dev/web-ui.png, and to GLIDEPATH_SCREENSHOT too when
 * set (`GLIDEPATH_SCREENSHOT=docs/web-ui.png` renews the one README.md and docs/observability.md show). Chromium:
 * /usr/bin/chromium (Debian's package, installed by `npm run servers:build`), or GLIDEPATH_CHROMIUM.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkflowHandle } from '@temporalio/client';
import { chromium, type Browser, type Page } from 'playwright-core';
import { rolloutWorkflowId } from '../../api/names.js';
import {
  apply,
  eventually,
  resource,
  startRolloutEnv,
  taskQueueOf,
  twdStatus,
  workflowHandle,
  type ResourceOptions,
  type RolloutEnv,
} from '../harness/rollout-env.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const chromiumPath = process.env.GLIDEPATH_CHROMIUM ?? '/usr/bin/chromium';

let env: RolloutEnv;
let browser: Browser | undefined;
const pinned: WorkflowHandle[] = [];

beforeAll(async () => {
  env = await startRolloutEnv('web-ui');
});
afterAll(async () => {
  await browser?.close();
  await Promise.all(pinned.map((h) => h.terminate('test done').catch(() => {})));
  await env?.stop();
});
afterEach(() => {
  expect(env.violations).toEqual([]);
});

/** Applies `VERSION` = `version` and returns the resource's status once `probe` holds. */
async function rollTo(
  name: string,
  version: string,
  o: ResourceOptions,
  what: string,
  probe: (s: NonNullable<Awaited<ReturnType<typeof twdStatus>>>) => boolean,
) {
  await apply(env, resource(env, name, { ...o, env: { VERSION: version } }));
  return eventually(what, async () => {
    const s = await twdStatus(env, name);
    return s && probe(s) ? s : undefined;
  });
}

/** The text of the page and of its frames: the UI renders summaries and details (markdown) in iframes. */
async function pageText(page: Page): Promise<string> {
  // A function, not a string: the UI's Content-Security-Policy forbids eval. (No DOM types here: cast.)
  const bodyText = () =>
    (globalThis as unknown as { document: { body?: { innerText: string } } }).document.body?.innerText ?? '';
  const texts = await Promise.all(page.frames().map((frame) => frame.evaluate(bodyText).catch(() => '')));
  // UI 2.55 sets "1/2" as a fraction (U+2044 FRACTION SLASH).
  return texts.join('\n').replace(/\u2044/g, '/');
}

/**
 * Waits until the page shows `text` (the UI loads its data after the page). Failing, it keeps a screenshot in
 * .dev/ and says what the page showed.
 */
async function shows(page: Page, text: string, timeoutMs = 30_000): Promise<void> {
  try {
    await eventually(
      `${page.url()} to show ${JSON.stringify(text)}`,
      async () => (await pageText(page)).includes(text),
      timeoutMs,
      200,
    );
  } catch (err) {
    await page.screenshot({ path: resolve(root, '.dev/web-ui-failure.png'), fullPage: true }).catch(() => undefined);
    throw new Error(`${(err as Error).message}; it shows:\n${(await pageText(page)).slice(0, 12_000)}`);
  }
}

test('the workflow page shows the static summary, the current details and the timers’ summaries of a Progressive rollout', async () => {
  const name = 'checkout';
  // v1, then v2 all at once while two executions are pinned to v1 (it drains), then v3 Progressive with a long step.
  const v1 = (await rollTo(name, 'v1', {}, 'v1 current', (s) => s.phase === 'Ready' && !!s.currentVersion))
    .currentVersion!.buildID;
  for (const id of ['a', 'b'])
    pinned.push(
      await env.client.workflow.start('exampleWork', {
        taskQueue: taskQueueOf(env, name),
        workflowId: `${env.namespace}-pinned-${id}`,
      }),
    );
  await eventually('both executions pinned to v1', async () => {
    const versions = await Promise.all(
      pinned.map(
        async (h) => (await h.describe()).raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId,
      ),
    );
    return versions.every((b) => b === v1);
  });
  const v2 = (
    await rollTo(
      name,
      'v2',
      {},
      'v2 current',
      (s) => s.phase === 'Ready' && !!s.currentVersion && s.currentVersion.buildID !== v1,
    )
  ).currentVersion!.buildID;
  const steps = [
    { rampPercentage: 25, pauseDuration: '10m' },
    { rampPercentage: 75, pauseDuration: '10m' },
  ];
  const v3 = (
    await rollTo(
      name,
      'v3',
      { strategy: 'Progressive', steps },
      'v3 ramping',
      (s) => s.phase === 'Ramping' && s.targetVersion?.rampPercentage === 25,
    )
  ).targetVersion!.buildID;

  // The UI reads the current details once, as the page loads: open it when they say everything.
  const handle = workflowHandle(env, name);
  const headline = new RegExp(
    `^\\*\\*${v3} ramping 25 % — step 1 of 2, \\d+m\\d*s? left \\(until \\d\\d:\\d\\d:\\d\\d UTC\\); ${v2} current; ${v1} draining, 2 pinned executions open at \\d\\d:\\d\\d:\\d\\d UTC\\*\\*`,
  );
  await eventually('the current details to say where the rollout stands', async () => {
    const { currentDetails } = (await handle.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    return headline.test(currentDetails ?? '');
  });

  const uiAddress = process.env.TEMPORAL_UI_ADDRESS;
  expect(uiAddress).toBeDefined(); // set by tests/harness/servers-setup.ts
  const { runId } = await handle.describe();
  const page0 = `${uiAddress}/namespaces/${process.env.TEMPORAL_NAMESPACE ?? 'default'}/workflows/${encodeURIComponent(rolloutWorkflowId(env.installation, env.namespace, name))}/${runId}`;
  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] }); // root in a container: no sandbox
  const page = await browser.newPage({ viewport: { width: 1920, height: 1080 } });

  // The event history: the step's timer and the activities, each by its summary (the reads and writes inside the
  // task are local activities: their summaries are there too).
  await page.goto(`${page0}/history`);
  await shows(page, 'step 1/2: ramp 25% for 10m');
  await shows(page, `ramp ${v3} to 25%`);
  await shows(page, `wait for ${v3} to poll Temporal`);

  // User Metadata: the summary, the details and the current details.
  await page.goto(`${page0}/user-metadata`);
  await shows(page, `Rollouts of TemporalWorkerDeployment ${env.namespace}/${name}`);
  await shows(page, `${v3} ramping 25 % — step 1 of 2,`);
  await shows(page, `${v2} current; ${v1} draining, 2 pinned executions open at`);
  await shows(page, 'Ramping: step 1 of 2: ramp 25% for 10m');

  for (const file of ['.dev/web-ui.png', process.env.GLIDEPATH_SCREENSHOT].filter((f): f is string => !!f)) {
    const path = resolve(root, file);
    mkdirSync(dirname(path), { recursive: true });
    await page.screenshot({ path });
  }
}, 240_000);
