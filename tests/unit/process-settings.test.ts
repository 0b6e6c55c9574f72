import { readFileSync } from 'node:fs';
import { controllerEnvironment, controllerNodeOptions } from '../../worker/process-settings.js';

// The image, `npm start` and the scale benchmark (which imports the module) start the controller alike.
const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');

describe('the controller process settings', () => {
  test("the image's ENTRYPOINT runs node with them, and sets their environment", () => {
    const dockerfile = read('Dockerfile');
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(entrypoint).toBeDefined();
    expect(JSON.parse(entrypoint!)).toEqual([
      '/usr/bin/tini',
      '--',
      'node',
      ...controllerNodeOptions,
      'dist/worker/main.js',
    ]);
    for (const [name, value] of Object.entries(controllerEnvironment))
      expect(dockerfile).toMatch(new RegExp(`^ENV ${name}=${value}$`, 'm'));
  });

  test('`npm start` runs node with them, and sets their environment', () => {
    const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.start;
    const env = Object.entries(controllerEnvironment).map(([name, value]) => `${name}=${value}`);
    expect(start?.split(' ')).toEqual([...env, 'node', ...controllerNodeOptions, '--import', 'tsx', 'worker/main.ts']);
  });
});
