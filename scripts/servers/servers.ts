/**
 * The real servers Glidepath runs against, from one import: the Temporal dev server (temporal-server.ts), etcd +
 * kube-apiserver + kube-controller-manager (kube-server.ts) and their processes (processes.ts). Started detached on
 * fixed ports by `npm run servers:up`, on free ports by the test harness and the benchmarks (torn down after the
 * run). Binaries come from `scripts/servers/{temporal,kube}.sh`, which cache them.
 */
export * from './kube-server.js';
export * from './processes.js';
export * from './temporal-server.js';
