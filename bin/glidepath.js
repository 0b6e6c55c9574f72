#!/usr/bin/env node
// `glidepath …` (`npx glidepath`, or on PATH after `npm link` / `npm install -g`).
import { launch } from './launch.js';

await launch('glidepath');
