/**
 * docs/crd-reference.md, rendered from the kinds' structural schemas (`kindDefinitions` in api/crd.ts, made from the
 * zod schemas): per kind, a table of its spec's and its status' fields with their type, default, whether required
 * and the description `kubectl explain` shows. Pure: `scripts/generate.ts` writes it, the unit tests read it.
 */
import { buildIdPattern, dnsLabelPattern, group, version } from '../../api/common.js';
import type { JsonSchema, KindDefinition } from '../../api/crd.js';
import { durationPattern } from '../../api/duration.js';

/** One field of a spec or status, as its table row says it. */
export interface FieldRow {
  /** `spec.rollout.steps[].rampPercentage`: `[]` stands for every item of an array. */
  path: string;
  type: string;
  default?: string;
  required: boolean;
  description: string;
  /** The CEL rules' messages checked at this field (those the type does not already say). */
  validations: string[];
}

interface CelRule {
  rule: string;
  message: string;
  fieldPath?: string;
}

const propertiesOf = (node: JsonSchema) => (node.properties ?? {}) as Record<string, JsonSchema>;
const rulesOf = (node: JsonSchema) => (node['x-kubernetes-validations'] ?? []) as CelRule[];
/** The rules every integer and duration carries: the type column says them. */
const saidByType = (r: CelRule) => r.rule === 'type(self) == int' || r.rule.startsWith('duration(self)');
/** The largest int32: an upper bound that says nothing to a reader. */
const int32Max = 2 ** 31 - 1;
const namedPatterns: Record<string, string> = { [dnsLabelPattern]: 'DNS-1123 label', [buildIdPattern]: 'label value' };

function bounds(node: JsonSchema): string {
  const min = node.minimum as number | undefined;
  const max = node.maximum === int32Max ? undefined : (node.maximum as number | undefined);
  const above = node.exclusiveMinimum === true ? '>' : '≥';
  if (min !== undefined && max !== undefined) return `, ${min}–${max}`;
  if (min !== undefined) return `, ${above} ${min}`;
  if (max !== undefined) return `, ≤ ${max}`;
  return '';
}

function stringType(node: JsonSchema): string {
  const pattern = node.pattern as string | undefined;
  if (pattern === durationPattern) {
    const rule = rulesOf(node).find((r) => r.rule.startsWith('duration(self)'));
    return rule ? `duration, ${rule.rule.includes('>=') ? '≥' : '>'} 0s` : 'duration';
  }
  if (pattern && namedPatterns[pattern]) return `string (${namedPatterns[pattern]})`;
  if (pattern) return `string matching \`${pattern}\``;
  if (node.minLength === 1 && node.maxLength === undefined) return 'string, not empty';
  return 'string';
}

/** What a field holds, in a few words: `integer, 1–99`, `duration, > 0s`, `array of object, ≤ 20 items`. */
export function typeOf(node: JsonSchema): string {
  if (node['x-kubernetes-int-or-string']) return 'integer or string';
  if (Array.isArray(node.enum)) return `one of ${node.enum.map((v) => `\`${String(v)}\``).join(', ')}`;
  switch (node.type) {
    case 'string':
      return stringType(node);
    case 'integer':
    case 'number':
      return `${node.type}${bounds(node)}`;
    case 'array': {
      const items = `array of ${typeOf(node.items as JsonSchema)}`;
      if (node.maxItems !== undefined) return `${items}, ≤ ${String(node.maxItems)} items`;
      return items;
    }
    case 'object':
      if (node['x-kubernetes-preserve-unknown-fields']) return 'object (any JSON)';
      if (typeof node.additionalProperties === 'object')
        return `map of ${typeOf(node.additionalProperties as JsonSchema)}`;
      return 'object';
    default:
      return String(node.type ?? 'any');
  }
}

const formatDefault = (value: unknown) => `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;

/**
 * Every field under `root` (a spec or a status), depth first in the schema's order. A pod template (at one of
 * `opaque`, property names from `root`) is one row: it is Kubernetes' PodTemplateSpec, which `kubectl explain`
 * documents. A CEL rule is listed at the field its fieldPath names, or the nearest field above it.
 */
