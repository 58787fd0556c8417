// Parsers for command-line values. They check only the form of a value (a number is a number,
// K=V has an =); ranges and names are the API's to judge, so its 400 stays the one source of
// truth. A parse failure is commander's InvalidArgumentError, which exits with usage code 2.
import { InvalidArgumentError } from 'commander';
import { durationProblem, parseDuration } from '../duration';

export function intArg(value: string): number {
  if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError(`expected a whole number, got "${value}"`);
  return Number(value);
}

export function listArg(value: string): string[] {
  const list = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (list.length === 0) throw new InvalidArgumentError('expected a comma-separated list, e.g. us-east-1,eu-west-1');
  return list;
}

/** Repeatable `--env K=V`; the value may itself contain `=`. */
export function envArg(value: string, previous: Record<string, string> | undefined): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`expected K=V, got "${value}"`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

export function durationArg(value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new InvalidArgumentError(durationProblem(value));
  if (ms <= 0) throw new InvalidArgumentError(`expected a duration like 90s or 10m, got "${value}"`);
  return ms;
}

/** `1,5,25,50,100`: numbers only; whether they make valid waves is the API's to say. */
export function percentListArg(value: string): number[] {
  const parts = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (parts.length === 0 || parts.some((p) => !/^\d+(\.\d+)?$/.test(p))) {
    throw new InvalidArgumentError(`expected comma-separated percentages like 1,5,25,50,100, got "${value}"`);
  }
  return parts.map(Number);
}

export function floatArg(value: string): number {
  if (!/^-?\d+(\.\d+)?(e-?\d+)?$/i.test(value.trim())) throw new InvalidArgumentError(`expected a number, got "${value}"`);
  return Number(value);
}
