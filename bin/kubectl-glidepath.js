#!/usr/bin/env node
// `kubectl glidepath …`: kubectl runs any `kubectl-<name>` on PATH as the plugin `<name>`, passing every argument on.
import { launch } from './launch.js';

await launch('kubectl glidepath');
