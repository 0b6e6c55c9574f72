/** The Glidepath API: zod schemas of the CRDs and the types inferred from them. */
export * from './common.js';
export * from './connection.js';
export * from './duration.js';
export * from './kinds.js';
export * from './temporal-connection.js';
export * from './temporal-worker-deployment.js';
export * from './worker-deployment.js';
