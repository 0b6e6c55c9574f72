/**
 * Bad input at volume, against the real kube-apiserver with the generated CRDs. fast-check generates
 * TemporalWorkerDeployments from a fixed seed (printed, and settable with GLIDEPATH_PROPERTY_SEED):
 * - invalid ones, each a random valid spec with one defect: kube-apiserver refuses it naming the field, and the
 *   zod schema the watcher parses with refuses it with an issue at that same field;
 * - valid ones, random combinations of the optional fields: kube-apiserver admits each, and the spec it returns
 *   (its defaults applied) is exactly what zod's parse of the same input gives.
 * Requests are dry runs (nothing stored), sent 16 at a time before fast-check checks each answer; a failure
 * shrinks with live requests. Nothing zod refuses is admitted any more, so specs the watcher must refuse on
 * its own (InvalidSpec) are those admitted under the previous, looser CRD: a sample of them meets the real
 * controller, which must say InvalidSpec and warn naming the field, start no workflow and create no Deployment.
 */
import { performance } from 'node:perf_hooks';
import * as k8s from '@kubernetes/client-node';
import { WorkflowNotFoundError } from '@temporalio/client';
import * as fc from 'fast-check';
import type { z } from 'zod';
import { apiVersion, buildIdPattern, group, version } from '../../api/common.js';
import { durationNanos } from '../../api/duration.js';
import { TemporalWorkerDeployment } from '../../api/temporal-worker-deployment.js';
import { schemaAt, withLooserCrd } from '../harness/looser-crd.js';
import {
  eventually,
  plural,
  startRolloutEnv,
  twdStatus,
  workflowHandle,
  type RolloutEnv,
} from '../harness/rollout-env.js';

const seed = Number(process.env.GLIDEPATH_PROPERTY_SEED ?? 20_251_122);
const numRuns = 1000;
const inFlight = 16;
const maxInt32 = 2_147_483_647;

type Obj = { [key: string]: unknown };
interface Twd {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: Obj;
}

let env: RolloutEnv;
beforeAll(async () => {
  env = await startRolloutEnv('spec-props');
  console.log(
    `[spec-properties] fast-check seed ${seed} (GLIDEPATH_PROPERTY_SEED), ${numRuns} runs per property, ${inFlight} requests in flight`,
  );
});
afterAll(async () => {
  await env?.stop();
});

// ---------------------------------------------------------------------------------------------------------
// kube-apiserver: dry-run creates, answered in bulk.

interface Answer {
  ok: boolean;
  /** The object as kube-apiserver would store it (admitted). */
  object?: Twd;
  code?: number;
  /** kube-apiserver's message: every cause, each prefixed with its field path. */
  message?: string;
  fields?: string[];
}

async function dryRunCreate(body: Twd): Promise<Answer> {
  try {
    const object = (await env.custom.createNamespacedCustomObject({
      group,
      version,
      namespace: env.namespace,
      plural,
      body,
      dryRun: 'All',
      fieldValidation: 'Strict',
    })) as Twd;
    return { ok: true, object };
  } catch (err) {
    const e = err as { code?: number; body?: unknown; message?: string };
    let status: { message?: string; details?: { causes?: { field?: string }[] } } = {};
    try {
      status = typeof e.body === 'string' ? JSON.parse(e.body) : ((e.body ?? {}) as typeof status);
    } catch {
      status = { message: String(e.body) };
    }
    if (e.code === undefined) throw err; // not an answer from kube-apiserver
    return {
      ok: false,
      code: e.code,
      message: status.message ?? e.message,
      fields: (status.details?.causes ?? []).map((c) => c.field ?? ''),
    };
  }
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/**
 * Checks `check` on `numRuns` values of `arb` with the fixed seed: first all of kube-apiserver's answers, 16
 * requests in flight (fast-check draws the same values for the same seed), then fast-check's run over them.
 */
async function checkProperty<T>(
  name: string,
  arb: fc.Arbitrary<T>,
  toObject: (value: T) => Twd,
  check: (value: T, body: Twd, answer: Answer) => void,
) {
  const answers = new Map<string, Answer>();
  let live = 0;
  const answer = async (body: Twd) => {
    const cached = answers.get(JSON.stringify(body));
    if (cached) return cached;
    live++;
    return dryRunCreate(body);
  };
  const property = fc.asyncProperty(arb, async (value) => {
    const body = toObject(value);
    check(value, body, await answer(body));
  });
  const started = performance.now();
  // fc.tuple(arb), not the property: fc.sample takes a property for an arbitrary and would bias it twice.
  const bodies = fc.sample(fc.tuple(arb), { seed, numRuns }).map(([value]) => toObject(value));
  await mapLimit(bodies, inFlight, async (body) => answers.set(JSON.stringify(body), await dryRunCreate(body)));
  const requestsMs = performance.now() - started;
  await fc.assert(property, { seed, numRuns });
  const totalMs = performance.now() - started;
  console.log(
    `[spec-properties] ${name}: ${numRuns} runs (seed ${seed}) in ${Math.round(totalMs)} ms: ${bodies.length} dry-run creates in ${Math.round(requestsMs)} ms, ` +
      `${live} more while checking`,
  );
  return { bodies };
}

// ---------------------------------------------------------------------------------------------------------
// zod, with issue paths written the way kube-apiserver writes field paths.

function issuePaths(error: z.ZodError): string[] {
  return error.issues.map((issue) =>
    issue.path.reduce<string>(
      (acc, key) => (typeof key === 'number' ? `${acc}[${key}]` : acc ? `${acc}.${String(key)}` : String(key)),
      '',
    ),
  );
}

/** `path` is `field` or inside it (`field.x`, `field[1]`). */
const within = (path: string, field: string) =>
  path === field || path.startsWith(`${field}.`) || path.startsWith(`${field}[`);

// ---------------------------------------------------------------------------------------------------------
// Generators of valid parts.

const dnsLabel = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
const validBuildId = fc.stringMatching(/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/);
const text = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 16 });
const int32 = (min: number) => fc.integer({ min, max: maxInt32 });
const jsonKey = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_]{0,8}$/);

