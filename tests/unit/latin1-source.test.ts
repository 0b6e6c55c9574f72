import { latin1Source } from '../../worker/controller.js';

describe('latin1Source', () => {
  const source = [
    '// a step\'s pause: 90_000 → "1m30s" — as people read it',
    'const message = `ramp ≤ 50 % — next → ${"v2"} 😀`;',
    "const quoted = 'a → b';",
    'const pattern = /→+/u;',
    'return [message, quoted, pattern.test("→→"), "plain ascii and Latin-1: café"];',
  ].join('\n');

  test('every character beyond Latin-1 becomes an escape: V8 then holds the source at one byte a character', () => {
    const out = latin1Source(source);
    expect(out).not.toMatch(/[\u0100-\uffff]/);
    expect(out).toContain('café');
    expect(out).toContain('\\u2192');
  });

  test('the code means what it meant: strings, templates, regular expressions and astral characters alike', () => {
    const run = (code: string) => new Function(code)() as unknown[];
    expect(run(latin1Source(source))).toEqual(run(source));
    expect(run(latin1Source(source))[0]).toBe('ramp ≤ 50 % — next → v2 😀');
  });

  test('Latin-1 source is left as it is', () => {
    const plain = "const a = 'café'; // déjà vu";
    expect(latin1Source(plain)).toBe(plain);
  });
});
