/**
 * `npm run build`'s last step: `dist/worker/main.js` (the controller, as the image runs it) becomes one file with
 * our compiled code and @kubernetes/client-node in it, comments and whitespace left out. Every other package stays
 * a plain import from node_modules (the Temporal SDK finds its native library and workflow thread by path).
 *
 * Why: V8 keeps the source of every module it loads, and client-node is 21 MB of JavaScript, all of it loaded by
 * its one entry point; bundled and tree-shaken it is a few MB of the controller's heap
 * (docs/design/controller-memory.md).
 */
import { renameSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'dist/worker/main.js');
const bundled = '@kubernetes/client-node';

/** Bare imports stay imports, except client-node's (its own files come in by relative path; its dependencies stay imports). */
const onlyClientNode: Plugin = {
  name: 'only-client-node',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path === bundled || args.path.startsWith(`${bundled}/`)) return undefined;
      return { path: args.path, external: true };
    });
  },
};

const out = join(root, 'dist/worker/main.bundle.js');
const before = statSync(entry).size;
await build({
  entryPoints: [entry],
  outfile: out,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  plugins: [onlyClientNode],
  minifyWhitespace: true,
  minifySyntax: true,
  // Names stay as written: logs and stack traces name our functions and classes.
  keepNames: true,
  legalComments: 'none',
  logLevel: 'warning',
  // CommonJS modules inside an ES module bundle call require: give them Node's.
  banner: {
    js: "import { createRequire as __glidepathRequire } from 'node:module'; const require = __glidepathRequire(import.meta.url);",
  },
});
const size = statSync(out).size;
renameSync(out, entry);
console.log(
  `dist/worker/main.js bundled: ${(size / 1e6).toFixed(1)} MB (was ${(before / 1e3).toFixed(0)} kB of imports)`,
);
