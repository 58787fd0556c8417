// SlackNotifier: posts rollout progress to a Slack incoming webhook. A virtual object with one
// key per webhook, so posts for one channel go out in the order they were sent; the rollout
// only `send`s to it, so a slow or dead webhook never blocks or fails the rollout.
//
// The URL was checked against the outbound policy when the API accepted it; it is checked
// again here, and the connection itself only goes to an address the policy allows
// (outbound-post.ts), because what a name resolves to can change in between.
import { z } from 'zod';
import { defineObject, handler, TerminalError } from '../engine';
import { NO_OUTBOUND_ALLOW, type OutboundPolicy } from '../outbound/policy';
import { OutboundFailedError, OutboundRefusedError, postJson } from '../outbound/post';

export const SLACK_NOTIFIER = 'SlackNotifier';

/** Slack answers in well under a second; a hung endpoint must not hold the queue for long. */
const POST_TIMEOUT_MS = 5_000;
const POST_ATTEMPTS = 3;

export function slackNotifier(opts: { outbound?: OutboundPolicy } = {}) {
  const policy = opts.outbound ?? NO_OUTBOUND_ALLOW;
  return defineObject(SLACK_NOTIFIER, {
    exclusive: {
      post: handler({ input: z.object({ url: z.string(), text: z.string() }), output: z.object({ delivered: z.boolean() }), secret: { input: ['url'] } }, async (ctx, { url, text }) => {
        try {
          await ctx.run(
            'post',
            async () => {
              try {
                await postJson(url, { text }, policy, { timeoutMs: POST_TIMEOUT_MS });
              } catch (err) {
                // A refused destination stays refused, and a redirect or a 4xx answers the same
                // next time: no retries.
                if (err instanceof OutboundRefusedError) throw new TerminalError(err.message, { code: 'ERR_OUTBOUND_REFUSED' });
                if (err instanceof OutboundFailedError && !err.retryable) throw new TerminalError(err.message, { code: 'ERR_OUTBOUND_FAILED' });
                throw err;
              }
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
