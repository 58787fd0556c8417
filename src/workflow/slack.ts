// SlackNotifier: posts rollout progress to a Slack incoming webhook. A virtual object with one
// key per webhook, so posts for one channel go out in the order they were sent; the rollout
// only `send`s to it, so a slow or dead webhook never blocks or fails the rollout.
import { z } from 'zod';
import { defineObject, handler } from './engine';

export const SLACK_NOTIFIER = 'SlackNotifier';

/** Slack answers in well under a second; a hung endpoint must not hold the queue for long. */
const POST_TIMEOUT_MS = 5_000;
const POST_ATTEMPTS = 3;

export function slackNotifier() {
  return defineObject(SLACK_NOTIFIER, {
    exclusive: {
      post: handler({ input: z.object({ url: z.url(), text: z.string() }), output: z.object({ delivered: z.boolean() }), secret: { input: ['url'] } }, async (ctx, { url, text }) => {
        try {
          await ctx.run(
            'post',
            async () => {
              const r = await fetch(url, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ text }),
                signal: AbortSignal.timeout(POST_TIMEOUT_MS),
              });
              if (!r.ok) throw new Error(`slack webhook answered ${r.status}`);
              return null;
            },
            { maxAttempts: POST_ATTEMPTS, initialDelayMs: 200, maxDelayMs: 2_000 },
          );
          return { delivered: true };
        } catch (err) {
          ctx.logger.warn({ err: (err as Error).message }, 'slack post failed');
          return { delivered: false };
        }
      }),
    },
  });
}

export type SlackNotifierDef = ReturnType<typeof slackNotifier>;