const unit = fc.constantFrom('ns', 'us', 'µs', 'ms', 's', 'm', 'h');
const durationPart = fc
  .tuple(fc.nat({ max: 100_000 }), fc.option(fc.stringMatching(/^[0-9]{1,10}$/), { nil: undefined }), unit)
  .map(([whole, frac, u]) => `${whole}${frac === undefined ? '' : `.${frac}`}${u}`);
/** Go durations that CEL can hold (at most 3 × 100000h, far below its 2562047h). */
const anyDuration = fc.oneof(
  { weight: 8, arbitrary: fc.array(durationPart, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('')) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '2562047h47m16.854775807s',
      '9223372036854775807ns',
      '0s',
      '0.5ns',
      '1ns',
      '0.000000001s',
    ),
  },
);
const nonNegativeDuration = anyDuration;
const positiveDuration = anyDuration.filter((d) => durationNanos(d)! > 0n);

const labels = fc.dictionary(
  fc.stringMatching(/^([a-z0-9.]{1,20}\/)?[a-z0-9]([-a-z0-9_.]{0,20}[a-z0-9])?$/),
  fc.stringMatching(/^([A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?)?$/),
  { maxKeys: 3 },
);
const container = fc.record(
  {
    name: dnsLabel,
    image: fc.constantFrom(
      'glidepath/example-worker:1.0.0',
      'repo',
      'host:5000/team/repo:v2',
      `repo@sha256:${'ab'.repeat(32)}`,
      'repo:V1_rc.2',
    ),
    env: fc.uniqueArray(
      fc.record({ name: fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,10}$/), value: fc.string({ maxLength: 12 }) }),
      { maxLength: 3, selector: (e) => e.name },
    ),
    args: fc.array(fc.string({ maxLength: 10 }), { maxLength: 3 }),
    resources: fc.record({
      requests: fc.record(
        { cpu: fc.constantFrom('100m', '1', '250m'), memory: fc.constantFrom('128Mi', '1Gi') },
        { requiredKeys: [] },
      ),
    }),
  },
  { requiredKeys: ['name'] },
);
const template = fc.record(
  {
    metadata: fc.record(
      { labels, annotations: fc.dictionary(jsonKey, fc.string({ maxLength: 12 }), { maxKeys: 2 }) },
      { requiredKeys: [] },
    ),
    spec: fc.record(
      {
        containers: fc.uniqueArray(container, { minLength: 1, maxLength: 3, selector: (c) => c.name }),
        restartPolicy: fc.constant('Always'),
        serviceAccountName: dnsLabel,
        terminationGracePeriodSeconds: fc.nat({ max: 3600 }),
        nodeSelector: fc.dictionary(jsonKey, dnsLabel, { maxKeys: 2 }),
      },
      { requiredKeys: ['containers'] },
    ),
  },
  { requiredKeys: ['spec'] },
);

