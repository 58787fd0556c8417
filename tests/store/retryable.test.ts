// The table of database failures worth waiting out: decided by SQLSTATE and connection codes,
// including errors wrapped as a cause and the AggregateError of a multi-address connect.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isRetryableDbError } from '../../src/store/retryable';

const coded = (code: string) => Object.assign(new Error(code), { code });

test('connection failures and transient SQLSTATEs are retryable', () => {
  for (const code of ['ECONNREFUSED', 'ECONNRESET', 'CONNECTION_CLOSED', 'CONNECT_TIMEOUT', '08006', '40001', '40P01', '53300', '57P01', '57P03', '55P03']) {
    assert.equal(isRetryableDbError(coded(code)), true, code);
  }
});

test('the handler’s own failures and constraint violations are not', () => {
  for (const code of ['23505', '23503', '22P02', '42P01', 'ERR_DEPLOY_TIMEOUT', 'UNDEFINED_VALUE']) {
    assert.equal(isRetryableDbError(coded(code)), false, code);
  }
  assert.equal(isRetryableDbError(new Error('connection refused')), false, 'messages are not read');
  assert.equal(isRetryableDbError('ECONNREFUSED'), false);
});

test('wrapped and aggregated connection errors are found', () => {
  assert.equal(isRetryableDbError(new Error('step failed', { cause: coded('ECONNREFUSED') })), true);
  assert.equal(isRetryableDbError(new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')], 'connect')), true);
});
