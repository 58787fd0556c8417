// A module resolve hook that hands test files tests/helpers/test-order.ts in place of
// `node:test`, so the runner can shuffle a file's tests or run one of them alone
// (tests/run.ts --shuffle, --each-test) without a change to any test file. Loaded with
// `--import` only when the runner asks for an order; plain `node --test` runs are untouched.
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const standIn = new URL('./test-order.ts', import.meta.url).href;
const testsRoot = new URL('../', import.meta.url).href;

// Loaded by --import on the main thread: register this same file as the hooks module (Node
// runs hooks on a thread of their own, where isMainThread is false).
if (isMainThread) register(import.meta.url);

export async function resolve(specifier, context, next) {
  const parent = context.parentURL ?? '';
  if (specifier === 'node:test' && parent.startsWith(testsRoot) && parent !== standIn) {
    // Through the rest of the chain, so tsx's resolve marks the .ts file for its loader.
    return next(standIn, context);
  }
  return next(specifier, context);
}