const keyRef = fc.record({ name: dnsLabel, key: text, optional: fc.boolean() }, { requiredKeys: ['name', 'key'] });
const inputFrom = fc.oneof(fc.record({ configMapKeyRef: keyRef }), fc.record({ secretKeyRef: keyRef }));
const input = fc.dictionary(jsonKey, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
const gate = fc
  .tuple(
    fc.record({ workflowType: text, taskQueue: text, timeout: positiveDuration }, { requiredKeys: ['workflowType'] }),
    fc.oneof(
      fc.constant({}),
      input.map((i) => ({ input: i })),
      inputFrom.map((f) => ({ inputFrom: f })),
    ),
  )
  .map(([g, source]) => ({ ...g, ...source }) as Obj);
const step = fc.record({ pauseDuration: positiveDuration, gate }, { requiredKeys: [] });
/** Strictly increasing ramps, each step with random optional fields. */
const steps = (minLength: number) =>
  fc
    .uniqueArray(fc.integer({ min: 1, max: 99 }), { minLength, maxLength: 20 })
    .chain((ramps) =>
      fc.tuple(
        ...[...ramps].sort((a, b) => a - b).map((rampPercentage) => step.map((s) => ({ rampPercentage, ...s }) as Obj)),
      ),
    )
    .map((list) => [...list]);
const analysis = fc.record(
  {
    maxFailurePercentage: fc.double({ min: 0, max: 100, noNaN: true }),
    maxFailureRatioToCurrent: fc.double({ min: Number.MIN_VALUE, max: 1e6, noNaN: true }),
    minExecutions: int32(1),
    maxWait: nonNegativeDuration,
    inconclusivePolicy: fc.constantFrom('Pass', 'Abort', 'Pause'),
    workflowTypes: fc.array(text, { maxLength: 3 }),
    window: positiveDuration,
  },
  { requiredKeys: ['maxFailurePercentage'] },
);
const rolloutOptions = fc.record(
  {
    gate,
    gateFailurePolicy: fc.constantFrom('Abort', 'Pause'),
    paused: fc.boolean(),
    rollbackWindow: nonNegativeDuration,
    analysis,
    onAbort: fc.record({ movePinned: fc.boolean() }, { requiredKeys: [] }),
  },
  { requiredKeys: [] },
);
const rollout = fc
  .tuple(
    fc.oneof(
      steps(1).map((s) => ({ strategy: 'Progressive', steps: s })),
      fc.record({ strategy: fc.constantFrom('Manual', 'AllAtOnce'), steps: steps(0) }, { requiredKeys: ['strategy'] }),
    ),
    rolloutOptions,
  )
  .map(([r, o]) => ({ ...r, ...o }) as Obj);
const onMaxDrain = fc.oneof(
  fc.record({ action: fc.constantFrom('Wait', 'Cancel', 'Terminate'), signalName: text }, { requiredKeys: [] }),
  fc.record({ action: fc.constant('Signal'), signalName: text }),
);
const sunset = fc.record(
  {
    scaledownDelay: nonNegativeDuration,
    deleteDelay: nonNegativeDuration,
    drainBeforeDelete: positiveDuration,
    maxDrainDuration: positiveDuration,
    onMaxDrain,
  },
  { requiredKeys: [] },
);
/** minReadySeconds < progressDeadlineSeconds, counting the defaults (0 and 600). */
const deadlines = fc.oneof(
  fc.constant({}),
  fc.record({ minReadySeconds: fc.nat({ max: 599 }) }),
  fc.record({ progressDeadlineSeconds: int32(1) }),
  fc
    .nat({ max: maxInt32 - 1 })
    .chain((m) => int32(m + 1).map((p) => ({ minReadySeconds: m, progressDeadlineSeconds: p }))),
);
const workerOptions = fc.record(
  { connectionRef: fc.record({ name: dnsLabel }), temporalNamespace: text, unsafeCustomBuildID: validBuildId },
  { requiredKeys: ['connectionRef', 'temporalNamespace'] },
);
const validTwd: fc.Arbitrary<Twd> = fc
  .tuple(
    dnsLabel,
    fc.record({ replicas: int32(0), sunset }, { requiredKeys: [] }),
    deadlines,
    template,
    rollout,
    workerOptions,
  )
  .map(([name, optional, d, t, r, w]) => ({
    apiVersion,
    kind: 'TemporalWorkerDeployment',
    metadata: { name },
    spec: { ...optional, ...d, template: t, rollout: r, workerOptions: w },
  }));

/** What goes over the wire (JSON: no undefined, no -0). */
const wire = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

// ---------------------------------------------------------------------------------------------------------
// Defects: each turns a valid TemporalWorkerDeployment into one with exactly one thing wrong, at `field`.

type Path = (string | number)[];
interface Edit {
  path: Path;
  value?: unknown;
  remove?: boolean;
}
interface Defect {
  kind: string;
  /** The field kube-apiserver and zod must both name, as kube-apiserver writes it. */
  field: string;
  edits: Edit[];
}

const fieldOf = (path: Path) =>
  path.reduce<string>((acc, k) => (typeof k === 'number' ? `${acc}[${k}]` : acc ? `${acc}.${k}` : k), '');
const set = (path: Path, value: unknown): Edit => ({ path, value });
const remove = (path: Path): Edit => ({ path, remove: true });
/** One edit, named by the path it breaks. */
const at = (kind: string, path: Path, value: fc.Arbitrary<unknown>): fc.Arbitrary<Defect> =>
  value.map((v) => ({ kind, field: fieldOf(path), edits: [set(path, v)] }));
const missing = (path: Path, ...before: Edit[]): Defect => ({
  kind: `no ${fieldOf(path)}`,
  field: fieldOf(path),
  edits: [...before, remove(path)],
});

function applyEdits(obj: Twd, edits: Edit[]): Twd {
  const copy = structuredClone(obj) as unknown as Obj;
  for (const { path, value, remove: del } of edits) {
    let node = copy as Obj;
    for (const key of path.slice(0, -1)) {
      const k = String(key);
      if (node[k] === undefined || node[k] === null || typeof node[k] !== 'object')
        node[k] = typeof key === 'number' ? [] : {};
      node = node[k] as Obj;
    }
    const last = String(path[path.length - 1]);
    if (del) delete node[last];
    else node[last] = value;
  }
  return copy as unknown as Twd;
}

const notIn = (allowed: string[]) => fc.string({ unit: 'grapheme', maxLength: 12 }).filter((s) => !allowed.includes(s));
/** Within a relative 1e-9 of an integer: kube-apiserver's OpenAPI check takes it for one (CEL does not). */
const nearInteger = fc
  .tuple(
    fc.integer({ min: 1, max: 99 }),
    fc.integer({ min: -1000, max: 1000 }).filter((k) => k !== 0),
  )
  .map(([n, k]) => n + k * 2 ** -40);
const wrongType = {
  integer: fc.oneof(
    fc.string({ maxLength: 5 }),
    fc.boolean(),
    fc.constant([1]),
    fc.constant({ n: 1 }),
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Number.isInteger(n)),
    { weight: 2, arbitrary: nearInteger },
  ),
  number: fc.oneof(fc.string({ maxLength: 5 }), fc.boolean(), fc.constant([1]), fc.constant({})),
  string: fc.oneof(fc.integer(), fc.boolean(), fc.constant(['x']), fc.constant({ s: 'x' })),
  boolean: fc.oneof(fc.constantFrom('true', 'false', 'yes'), fc.integer({ min: 0, max: 1 }), fc.constant({})),
  object: fc.oneof(fc.string({ maxLength: 5 }), fc.integer(), fc.boolean(), fc.constant([{}])),
  array: fc.oneof(fc.string({ maxLength: 5 }), fc.integer(), fc.constant({ a: 1 })),
};
const badDuration = fc.oneof(
  fc.constantFrom(
    '5 minutes',
    '1d',
    '-5s',
    '',
    '10',
    's',
    '1h-2m',
    '1.s',
    '.5s',
    '1e3s',
    '5M',
    '1h ',
    ' 1h',
    '1H',
    '+1s',
    '1µ',
    '1hh',
  ),
  fc
    .string({ unit: 'grapheme', maxLength: 8 })
    .filter((s) => durationNanos(s) === undefined && !/^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$/.test(s)),
);
const overflowingDuration = fc.oneof(
  fc.constantFrom(
    '2562048h',
    '9223372036854775808ns',
    '2562047h47m16.854775808s',
    '100000000h',
    '153722868m',
    '99999999999999999999s',
  ),
  fc.bigInt({ min: 2_562_048n, max: 10n ** 15n }).map((h) => `${h}h`),
);
const zeroDuration = fc.oneof(
  fc.constantFrom('0s', '0h0m0s', '0.5ns', '0.999ns', '0.0001us', '0ms0ns', '0.0000000001s'),
  fc
    .array(
      fc.tuple(fc.stringMatching(/^0{1,3}$/), unit).map(([z, u]) => `${z}${u}`),
      { minLength: 1, maxLength: 3 },
    )
    .map((p) => p.join('')),
);
/** Defects of a duration at `path`: not one, out of CEL's range, or (when it must be > 0) zero. */
const durationDefects = (path: Path, positive: boolean): fc.Arbitrary<Defect>[] => [
  at('duration format', path, badDuration),
  at('duration past int64 ns', path, overflowingDuration),
  at('duration wrong type', path, wrongType.string),
  ...(positive ? [at('duration zero', path, zeroDuration)] : []),
];

