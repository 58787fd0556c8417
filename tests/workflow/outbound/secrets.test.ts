// Redaction of workflow data in invocation views (src/workflow/outbound/secrets.ts), table-tested.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REDACTED, redactInvocation, redactValue } from '../../../src/workflow/outbound/secrets';

test('secret fields are redacted wherever they sit; env keeps its keys; the rest is untouched', () => {
  const table: [string, unknown, unknown][] = [
    ['SentinelRolloutService', { image: 'a', slackWebhookUrl: 'https://h/x' }, { image: 'a', slackWebhookUrl: REDACTED }],
    ['SentinelRolloutService', { state: { slackWebhookUrl: 'https://h/x', waves: [1, 2] } }, { state: { slackWebhookUrl: REDACTED, waves: [1, 2] } }],
    ['SentinelRolloutService', { slackWebhookUrl: undefined }, { slackWebhookUrl: undefined }],
    ['SlackNotifier', { url: 'https://h/x', text: 't' }, { url: REDACTED, text: 't' }],
    ['OtherService', { url: 'https://example.com' }, { url: 'https://example.com' }],
    ['DeployService', [{ env: { KEY: 'v' } }], [{ env: { KEY: REDACTED } }]],
    ['DeployService', { restart: true }, { restart: true }],
    ['DeployService', null, null],
  ];
  for (const [service, input, want] of table) assert.deepEqual(redactValue(input, service), want, JSON.stringify(input));
});

test('an invocation view: input, result and journal values are redacted; the original is not changed', () => {
  const inv = {
    service: 'SlackNotifier',
    input: { url: 'https://h/x', text: 't' },
    result: { delivered: true },
    journal: [{ name: 'post', value: { url: 'https://h/x' } }, { name: 'pending' }],
  };
  const shown = redactInvocation(inv);
  assert.deepEqual(shown.input, { url: REDACTED, text: 't' });
  assert.deepEqual(shown.result, { delivered: true });
  assert.deepEqual(shown.journal, [{ name: 'post', value: { url: REDACTED } }, { name: 'pending' }]);
  assert.equal(inv.input.url, 'https://h/x');
});
