// redact(): secret paths replaced by REDACTED in a copy; absent fields, other fields and the
// original value untouched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REDACTED, redact } from '../../../src/workflow/engine/redact';

const cases: { name: string; value: unknown; paths: string[] | undefined; want: unknown }[] = [
  { name: 'no paths', value: { a: 1 }, paths: undefined, want: { a: 1 } },
  { name: 'top-level field', value: { url: 'x', text: 't' }, paths: ['url'], want: { url: REDACTED, text: 't' } },
  { name: 'nested field', value: { hook: { url: 'x', n: 1 } }, paths: ['hook.url'], want: { hook: { url: REDACTED, n: 1 } } },
  { name: 'whole value', value: 'secret', paths: [''], want: REDACTED },
  { name: 'absent field stays absent', value: { text: 't' }, paths: ['url'], want: { text: 't' } },
  { name: 'null parent', value: { hook: null }, paths: ['hook.url'], want: { hook: null } },
  { name: 'across arrays', value: { hooks: [{ url: 'a' }, { url: 'b' }] }, paths: ['hooks.url'], want: { hooks: [{ url: REDACTED }, { url: REDACTED }] } },
  { name: 'scalar where an object was expected', value: 5, paths: ['url'], want: 5 },
  { name: 'several paths', value: { a: 1, b: 2, c: 3 }, paths: ['a', 'c'], want: { a: REDACTED, b: 2, c: REDACTED } },
];

for (const c of cases) {
  test(`redact: ${c.name}`, () => {
    const before = structuredClone(c.value);
    assert.deepEqual(redact(c.value, c.paths), c.want);
    assert.deepEqual(c.value, before, 'the input is not changed');
  });
}