const badDnsLabel = fc.oneof(
  fc.constantFrom(
    '',
    'Orders',
    'orders_v1',
    'orders.v1',
    '-orders',
    'orders-',
    'a'.repeat(64),
    'ord ers',
    'ördérs',
    'a/b',
  ),
  fc
    .string({ unit: 'grapheme', maxLength: 70 })
    .filter((s) => !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(s) || s.length > 63),
);
const badBuildId = fc.oneof(
  fc.constantFrom(
    '',
    '---',
    '__v1',
    '_v1',
    'v1_',
    '.v1',
    'v1.',
    'feature/login',
    'v1 rc',
    'v1:2',
    'v1@sha',
    'v1+build',
    'ünïcode',
    'b'.repeat(64),
  ),
  fc.stringMatching(/^[-A-Za-z0-9_.]{64,90}$/),
  fc.string({ unit: 'grapheme', maxLength: 70 }).filter((s) => !new RegExp(buildIdPattern).test(s) || s.length > 63),
);

const gatePaths: fc.Arbitrary<{ before: Edit[]; path: Path }> = fc.oneof(
  fc.constant<{ before: Edit[]; path: Path }>({ before: [], path: ['spec', 'rollout', 'gate'] }),
  fc.tuple(steps(1), fc.nat()).map(([s, n]) => {
    const i = n % s.length;
    return { before: [set(['spec', 'rollout', 'steps'], s)], path: ['spec', 'rollout', 'steps', i, 'gate'] };
  }),
);
/** A gate (the rollout's or a step's) with one defect. */
const gateDefects: fc.Arbitrary<Defect> = fc
  .tuple(
    gatePaths,
    gate,
    inputFrom,
    input,
    keyRef,
    fc.integer({ min: 0, max: 13 }),
    fc.oneof(badDnsLabel, wrongType.string),
    wrongType.object,
    badDuration,
    zeroDuration,
  )
  .map(([{ before, path }, g, from, inp, ref, which, badName, notObject, badDur, zeroDur]) => {
    const base = structuredClone(g);
    delete base.input;
    delete base.inputFrom;
    const p = (...rest: Path) => [...path, ...rest];
    const cases: [string, Obj, Path][] = [
      ['both input and inputFrom', { ...base, input: inp, inputFrom: from }, p('inputFrom')],
      ['inputFrom with neither ref', { ...base, inputFrom: {} }, p('inputFrom')],
      ['inputFrom with both refs', { ...base, inputFrom: { configMapKeyRef: ref, secretKeyRef: ref } }, p('inputFrom')],
      ['no workflowType', (({ workflowType: _w, ...rest }) => rest)(base), p('workflowType')],
      ['empty workflowType', { ...base, workflowType: '' }, p('workflowType')],
      ['workflowType not a string', { ...base, workflowType: 42 }, p('workflowType')],
      ['empty taskQueue', { ...base, taskQueue: '' }, p('taskQueue')],
      ['timeout not a duration', { ...base, timeout: badDur }, p('timeout')],
      ['timeout zero', { ...base, timeout: zeroDur }, p('timeout')],
      [
        'a bad ref name',
        { ...base, inputFrom: { configMapKeyRef: { ...ref, name: badName } } },
        p('inputFrom', 'configMapKeyRef', 'name'),
      ],
      [
        'a ref without key',
        { ...base, inputFrom: { secretKeyRef: { name: ref.name } } },
        p('inputFrom', 'secretKeyRef', 'key'),
      ],
      [
        'a ref with an empty key',
        { ...base, inputFrom: { configMapKeyRef: { ...ref, key: '' } } },
        p('inputFrom', 'configMapKeyRef', 'key'),
      ],
      [
        'a ref with optional not a boolean',
        { ...base, inputFrom: { secretKeyRef: { ...ref, optional: 'yes' } } },
        p('inputFrom', 'secretKeyRef', 'optional'),
      ],
      ['input not an object', { ...base, input: notObject }, p('input')],
    ];
    const [kind, broken, field] = cases[which]!;
    return { kind: `gate: ${kind}`, field: fieldOf(field), edits: [...before, set(path, broken)] };
  });

