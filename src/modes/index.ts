// Modes: one module per way the program runs (`ctrl`, `ctrl tokens create`, `migrate`,
// `krane`, `kube-sim`, `dev`). A mode only wires parts together from a validated config: no
// business logic lives here. Long-running modes return a handle with `close()` so `dev` and the
// tests can start them in-process and stop them cleanly; stack.ts composes ctrl with a
// kube-sim and a krane per region on a given database (dev runs it on embedded PostgreSQL,
// tests on a test database); supervisor.ts starts a region's krane again when it lost its
// Lease, as a pod's restart policy does in a cluster.
//
// May import every part (it is the wiring; only the no-cycles rule binds it). Only src/main.ts
// may import modes (.dependency-cruiser.cjs, only-main-imports-modes); tests start them directly.
export * from './ctrl';
export * from './migrate';
export * from './tokens';
export * from './kube-sim';
export * from './krane';
export * from './stack';
export * from './dev';
