// Which workflow data are credentials, and their redaction for the operator views of
// invocations (GET /v1/invocations, /v1/invocations/:id). The engine stores inputs, results and
// journal values as they are, because the workflows need them to resume; only what is shown is
// redacted. Pure: data in, data out.
//
// The definitions mark their secret paths for the engine (rollout.ts: `slackWebhookUrl` in the
// rollout's input, state and status output; slack.ts: SlackNotifier's `url`), and the engine's
// views already redact those (engine/redact.ts). This pass runs again over those views and
// matches field names, because a path mark cannot reach everything:
// - journal values other than object state and call results have no mark: a `run`/`runTx`
//   step's result or an awakeable's payload that held the URL or an env would be shown whole;
// - a mark replaces the whole field, while an env map should still show its keys;
// - an invocation whose service is not registered in this process gets no marks at all.
// As the workflows stand, none puts the URL or an env where the marks miss (deploy's `load`
// step leaves env out), so this is the backstop for the next step that does.
// Secret by name: `slackWebhookUrl` anywhere and SlackNotifier's `url` (whoever has the URL
// can post to the channel); `env` maps anywhere keep their keys only (values are API keys,
// database URLs).
import { SLACK_NOTIFIER } from '../fleet/slack';

export const REDACTED = '[redacted]';

/** Field names that are secret wherever they appear in a workflow's data. */
const SECRET_ANYWHERE = new Set(['slackWebhookUrl']);
/** Field names that are secret in one service's data (too common a name to mark everywhere). */
const SECRET_IN_SERVICE: Record<string, Set<string>> = { [SLACK_NOTIFIER]: new Set(['url']) };

/** `value` with every secret field replaced by REDACTED and env maps reduced to their keys. */
export function redactValue(value: unknown, service: string): unknown {
  const local = SECRET_IN_SERVICE[service];
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (SECRET_ANYWHERE.has(k) || local?.has(k)) out[k] = x === undefined || x === null ? x : REDACTED;
      else if (k === 'env' && x !== null && typeof x === 'object' && !Array.isArray(x)) out[k] = Object.fromEntries(Object.keys(x).map((n) => [n, REDACTED]));
      else out[k] = walk(x);
    }
    return out;
  };
  return walk(value);
}

interface InvocationLike {
  service: string;
  input: unknown;
  result?: unknown;
}

/** An invocation view as operators may see it; journal values are redacted the same way. */
export function redactInvocation<T extends InvocationLike & { journal?: { value?: unknown }[] }>(inv: T): T {
  const out: T = { ...inv, input: redactValue(inv.input, inv.service) };
  if ('result' in inv) out.result = redactValue(inv.result, inv.service);
  if (inv.journal) out.journal = inv.journal.map((j) => ('value' in j ? { ...j, value: redactValue(j.value, inv.service) } : j));
  return out;
}