const S = ['spec'];
const R = ['spec', 'rollout'];
const A = ['spec', 'rollout', 'analysis'];
const W = ['spec', 'workerOptions'];
const T = ['spec', 'template', 'spec'];

const stepDefects: fc.Arbitrary<Defect>[] = [
  fc.constant({
    kind: 'Progressive without steps',
    field: 'spec.rollout.steps',
    edits: [set([...R, 'strategy'], 'Progressive'), remove([...R, 'steps'])],
  }),
  fc.constant({
    kind: 'Progressive with no steps',
    field: 'spec.rollout.steps',
    edits: [set([...R, 'strategy'], 'Progressive'), set([...R, 'steps'], [])],
  }),
  fc.integer({ min: 21, max: 40 }).map((n) => ({
    kind: 'more than 20 steps',
    field: 'spec.rollout.steps',
    edits: [
      set(
        [...R, 'steps'],
        Array.from({ length: n }, (_, i) => ({ rampPercentage: i + 1 })),
      ),
    ],
  })),
  fc
    .array(fc.integer({ min: 1, max: 99 }), { minLength: 2, maxLength: 20 })
    .filter((ramps) => ramps.some((r, i) => i > 0 && r <= ramps[i - 1]!))
    .map((ramps) => ({
      kind: 'ramps not strictly increasing',
      field: 'spec.rollout.steps',
      edits: [
        set(
          [...R, 'steps'],
          ramps.map((rampPercentage) => ({ rampPercentage })),
        ),
      ],
    })),
  fc
    .tuple(
      steps(1),
      fc.nat(),
      fc.oneof(
        fc.integer({ max: 0 }),
        fc.integer({ min: 100 }),
        fc.double({ min: 1, max: 99, noNaN: true }).filter((n) => !Number.isInteger(n)),
        wrongType.integer,
      ),
    )
    .map(([generated, n, bad]) => {
      const s = structuredClone(generated);
      const i = n % s.length;
      s[i]!.rampPercentage = bad;
      return {
        kind: 'rampPercentage out of range or not an integer',
        field: `spec.rollout.steps[${i}].rampPercentage`,
        edits: [set([...R, 'steps'], s)],
      };
    }),
  fc.tuple(steps(1), fc.nat()).map(([generated, n]) => {
    const s = structuredClone(generated);
    const i = n % s.length;
    delete s[i]!.rampPercentage;
    return {
      kind: 'a step without rampPercentage',
      field: `spec.rollout.steps[${i}].rampPercentage`,
      edits: [set([...R, 'steps'], s)],
    };
  }),
  fc.tuple(steps(1), fc.nat(), fc.oneof(badDuration, zeroDuration, overflowingDuration)).map(([generated, n, bad]) => {
    const s = structuredClone(generated);
    const i = n % s.length;
    s[i]!.pauseDuration = bad;
    return {
      kind: 'a bad pauseDuration',
      field: `spec.rollout.steps[${i}].pauseDuration`,
      edits: [set([...R, 'steps'], s)],
    };
  }),
  at('steps not an array', [...R, 'steps'], wrongType.array),
];

