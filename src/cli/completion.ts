// Shell completion, decided in one place for bash, zsh and fish: the shell hands the command
// line up to the cursor to `unkey-infra __complete`, which walks the program's own commander
// tree (so a new command or flag completes with no change here) and answers the candidates for
// the word under the cursor. Pure: this module says what to complete, including which live
// values to ask the API for (region names, deployment and other ids); completion-live.ts asks.
import type { Command, Option } from 'commander';
import { printable } from './io';

/** What the shell should do besides the candidates: nothing, or offer files or directories. */
export type Directive = 'nofiles' | 'files' | 'dirs';

export interface Candidate {
  value: string;
  description?: string;
}

/** Live values the API can give, each one GET. */
export type LiveKind = 'regions' | 'deployments' | 'invocations' | 'sentinels' | 'workspaces' | 'keys';

export interface Completion {
  /** The word under the cursor, as typed: every candidate replaces it whole. */
  token: string;
  directive: Directive;
  candidates: Candidate[];
  /** Values to read from the API: each becomes `prefix + value` if it starts with `partial`. */
  live?: { kind: LiveKind; prefix: string; partial: string; environment?: string; target?: { api?: string; token?: string; dataDir?: string } };
}

/** Splits a command line as a shell would for our purpose: unquoted blanks separate words,
 *  quotes group, a backslash escapes. A line ending in a blank ends with an empty word. */
export function words(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quote: '"' | "'" | null = null;
  let started = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quote) {
      if (ch === quote) quote = null;
      else if (ch === '\\' && quote === '"' && i + 1 < line.length) cur += line[++i];
      else cur += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      started = true;
    } else if (ch === '\\' && i + 1 < line.length) {
      cur += line[++i];
      started = true;
    } else if (/\s/.test(ch)) {
      if (started) out.push(cur);
      cur = '';
      started = false;
    } else {
      cur += ch;
      started = true;
    }
  }
  out.push(cur);
  return out;
}

/** Fixed values of flags, by long name. */
const VALUES: Record<string, string[]> = {
  '--output': ['table', 'wide', 'json', 'yaml'],
  '--strategy': ['rolling', 'canary', 'blue-green'],
  '--judge': ['threshold', 'compare'],
  '--direction': ['lower-is-better', 'higher-is-better'],
  '--log-level': ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
  '--status': ['scheduled', 'queued', 'ready', 'running', 'suspended', 'completed', 'failed', 'cancelled'],
  '--leader-elect': ['true', 'false'],
};
/** Flags whose value is a path the shell completes itself. */
const FILES = new Set(['--kubeconfig', '--kubeconfig-out', '--sentinel-secrets-file']);
const DIRS = new Set(['--data-dir', '--build-context', '--build-root']);
/** Flags whose value is a region (`--regions` takes a comma-separated list of them). */
const REGION_FLAGS = new Set(['--region', '--regions', '--default-regions']);
/** Commands whose first argument is an id the API lists, by their path under the program. */
const ID_ARGS: Record<string, LiveKind> = {
  'deployments get': 'deployments',
  'deployments stop': 'deployments',
  'deployments start': 'deployments',
  'deployments rollback': 'deployments',
  'deployments promote': 'deployments',
  'deployments abort': 'deployments',
  'invocations show': 'invocations',
  'invocations cancel': 'invocations',
  'sentinels deploy': 'sentinels',
  'workspaces get': 'workspaces',
  'workspaces delete': 'workspaces',
  'features get': 'workspaces',
  'features set': 'workspaces',
  'keys revoke': 'keys',
};

const findOption = (cmd: Command, flag: string): Option | undefined => cmd.options.find((o) => o.long === flag || o.short === flag);
const takesValue = (o: Option) => o.required || o.optional;

