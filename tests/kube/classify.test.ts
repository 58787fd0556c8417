// The pure classification of Kubernetes API failures (src/kube/classify.ts), table-tested:
// each row is an answer as a real API server gives it and what krane must do about it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyApiFailure, isImmutableFieldChange, MAX_RETRY_AFTER_MS, type ApiFailure, type Verdict } from '../../src/kube/classify';
import { apiFailure } from '../../src/kube/client';

const f = (status: number | undefined, extra: Partial<ApiFailure> = {}): ApiFailure => ({ status, message: 'm', causes: [], ...extra });

const table: [string, ApiFailure, Verdict][] = [
  ['422 invalid', f(422, { reason: 'Invalid' }), { kind: 'permanent', code: 'ERR_KUBE_INVALID' }],
  ['400 bad request', f(400, { reason: 'BadRequest' }), { kind: 'permanent', code: 'ERR_KUBE_INVALID' }],
  ['403 exceeded quota', f(403, { reason: 'Forbidden', message: 'exceeded quota: compute' }), { kind: 'permanent', code: 'ERR_KUBE_FORBIDDEN' }],
  ['403 admission webhook', f(403, { reason: 'Forbidden', message: 'admission webhook "x" denied the request' }), { kind: 'permanent', code: 'ERR_KUBE_FORBIDDEN' }],
  ['403 namespace terminating', f(403, { reason: 'Forbidden', causes: [{ reason: 'NamespaceTerminating' }] }), { kind: 'retry', code: 'ERR_KUBE_NAMESPACE_TERMINATING' }],
  ['404 namespace missing', f(404, { reason: 'NotFound', detailsKind: 'namespaces' }), { kind: 'permanent', code: 'ERR_KUBE_NAMESPACE_MISSING' }],
  ['404 other', f(404, { reason: 'NotFound', detailsKind: 'statefulsets' }), { kind: 'retry', code: 'ERR_KUBE_UNAVAILABLE' }],
  // A kind the server does not serve (a CRD removed after the client cached discovery): the API
  // server's NotFound with empty details. Retrying would loop until someone installs it.
  ['404 resource type not served', f(404, { reason: 'NotFound', message: 'the server could not find the requested resource' }), { kind: 'permanent', code: 'ERR_KUBE_KIND_UNAVAILABLE' }],
  ['409 conflict', f(409, { reason: 'Conflict' }), { kind: 'retry', code: 'ERR_KUBE_CONFLICT' }],
  ['413 too large', f(413, { reason: 'RequestEntityTooLarge' }), { kind: 'permanent', code: 'ERR_KUBE_TOO_LARGE' }],
  ['500 etcd too large', f(500, { message: 'etcdserver: request is too large' }), { kind: 'permanent', code: 'ERR_KUBE_TOO_LARGE' }],
  ['500 other', f(500, { message: 'internal error' }), { kind: 'retry', code: 'ERR_KUBE_UNAVAILABLE' }],
  ['503 with Retry-After', f(503, { retryAfterSeconds: 3 }), { kind: 'retry', code: 'ERR_KUBE_UNAVAILABLE', retryAfterMs: 3000 }],
  ['429 with Retry-After', f(429, { retryAfterSeconds: 2 }), { kind: 'retry', code: 'ERR_KUBE_THROTTLED', retryAfterMs: 2000 }],
  ['429 with absurd Retry-After', f(429, { retryAfterSeconds: 86_400 }), { kind: 'retry', code: 'ERR_KUBE_THROTTLED', retryAfterMs: MAX_RETRY_AFTER_MS }],
  ['429 without Retry-After', f(429), { kind: 'retry', code: 'ERR_KUBE_THROTTLED' }],
  ['401 unauthorized', f(401), { kind: 'retry', code: 'ERR_KUBE_UNAUTHORIZED' }],
  ['no answer', f(undefined), { kind: 'retry', code: 'ERR_KUBE_UNAVAILABLE' }],
  ['415 unsupported media type', f(415), { kind: 'permanent', code: 'ERR_KUBE_REJECTED' }],
];

for (const [name, input, want] of table) {
  test(`classify: ${name}`, () => assert.deepEqual(classifyApiFailure(input), want));
}

test('apiFailure reads status, reason, causes, details kind and Retry-After from a client error', () => {
  const err = Object.assign(new Error('HTTP-Code: 429'), {
    code: 429,
    headers: { 'retry-after': '7' },
    body: JSON.stringify({ kind: 'Status', status: 'Failure', reason: 'TooManyRequests', message: 'slow down', code: 429, details: { kind: 'namespaces', causes: [{ reason: 'NamespaceTerminating' }], retryAfterSeconds: 1 } }),
  });
  assert.deepEqual(apiFailure(err), { status: 429, reason: 'TooManyRequests', message: 'slow down', detailsKind: 'namespaces', causes: [{ reason: 'NamespaceTerminating' }], retryAfterSeconds: 7 });
});

test('immutable-field refusals are told apart from other 422s', () => {
  const sts = f(422, { causes: [{ reason: 'FieldValueForbidden', field: 'spec', message: "Forbidden: updates to statefulset spec for fields other than 'replicas' … are forbidden" }] });
  const sel = f(422, { causes: [{ reason: 'FieldValueInvalid', field: 'spec.selector', message: 'Invalid value: v1.LabelSelector{…}: field is immutable' }] });
  const plain = f(422, { causes: [{ reason: 'FieldValueRequired', field: 'spec.template.spec.containers[0].image', message: 'Required value' }] });
  assert.deepEqual([sts, sel, plain, { ...sts, status: 409 }].map(isImmutableFieldChange), [true, true, false, false]);
});