const defect: fc.Arbitrary<Defect> = fc.oneof<(fc.Arbitrary<Defect> | fc.WeightedArbitrary<Defect>)[]>(
  // metadata and the spec as a whole
  { weight: 4, arbitrary: at('a bad name', ['metadata', 'name'], badDnsLabel) },
  fc.constant(missing(['spec'])),
  at('spec not an object', S, wrongType.object),
  ...['template', 'rollout', 'workerOptions'].map((k) => fc.constant(missing([...S, k]))),
  // replicas and deadlines
  at('negative replicas', [...S, 'replicas'], fc.integer({ max: -1 })),
  at('replicas past int32', [...S, 'replicas'], fc.integer({ min: maxInt32 + 1, max: Number.MAX_SAFE_INTEGER })),
  at('replicas not an integer', [...S, 'replicas'], wrongType.integer),
  at('negative minReadySeconds', [...S, 'minReadySeconds'], fc.integer({ max: -1 })),
  at('minReadySeconds not an integer', [...S, 'minReadySeconds'], wrongType.integer),
  at('progressDeadlineSeconds below 1', [...S, 'progressDeadlineSeconds'], fc.integer({ max: 0 })),
  at(
    'progressDeadlineSeconds past int32',
    [...S, 'progressDeadlineSeconds'],
    fc.integer({ min: maxInt32 + 1, max: 2 ** 40 }),
  ),
  fc.integer({ min: 1, max: maxInt32 }).chain((m) =>
    fc.integer({ min: 1, max: m }).map((p) => ({
      kind: 'progressDeadlineSeconds not above minReadySeconds',
      field: 'spec.progressDeadlineSeconds',
      edits: [set([...S, 'minReadySeconds'], m), set([...S, 'progressDeadlineSeconds'], p)],
    })),
  ),
  fc.integer({ min: 600, max: maxInt32 }).map((m) => ({
    kind: 'minReadySeconds not below the default progressDeadlineSeconds',
    field: 'spec.progressDeadlineSeconds',
    edits: [set([...S, 'minReadySeconds'], m), remove([...S, 'progressDeadlineSeconds'])],
  })),
  // rollout
  at('an unknown strategy', [...R, 'strategy'], notIn(['Manual', 'AllAtOnce', 'Progressive'])),
  fc.constant(missing([...R, 'strategy'])),
  at('rollout not an object', R, wrongType.object),
  ...stepDefects,
  { weight: 14, arbitrary: gateDefects },
  at('an unknown gateFailurePolicy', [...R, 'gateFailurePolicy'], notIn(['Abort', 'Pause'])),
  at('paused not a boolean', [...R, 'paused'], wrongType.boolean),
  ...durationDefects([...R, 'rollbackWindow'], false),
  at('onAbort not an object', [...R, 'onAbort'], wrongType.object),
  at('onAbort.movePinned not a boolean', [...R, 'onAbort', 'movePinned'], wrongType.boolean),
  // analysis (a valid one first, then the defect)
  ...(
    [
      [
        'maxFailurePercentage out of range',
        'maxFailurePercentage',
        fc.oneof(
          fc.double({ max: -Number.MIN_VALUE, noNaN: true, noDefaultInfinity: true }),
          fc.double({ min: 100.000001, noNaN: true, noDefaultInfinity: true }),
        ),
      ],
      ['maxFailurePercentage not a number', 'maxFailurePercentage', wrongType.number],
      [
        'maxFailureRatioToCurrent not above 0',
        'maxFailureRatioToCurrent',
        fc.double({ max: 0, noNaN: true, noDefaultInfinity: true }),
      ],
      ['minExecutions below 1', 'minExecutions', fc.integer({ max: 0 })],
      ['minExecutions not an integer', 'minExecutions', wrongType.integer],
      ['an unknown inconclusivePolicy', 'inconclusivePolicy', notIn(['Pass', 'Abort', 'Pause'])],
      ['workflowTypes not an array', 'workflowTypes', wrongType.array],
    ] as [string, string, fc.Arbitrary<unknown>][]
  ).map(([kind, key, bad]) =>
    fc.tuple(analysis, bad).map(([a, b]) => ({
      kind: `analysis: ${kind}`,
      field: `spec.rollout.analysis.${key}`,
      edits: [set(A, a), set([...A, key], b)],
    })),
  ),
  fc.tuple(analysis, fc.array(text, { maxLength: 3 }), fc.nat()).map(([a, types, n]) => {
    const i = n % (types.length + 1);
    const list = [...types.slice(0, i), '', ...types.slice(i)];
    return {
      kind: 'analysis: an empty workflow type',
      field: `spec.rollout.analysis.workflowTypes[${i}]`,
      edits: [set(A, a), set([...A, 'workflowTypes'], list)],
    };
  }),
  fc.tuple(analysis).map(([a]) => missing([...A, 'maxFailurePercentage'], set(A, a))),
  ...[...durationDefects([...A, 'maxWait'], false), ...durationDefects([...A, 'window'], true)].map((d) =>
    fc.tuple(analysis, d).map(([a, x]) => ({ ...x, kind: `analysis: ${x.kind}`, edits: [set(A, a), ...x.edits] })),
  ),
  // sunset
  at('sunset not an object', ['spec', 'sunset'], wrongType.object),
  ...durationDefects(['spec', 'sunset', 'scaledownDelay'], false),
  ...durationDefects(['spec', 'sunset', 'deleteDelay'], false),
  ...durationDefects(['spec', 'sunset', 'drainBeforeDelete'], true),
  ...durationDefects(['spec', 'sunset', 'maxDrainDuration'], true),
  at(
    'an unknown onMaxDrain action',
    ['spec', 'sunset', 'onMaxDrain', 'action'],
    notIn(['Wait', 'Cancel', 'Terminate', 'Signal']),
  ),
  fc.constant({
    kind: 'onMaxDrain Signal without signalName',
    field: 'spec.sunset.onMaxDrain.signalName',
    edits: [set(['spec', 'sunset', 'onMaxDrain'], { action: 'Signal' })],
  }),
  fc.constant({
    kind: 'onMaxDrain with an empty signalName',
    field: 'spec.sunset.onMaxDrain.signalName',
    edits: [set(['spec', 'sunset', 'onMaxDrain'], { action: 'Signal', signalName: '' })],
  }),
  // pod template
  at(
    'restartPolicy other than Always',
    [...T, 'restartPolicy'],
    fc.oneof(fc.constantFrom('Never', 'OnFailure', 'always', ''), notIn(['Always'])),
  ),
  fc.constant({
    kind: 'no containers',
    field: 'spec.template.spec.containers',
    edits: [set([...T, 'containers'], [])],
  }),
  fc.constant(missing([...T, 'containers'])),
  fc.constant(missing(['spec', 'template', 'spec'])),
  fc
    .tuple(fc.uniqueArray(container, { minLength: 1, maxLength: 3, selector: (c) => c.name }), fc.nat(), fc.nat())
    .map(([cs, a, b]) => {
      const list = [...cs];
      list.splice(b % (list.length + 1), 0, { ...list[a % list.length]!, args: ['the same name'] });
      return {
        kind: 'duplicate container names',
        field: 'spec.template.spec.containers',
        edits: [set([...T, 'containers'], list)],
      };
    }),
  fc
    .tuple(
      fc.uniqueArray(container, { minLength: 1, maxLength: 3, selector: (c) => c.name }),
      fc.nat(),
      badDnsLabel.filter((s) => s !== ''),
    )
    .map(([cs, n, bad]) => {
      const i = n % cs.length;
      const list: Obj[] = cs.map((c) => ({ ...c }));
      list[i]!.name = bad;
      return {
        kind: 'a container name that is not a DNS label',
        field: `spec.template.spec.containers[${i}].name`,
        edits: [set([...T, 'containers'], list)],
      };
    }),
  fc
    .tuple(fc.uniqueArray(container, { minLength: 1, maxLength: 3, selector: (c) => c.name }), fc.nat())
    .map(([cs, n]) => {
      const i = n % cs.length;
      const list: Obj[] = cs.map((c) => ({ ...c }));
      delete list[i]!.name;
      return {
        kind: 'a container without a name',
        field: `spec.template.spec.containers[${i}].name`,
        edits: [set([...T, 'containers'], list)],
      };
    }),
  // worker options
  { weight: 6, arbitrary: at('a bad custom build ID', [...W, 'unsafeCustomBuildID'], badBuildId) },
  at('a custom build ID not a string', [...W, 'unsafeCustomBuildID'], wrongType.string),
  at('a bad connectionRef name', [...W, 'connectionRef', 'name'], badDnsLabel),
  fc.constant(missing([...W, 'connectionRef'])),
  fc.constant(missing([...W, 'connectionRef', 'name'])),
  at('an empty temporalNamespace', [...W, 'temporalNamespace'], fc.constant('')),
  fc.constant(missing([...W, 'temporalNamespace'])),
  at('temporalNamespace not a string', [...W, 'temporalNamespace'], wrongType.string),
);

