// --otlp-endpoint: off by default; the flag, UNKEY_INFRA_OTLP_ENDPOINT and the standard
// OTEL_EXPORTER_OTLP_ENDPOINT fill it, in that order; a non-URL is refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../src/config';
import { tracesUrl } from '../../src/tracing';

const ctrlBase = { databaseUrl: 'postgres://u@h/db', adminToken: 'a'.repeat(16) };
const kraneBase = { region: 'us-east-1', controlPlane: 'http://127.0.0.1:7070', token: 'tok-0123456789abcdef' };

test('tracing is off unless an endpoint is given', () => {
  assert.equal(loadConfig('ctrl', ctrlBase, {}).otlpEndpoint, undefined);
  assert.equal(loadConfig('krane', kraneBase, {}).otlpEndpoint, undefined);
  assert.equal(loadConfig('dev', {}, {}).otlpEndpoint, undefined);
});

test('flag beats UNKEY_INFRA_OTLP_ENDPOINT beats OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  const env = { UNKEY_INFRA_OTLP_ENDPOINT: 'http://ours:4318', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://std:4318' };
  assert.equal(loadConfig('ctrl', { ...ctrlBase, otlpEndpoint: 'http://flag:4318' }, env).otlpEndpoint, 'http://flag:4318');
  assert.equal(loadConfig('krane', kraneBase, env).otlpEndpoint, 'http://ours:4318');
  assert.equal(loadConfig('dev', {}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://std:4318' }).otlpEndpoint, 'http://std:4318');
});

test('an endpoint that is not an http(s) URL is refused, naming flag and variable', () => {
  assert.throws(
    () => loadConfig('ctrl', { ...ctrlBase, otlpEndpoint: 'collector:4318' }, {}),
    (e: unknown) => e instanceof ConfigError && e.problems.some((p) => p.startsWith('--otlp-endpoint (UNKEY_INFRA_OTLP_ENDPOINT)')),
  );
});

test('the traces path is appended to a base URL once', () => {
  assert.equal(tracesUrl('http://c:4318'), 'http://c:4318/v1/traces');
  assert.equal(tracesUrl('http://c:4318/'), 'http://c:4318/v1/traces');
  assert.equal(tracesUrl('http://c:4318/v1/traces'), 'http://c:4318/v1/traces');
});

test('the standard variable is the environment\'s: OTEL_SDK_DISABLED=true keeps tracing off, and a value that is not a URL is ignored, not fatal', () => {
  assert.equal(loadConfig('krane', kraneBase, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://std:4318', OTEL_SDK_DISABLED: 'true' }).otlpEndpoint, undefined);
  assert.equal(loadConfig('krane', kraneBase, { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4317' }).otlpEndpoint, undefined);
  // Our own variable is the operator's word: refused as before.
  assert.throws(() => loadConfig('krane', kraneBase, { UNKEY_INFRA_OTLP_ENDPOINT: 'collector:4317' }), ConfigError);
});
