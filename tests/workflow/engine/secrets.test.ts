// Secrets in invocation views (issue 16): input fields, output fields and object state that a
// definition marks secret are redacted in listInvocations / getInvocation (what
// GET /v1/invocations shows), in the invocation and in every journal entry, while handlers
// (and a child they send it to) still get the real value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { testDb } from '../../helpers/db';
import { defineObject, handler, REDACTED } from '../../../src/workflow/engine';
import { testEngine, waitFor } from './helpers';

const db = await testDb();
const engine = testEngine(db.sql);

const SECRET = 'https://hooks.example.test/services/T0/B0/very-secret-token';
const received: string[] = [];

const Sink = engine.register(
  defineObject('secretSink', {
    exclusive: {
      post: handler(
        { input: z.object({ url: z.string(), text: z.string() }), output: z.object({ ok: z.boolean() }), secret: { input: ['url'] } },
        async (ctx, { url }) => {
          await ctx.run('post', () => void received.push(url));
          return { ok: true };
        },
      ),
    },
  }),
);

const Holder = engine.register(
  defineObject(
    'secretHolder',
    {
      exclusive: {
        keep: handler(
          { input: z.object({ name: z.string(), hook: z.object({ url: z.string() }).optional() }), output: z.string(), secret: { input: ['hook.url'] } },
          async (ctx, input) => {
            await ctx.set('config', { name: input.name, webhook: input.hook?.url });
            await ctx.set('token', input.hook?.url ?? 'none');
            assert.equal(await ctx.get<string>('token'), input.hook?.url ?? 'none');
            const back = await ctx.get<{ webhook?: string }>('config');
            if (back?.webhook) await ctx.send(Sink, 'post', { url: back.webhook, text: 'hi' }, { key: 'k' });
            return 'kept';
          },
        ),
      },
      shared: {
        reveal: handler({ input: z.object({}), output: z.object({ webhook: z.string().optional() }), secret: { output: ['webhook'] } }, async (ctx) => {
          const c = await ctx.get<{ webhook?: string }>('config');
          return { webhook: c?.webhook };
        }),
      },
    },
    { secretState: { config: ['webhook'], token: [''] } },
  ),
);

await engine.start();

/** Every view an operator can read, as one string. */
async function allViews(): Promise<string> {
  const list = await engine.listInvocations({ limit: 100 });
  const details = await Promise.all(list.map((i) => engine.getInvocation(i.id)));
  return JSON.stringify([list, details]);
}

test('secret input, output and state fields are redacted in every invocation view; handlers see the real value', async () => {
  assert.equal(await engine.call(Holder, 'keep', { name: 'n', hook: { url: SECRET } }, { key: 'a' }), 'kept');
  assert.deepEqual(await engine.call(Holder, 'reveal', {}, { key: 'a' }), { webhook: SECRET }, 'the caller gets the real output');
  await waitFor('the child got the real value', async () => received.includes(SECRET));
  await waitFor('all finished', async () => (await engine.listInvocations({ limit: 100 })).every((i) => i.status === 'completed'));

  const views = await allViews();
  assert.ok(!views.includes('very-secret-token'), `a view shows the secret: ${views}`);
  // Redacted, not dropped: operators see that the field is there.
  const keep = (await engine.listInvocations({ target: 'secretHolder', limit: 10 })).find((i) => i.handler === 'keep')!;
  assert.deepEqual(keep.input, { name: 'n', hook: { url: REDACTED } });
  const journal = (await engine.getInvocation(keep.id)).journal;
  // A set's value lives in the object's state, not in its journal entry; a get journals it.
  assert.deepEqual(
    journal.filter((j) => j.kind === 'set' || j.kind === 'get').map((j) => [j.kind, j.name, j.value]),
    [
      ['set', 'config', undefined],
      ['set', 'token', undefined],
      ['get', 'token', REDACTED],
      ['get', 'config', { name: 'n', webhook: REDACTED }],
    ],
  );
  const reveal = (await engine.listInvocations({ target: 'secretHolder', limit: 10 })).find((i) => i.handler === 'reveal')!;
  assert.deepEqual(reveal.result, { webhook: REDACTED });
  // The engine's own state read (not a view) is the real value: workflows and routes use it.
  assert.equal(((await engine.state(Holder, 'a')).config as { webhook: string }).webhook, SECRET);
});

test('absent secret fields stay absent', async () => {
  assert.equal(await engine.call(Holder, 'keep', { name: 'plain' }, { key: 'b' }), 'kept');
  const keep = (await engine.listInvocations({ target: 'secretHolder', key: 'b', limit: 10 })).find((i) => i.handler === 'keep')!;
  assert.deepEqual(keep.input, { name: 'plain' });
});