// ---------------------------------------------------------------------------------------------------------

test(`${numRuns} invalid TemporalWorkerDeployments: kube-apiserver refuses each naming the field, and zod refuses it at the same field`, async () => {
  const kinds = new Map<string, number>();
  const arb = fc.tuple(validTwd, defect).map(([twd, d]) => ({ body: wire(applyEdits(twd, d.edits)), defect: d }));
  await checkProperty(
    'invalid',
    arb,
    (v) => v.body,
    ({ defect: d }, body, answer) => {
      kinds.set(d.kind, (kinds.get(d.kind) ?? 0) + 1);
      const context = `${d.kind} at ${d.field}: kube-apiserver said ${answer.message}`;
      // Refused by admission: 422 with a cause per field, or 400 from strict decoding (an object where a string
      // goes has fields the schema does not declare: `unknown field "spec.….maxWait.s"`).
      expect({ context, ok: answer.ok }).toEqual({ context, ok: false });
      const causeNamesIt =
        answer.code === 400 ? answer.fields!.length === 0 : answer.fields!.some((f) => within(f, d.field));
      expect({ context, fieldNamed: causeNamesIt && answer.message!.includes(d.field) }).toEqual({
        context,
        fieldNamed: true,
      });
      const parsed = TemporalWorkerDeployment.safeParse(body);
      expect({ context, zodRefused: !parsed.success }).toEqual({ context, zodRefused: true });
      const paths = issuePaths(parsed.error!);
      expect({ context, paths, sameField: paths.some((p) => within(p, d.field)) }).toEqual({
        context,
        paths,
        sameField: true,
      });
    },
  );
  console.log(
    `[spec-properties] invalid: ${kinds.size} kinds of defect: ${[...kinds]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ×${n}`)
      .join('; ')}`,
  );
  expect(kinds.size).toBeGreaterThanOrEqual(60);
});

test(`${numRuns} valid TemporalWorkerDeployments: kube-apiserver admits each, and its defaults are exactly zod's`, async () => {
  const seen = { customBuildIds: 0, steps: 0, gates: 0, analysis: 0, onMaxDrain: 0 };
  await checkProperty(
    'valid',
    validTwd.map(wire),
    (body) => body,
    (body, _same, answer) => {
      const spec = body.spec as { rollout: Obj; sunset?: Obj; workerOptions: Obj };
      seen.customBuildIds += spec.workerOptions.unsafeCustomBuildID ? 1 : 0;
      seen.steps += (spec.rollout.steps as unknown[] | undefined)?.length ? 1 : 0;
      seen.gates += spec.rollout.gate ? 1 : 0;
      seen.analysis += spec.rollout.analysis ? 1 : 0;
      seen.onMaxDrain += spec.sunset?.onMaxDrain ? 1 : 0;
      expect({ admitted: answer.ok, message: answer.message }).toEqual({ admitted: true, message: undefined });
      const parsed = TemporalWorkerDeployment.safeParse(body);
      expect(parsed.success ? [] : parsed.error.issues).toEqual([]);
      // What kube-apiserver stores (its defaults applied) is what the watcher's parse of the input gives ...
      expect(answer.object!.spec).toEqual(parsed.data!.spec);
      // ... and parsing the stored object changes nothing.
      expect(TemporalWorkerDeployment.parse(answer.object).spec).toEqual(answer.object!.spec);
    },
  );
  console.log(`[spec-properties] valid: of ${numRuns}, ${JSON.stringify(seen)}`);
  for (const n of Object.values(seen)) expect(n).toBeGreaterThan(50);
});