function pathOf(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Candidates for the value of `option`, the word typed being `partial` after `prefix` (`--flag=`, or a list's first items). */
function valueOf(option: Option, prefix: string, partial: string): Completion {
  const token = prefix + partial;
  const long = option.long ?? '';
  if (FILES.has(long)) return { token, directive: 'files', candidates: [] };
  if (DIRS.has(long)) return { token, directive: 'dirs', candidates: [] };
  if (REGION_FLAGS.has(long)) {
    // A list: complete its last element, keeping those before it.
    const comma = long === '--region' ? -1 : partial.lastIndexOf(',');
    return { token, directive: 'nofiles', candidates: [], live: { kind: 'regions', prefix: prefix + partial.slice(0, comma + 1), partial: partial.slice(comma + 1) } };
  }
  const fixed = VALUES[long] ?? [];
  return { token, directive: 'nofiles', candidates: fixed.filter((v) => v.startsWith(partial)).map((v) => ({ value: prefix + v })) };
}

/**
 * What to offer for the command line `line` (from the program's name up to the cursor), given
 * the program `root`: subcommands, flags, a flag's values, an argument's live ids.
 */
export function complete(root: Command, line: string): Completion {
  const all = words(line);
  const current = all.pop() ?? '';
  const typed = all.slice(1);
  let cmd = root;
  let positionals = 0;
  let pending: Option | undefined;
  const flags: Record<string, string> = {};
  for (let i = 0; i < typed.length; i++) {
    const w = typed[i]!;
    if (pending) {
      flags[pending.long ?? ''] = w;
      pending = undefined;
      continue;
    }
    if (w.startsWith('-') && w !== '-') {
      const [flag, value] = w.split(/=(.*)/s, 2) as [string, string | undefined];
      const o = findOption(cmd, flag);
      if (o && takesValue(o)) {
        if (value === undefined) pending = o;
        else flags[o.long ?? ''] = value;
      }
      continue;
    }
    const sub = cmd.commands.find((c) => c.name() === w || c.aliases().includes(w));
    if (sub && positionals === 0) cmd = sub;
    else positionals++;
  }
  const target = { ...(flags['--api'] ? { api: flags['--api'] } : {}), ...(flags['--token'] ? { token: flags['--token'] } : {}), ...(flags['--data-dir'] ? { dataDir: flags['--data-dir'] } : {}) };
  const withTarget = (c: Completion): Completion => (c.live ? { ...c, live: { ...c.live, target } } : c);
  if (pending) return withTarget(valueOf(pending, '', current));
  if (current.startsWith('--') && current.includes('=')) {
    const eq = current.indexOf('=');
    const o = findOption(cmd, current.slice(0, eq));
    if (o && takesValue(o)) return withTarget(valueOf(o, current.slice(0, eq + 1), current.slice(eq + 1)));
  }
  if (current.startsWith('-')) {
    const help = cmd.createHelp();
    const options = help.visibleOptions(cmd).flatMap((o) => [o.long, o.short].filter((f): f is string => !!f).map((f) => ({ value: f, description: o.description })));
    return { token: current, directive: 'nofiles', candidates: options.filter((c) => c.value.startsWith(current) && (current.startsWith('--') ? c.value.startsWith('--') : true)) };
  }
  const subs = positionals === 0 ? cmd.createHelp().visibleCommands(cmd).filter((c) => c.name().startsWith(current)).map((c) => ({ value: c.name(), description: c.description() })) : [];
  const idKind = ID_ARGS[pathOf(cmd)];
  if (idKind && positionals === 0) {
    const environment = flags['--environment'];
    return { token: current, directive: 'nofiles', candidates: subs, live: { kind: idKind, prefix: '', partial: current, target, ...(environment ? { environment } : {}) } };
  }
  // A command that takes a path or free text leaves the shell its own completion.
  const wantsArgs = cmd.registeredArguments.length > positionals;
  return { token: current, directive: subs.length === 0 && wantsArgs ? 'files' : 'nofiles', candidates: subs };
}

/** The answer `__complete` prints: a head line (directive, token), then one candidate a line
 *  with its description after a tab (zsh and fish show it; bash drops it). Live values and
 *  descriptions are others' text (a key's name): tabs and newlines would split the format and
 *  control characters reach the menu, so each goes through printable() (io.ts). */
export function formatCompletion(c: Completion): string {
  const shown = (text: string) => printable(text.replace(/\s+/g, ' '));
  const lines = c.candidates.map((x) => (x.description ? `${shown(x.value)}\t${shown(x.description)}` : shown(x.value)));
  return `:${c.directive}\t${c.token}\n${lines.map((l) => `${l}\n`).join('')}`;
}
