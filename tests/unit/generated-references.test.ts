/**
 * The generated references (`npm run generate`): every field of the CRDs' zod schemas has a description, which
 * reaches the CRD (what `kubectl explain` shows) and a row of docs/crd-reference.md; every command's usage and
 * options reach docs/cli-reference.md, the same whatever terminal runs the generator.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { kindDefinitions, renderCrds, type JsonSchema } from '../../api/crd.js';
import { TemporalConnectionSpec } from '../../api/temporal-connection.js';
import { TemporalWorkerDeploymentSpec } from '../../api/temporal-worker-deployment.js';
import { TemporalWorkerDeploymentStatus } from '../../api/rollout-status.js';
import { WorkerDeploymentSpec } from '../../api/worker-deployment.js';
import { helpPages, programName, renderCliReference } from '../../scripts/docs/cli-reference.js';
import { fieldRows, renderCrdReference } from '../../scripts/docs/crd-reference.js';
import { cliProgram, parseInvocation } from '../../cli/program.js';

const podTemplateSpec = JSON.parse(
  readFileSync(new URL('../../api/openapi/pod-template-spec.json', import.meta.url), 'utf8'),
) as JsonSchema;

/** Every property of a zod schema's own JSON Schema, as `a.b[].c` with its description; pod templates are leaves. */
function zodFields(schema: z.ZodType, podTemplates: string[]): { path: string; description?: string }[] {
  const fields: { path: string; description?: string }[] = [];
  const visit = (node: JsonSchema, path: string): void => {
    if (node.type === 'array' && node.items) return visit(node.items as JsonSchema, `${path}[]`);
    for (const [key, child] of Object.entries((node.properties ?? {}) as Record<string, JsonSchema>)) {
      const at = path ? `${path}.${key}` : key;
      fields.push({ path: at, description: child.description as string | undefined });
      if (!podTemplates.includes(at)) visit(child, at);
    }
  };
  visit(z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', unrepresentable: 'any' }) as JsonSchema, '');
  return fields;
}

/** The node at `path` (`a.b[].c`) of a structural schema. */
function nodeAt(root: JsonSchema, path: string): JsonSchema | undefined {
  let node: JsonSchema | undefined = root;
  for (const part of path.split('.')) {
    const [key, ...arrays] = part.split('[]');
    node = (node?.properties as Record<string, JsonSchema> | undefined)?.[key!];
    for (const _ of arrays) node = node?.items as JsonSchema | undefined;
  }
  return node;
}

const schemas = [
  { kind: 'TemporalWorkerDeployment', part: 'spec', schema: TemporalWorkerDeploymentSpec, podTemplates: ['template'] },
  { kind: 'TemporalWorkerDeployment', part: 'status', schema: TemporalWorkerDeploymentStatus, podTemplates: [] },
  {
    kind: 'WorkerDeployment',
    part: 'spec',
    schema: WorkerDeploymentSpec,
    podTemplates: ['deployment.template', 'template'],
  },
  { kind: 'TemporalConnection', part: 'spec', schema: TemporalConnectionSpec, podTemplates: [] },
] as const;

describe('the CRD reference', () => {
  const crds = renderCrds(podTemplateSpec);
  const reference = renderCrdReference(kindDefinitions());

  test.each(schemas)('every field of the $kind $part has a description', ({ schema, podTemplates }) => {
    const fields = zodFields(schema, [...podTemplates]);
    expect(fields.length).toBeGreaterThan(5);
    expect(fields.filter((f) => !f.description?.trim()).map((f) => f.path)).toEqual([]);
  });

  test.each(schemas)(
    'the $kind $part: each description is in the CRD, for kubectl explain',
    ({ kind, part, schema, podTemplates }) => {
      const crd = crds.find((c) => c.spec.names.kind === kind)!;
      const root = crd.spec.versions[0]!.schema.openAPIV3Schema as JsonSchema;
      for (const f of zodFields(schema, [...podTemplates])) {
        expect({ path: f.path, description: nodeAt(root, `${part}.${f.path}`)?.description }).toEqual({
          path: f.path,
          description: f.description,
        });
      }
      expect(root.description).toEqual(expect.any(String));
    },
  );

  test.each(schemas)(
    'the $kind $part: each field is a row of docs/crd-reference.md, with its description',
    ({ kind, part, schema, podTemplates }) => {
      const fields = zodFields(schema, [...podTemplates]);
      const definition = kindDefinitions().find((k) => k.kind === kind)!;
      const rows = fieldRows(part === 'spec' ? definition.spec : definition.status, part, definition.podTemplates).rows;
      expect(rows.map((r) => r.path)).toEqual(fields.map((f) => `${part}.${f.path}`));
      const section = reference.split(`\n### ${kind} ${part}\n`)[1]!.split('\n#')[0]!;
      for (const f of fields) {
        const row = section.split('\n').find((line) => line.startsWith(`| \`${part}.${f.path}\` |`));
        expect({ path: f.path, row: row?.includes(f.description!.replace(/\|/g, '\\|')) }).toEqual({
          path: f.path,
          row: true,
        });
      }
    },
  );

  test('defaults, required fields and CEL rules are in the rows; a spec or status seen before is a link', () => {
    expect(reference).toContain('| `spec.sunset.scaledownDelay` | duration, ≥ 0s | `1h` |  |');
    expect(reference).toContain('| `spec.rollout.steps[].rampPercentage` | integer, 1–99 |  | yes |');
    expect(reference).toMatch(
      /\| `spec\.progressDeadlineSeconds` \|.*Validation: must be greater than minReadySeconds\. \|/,
    );
    // A rule inside the pod template is said at the template, with where it applies.
    expect(reference).toMatch(
      /\| `spec\.template` \| PodTemplateSpec \|.*Validation: spec\.restartPolicy: only "Always" is allowed\. \|/,
    );
    expect(reference).toContain(
      '### WorkerDeployment status\n\nThe same fields as [TemporalWorkerDeployment status](#temporalworkerdeployment-status).',
    );
    expect(reference).toContain(
      '### ClusterConnection spec\n\nThe same fields as [TemporalConnection spec](#temporalconnection-spec).',
    );
  });
});

describe('the CLI reference', () => {
  test("every command's usage and options are in its section, as --help prints them", async () => {
    const reference = await renderCliReference();
    const program = cliProgram(programName, () => undefined, { out: () => undefined, err: () => undefined });
    const sectionOf = (command: string) => reference.split(`\n## ${command}\n`)[1]?.split('\n## ')[0] ?? '';
    expect(sectionOf(programName)).toContain(`Usage: ${programName} [options] [command]`);
    for (const option of program.options) expect(sectionOf(programName)).toContain(option.flags);
    expect(program.commands.length).toBeGreaterThanOrEqual(9);
    for (const cmd of program.commands) {
      const section = sectionOf(`${programName} ${cmd.name()}`);
      expect(section).toContain(`Usage: ${programName} ${cmd.name()} ${cmd.usage()}`);
      for (const option of [...cmd.options, ...program.options]) expect(section).toContain(option.flags);
      expect(reference).toContain(`| [\`${cmd.name()}\`](#kubectl-glidepath-${cmd.name()}) | ${cmd.summary()} |`);
    }
  });

  test("the same on any terminal: the help is wrapped at a fixed width, not the terminal's", async () => {
    const before = await renderCliReference();
    const stdout = process.stdout as { isTTY?: boolean; columns?: number };
    const saved = { isTTY: stdout.isTTY, columns: stdout.columns };
    const watchLine =
      '\n  -w, --watch                       keep the view up to date (q or Ctrl-C to quit) (default: false)\n';
    Object.assign(stdout, { isTTY: true, columns: 80 });
    try {
      // The terminal does reach the CLI's own help (its options wrap at 80 columns)…
      const narrow = (await parseInvocation(['status', '--help'], programName)) as { text: string };
      expect(narrow.text).toContain('\n  -w, --watch                       keep the view up to date (q or Ctrl-C to\n');
      // …and not the reference.
      expect(await renderCliReference()).toBe(before);
      expect((await helpPages())[1]!.text).toContain(watchLine);
    } finally {
      Object.assign(stdout, saved);
    }
  });
});