export function fieldRows(
  root: JsonSchema,
  prefix: string,
  opaque: string[][] = [],
): { rows: FieldRow[]; rootValidations: string[] } {
  const rows: FieldRow[] = [];
  const rules: { path: string; message: string }[] = [];
  const isOpaque = (keys: string[]) => opaque.some((o) => o.length === keys.length && o.every((k, i) => k === keys[i]));
  const visit = (node: JsonSchema, path: string, keys: string[]): void => {
    for (const r of rulesOf(node))
      if (!saidByType(r)) rules.push({ path: path + (r.fieldPath ?? ''), message: r.message });
    if (node.type === 'array' && node.items) return visit(node.items as JsonSchema, `${path}[]`, keys);
    const required = new Set((node.required ?? []) as string[]);
    for (const [key, child] of Object.entries(propertiesOf(node))) {
      const childPath = `${path}.${key}`;
      const childKeys = [...keys, key];
      const podTemplate = isOpaque(childKeys);
      rows.push({
        path: childPath,
        type: podTemplate ? 'PodTemplateSpec' : typeOf(child),
        ...(child.default !== undefined ? { default: formatDefault(child.default) } : {}),
        required: required.has(key),
        description: String(child.description ?? ''),
        validations: [],
      });
      if (podTemplate) {
        for (const r of rulesOf(child))
          if (!saidByType(r)) rules.push({ path: childPath + (r.fieldPath ?? ''), message: r.message });
      } else {
        visit(child, childPath, childKeys);
      }
    }
  };
  visit(root, prefix, []);
  const rootValidations: string[] = [];
  const byPath = new Map(rows.map((r) => [r.path, r]));
  for (const { path, message } of rules) {
    // The nearest row at or above the path the rule names; below a row (in a pod template), the rest of the path says where.
    let at = path;
    while (at.length > prefix.length && !byPath.has(at))
      at = at.slice(0, Math.max(at.lastIndexOf('.'), at.lastIndexOf('[')));
    const row = byPath.get(at);
    const said = at === path ? message : `${path.slice(at.length + 1)}: ${message}`;
    if (row) row.validations.push(said);
    else rootValidations.push(said);
  }
  return { rows, rootValidations };
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
const sentence = (text: string) => (text && !/[.!?]$/.test(text) ? `${text}.` : text);

function table(rows: FieldRow[]): string[] {
  return [
    '| field | type | default | required | description |',
    '|---|---|---|---|---|',
    ...rows.map((r) => {
      const checked = r.validations.length ? ` Validation: ${sentence(r.validations.join('; '))}` : '';
      return `| \`${r.path}\` | ${cell(r.type)} | ${r.default ? cell(r.default) : ''} | ${r.required ? 'yes' : ''} | ${cell(sentence(r.description) + checked)} |`;
    }),
  ];
}

/** GitHub's anchor for a heading. */
const anchor = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');

const intro = [
  '<!-- Generated by `npm run generate` from api/*.ts: do not edit by hand. -->',
  '',
  '# CRD reference',
  '',
  '> Generated by `npm run generate` from the zod schemas in `api/` (the CRDs in `k8s-manifests/base/crds/` are generated',
  '> from them too, with the same descriptions: `kubectl explain twd.spec.rollout`). Do not edit by hand: change the',
  '> schemas and run `npm run generate`; `npm run check:generated` fails while this file is stale.',
  '',
  `Every kind is in \`${group}/${version}\` (\`kubectl get glidepath\` lists them all).`,
  '',
  'In the tables, **required** means required in the object holding the field, when that object is given; **default**',
  'is the value kube-apiserver fills in when the field is not given (a default Glidepath applies later is said in the',
  'description). `[]` stands for every item of an array. Durations are Go durations such as `90s` or `1h30m`.',
  '**Validation** lists what kube-apiserver refuses beyond the type (CEL rules, as the watcher checks them too).',
  "`PodTemplateSpec` is Kubernetes' own schema, checked at apply as a Deployment's template is.",
];

/** The whole reference: the kinds, then each kind's spec and status. */
export function renderCrdReference(kinds: KindDefinition[]): string {
  const out: string[] = [...intro, '', '| kind | scope | short name | plural |', '|---|---|---|---|'];
  for (const k of kinds)
    out.push(`| [${k.kind}](#${anchor(k.kind)}) | ${k.scope} | \`${k.shortNames.join('`, `')}\` | \`${k.plural}\` |`);
  // A spec or status identical to one above is not repeated: a link to it says the same.
  const seen: { json: string; heading: string }[] = [];
  for (const k of kinds) {
    out.push('', `## ${k.kind}`, '', sentence(k.description), '');
    if (k.namePattern === dnsLabelPattern) {
      out.push(
        '`metadata.name`: a DNS-1123 label (lower-case letters, digits and `-`, at most 63 characters), as versioned Deployments are named after it.',
        '',
      );
    }
    out.push(`\`kubectl get ${k.shortNames[0]}\` prints ${k.printerColumns.map((c) => c.name).join(', ')}.`);
    for (const [part, schema, opaque] of [
      ['spec', k.spec, k.podTemplates],
      ['status', k.status, []],
    ] as const) {
      const heading = `${k.kind} ${part}`;
      out.push('', `### ${heading}`, '');
      const json = JSON.stringify(schema);
      const same = seen.find((s) => s.json === json);
      if (same) {
        out.push(`The same fields as [${same.heading}](#${anchor(same.heading)}).`);
        continue;
      }
      seen.push({ json, heading });
      if (schema.description) out.push(sentence(String(schema.description)), '');
      const { rows, rootValidations } = fieldRows(schema, part, [...opaque]);
      if (!rows.length) {
        out.push('No fields.');
        continue;
      }
      out.push(...table(rows));
      if (rootValidations.length)
        out.push('', `Validation of the whole ${part}: ${sentence(rootValidations.join('; '))}`);
    }
  }
  return `${out.join('\n')}\n`;
}
