// Modes: one module per way the program runs (`ctrl`, `migrate`, and as their issues land
// `krane`, `kube-sim`, `dev`). A mode only wires parts together from a validated config: no
// business logic lives here. Long-running modes return a handle with `close()` so `dev` and the
// tests can start them in-process and stop them cleanly.
export * from './ctrl';
export * from './migrate';
export * from './tokens';
export * from './kube-sim';
export * from './krane';
export * from './stack';
export * from './dev';