// ---------------------------------------------------------------------------------------------------------
// InvalidSpec: specs admitted before the CRD refused them (custom build IDs were sanitised then, names could hold
// "." though Temporal refuses it in a worker deployment name, and integers could be floats within 1e-9 of one).
// kube-apiserver keeps them as they are.

/**
 * `statusRefused`: kube-apiserver refuses every write of the object's status now (the new integer rule fails to
 * evaluate on the stored float, and a failing CEL evaluation is not ratcheted), so InvalidSpec shows in the
 * Warning Event only.
 */
const storedBefore: { name: string; field: string; edit: (o: Twd) => void; statusRefused?: boolean }[] = [
  ...['feature/login', '---', '__v1', 'v1 rc', 'ünïcode'].map((id, i) => ({
    name: `old-build-id-${i}`,
    field: 'spec.workerOptions.unsafeCustomBuildID',
    edit: (o: Twd) => ((o.spec.workerOptions as Obj).unsafeCustomBuildID = id),
  })),
  ...['orders.v2', 'a.b.c'].map((name) => ({ name, field: 'metadata.name', edit: () => {} })),
  {
    name: 'float-replicas',
    field: 'spec.replicas',
    edit: (o: Twd) => (o.spec.replicas = 2.0000000001),
    statusRefused: true,
  },
];

test('specs admitted under the previous CRD get InvalidSpec and a Warning Event naming the field; no workflow, no Deployment', async () => {
  const started = performance.now();
  const objects = storedBefore.map(({ name, edit }) => {
    const o: Twd = {
      apiVersion,
      kind: 'TemporalWorkerDeployment',
      metadata: { name },
      spec: {
        template: { spec: { containers: [{ name: 'worker', image: 'glidepath/example-worker:1.0.0' }] } },
        rollout: { strategy: 'AllAtOnce' },
        workerOptions: {
          connectionRef: { name: 'local' },
          temporalNamespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
        },
      },
    };
    edit(o);
    return o;
  });
  const looser = (schema: { [key: string]: unknown }) => {
    delete schemaAt(schema, ['metadata', 'name']).pattern;
    delete schemaAt(schema, ['spec', 'workerOptions', 'unsafeCustomBuildID']).pattern;
    delete schemaAt(schema, ['spec', 'replicas']).x_kubernetes_validations; // the client's name for x-kubernetes-validations
  };
  await withLooserCrd(
    env.kc,
    looser,
    async () => (await dryRunCreate(objects[0]!)).ok,
    async () => {
      for (const body of objects)
        await env.custom.createNamespacedCustomObject({ group, version, namespace: env.namespace, plural, body });
    },
  );
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  for (const { name, field, statusRefused } of storedBefore) {
    if (!statusRefused) {
      const status = await eventually(`${name}: InvalidSpec`, async () => {
        const s = await twdStatus(env, name);
        return s?.phase === 'InvalidSpec' ? s : undefined;
      });
      expect(status.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
        status: 'False',
        reason: 'InvalidSpec',
      });
      expect(JSON.stringify(status)).toContain(field);
    }
    const warning = await eventually(
      `${name}: a Warning Event InvalidSpec`,
      async () => {
        const events = await core.listNamespacedEvent({
          namespace: env.namespace,
          fieldSelector: `involvedObject.name=${name}`,
        });
        return events.items.find((e) => e.type === 'Warning' && e.reason === 'InvalidSpec');
      },
      10_000,
    );
    expect(warning.message).toContain(field);
    await expect(workflowHandle(env, name).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  }
  // Nothing was touched: no Deployment at all in the namespace (the properties above only ever dry-ran).
  expect(
    (await env.apps.listNamespacedDeployment({ namespace: env.namespace })).items.map((d) => d.metadata?.name),
  ).toEqual([]);
  console.log(
    `[spec-properties] InvalidSpec: ${storedBefore.length} specs stored under the previous CRD, checked in ${Math.round(performance.now() - started)} ms`,
  );
});
