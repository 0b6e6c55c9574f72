/**
 * What both bins run: the TypeScript source through tsx in a checkout with its dev dependencies (so a `dist/` left
 * from an older build never runs instead of the code you see), else the compiled CLI (`dist/cli/main.js`, from
 * `npm run build`), as in an install without dev dependencies or the image.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import console from 'node:console';
import process from 'node:process';
import { URL } from 'node:url';

/** Whether tsx can be loaded from here (a checkout with its dev dependencies). */
function hasTsx() {
  try {
    createRequire(import.meta.url).resolve('tsx/esm/api');
    return true;
  } catch {
    return false;
  }
}

/** Runs the CLI with the process's arguments and exits with its exit code. `name` is what `--help` calls it. */
export async function launch(name) {
  const source = new URL('../cli/main.ts', import.meta.url);
  const compiled = new URL('../dist/cli/main.js', import.meta.url);
  let cli;
  if (existsSync(source) && hasTsx()) {
    const { register } = await import('tsx/esm/api');
    register();
    cli = await import(source.href);
  } else if (existsSync(compiled)) {
    cli = await import(compiled.href);
  } else {
    console.error('glidepath: neither tsx (a checkout with dev dependencies) nor a build (npm run build) is here');
    process.exit(4);
  }
  cli.exitWith(await cli.run(process.argv.slice(2), { name }));
}
