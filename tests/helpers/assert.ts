// Assertions the suite shares beside node:assert.
import assert from 'node:assert/strict';
import { shown } from './wait';

/**
 * Every item of `items` satisfies `pred`, and there is at least one: `every` of an empty list
 * is true, so a check of "all of them" that found none would pass without checking anything.
 * A failure names the first item that does not satisfy it.
 */
export function assertEvery<T>(items: Iterable<T>, pred: (item: T, index: number) => unknown, message?: string): void {
  const list = [...items];
  assert.ok(list.length > 0, `${message ?? 'every item'}: nothing to check (an empty list)`);
  const bad = list.findIndex((x, i) => !pred(x, i));
  assert.ok(bad < 0, `${message ?? 'every item'}: item ${bad} does not hold: ${shown(list[bad])}`);
}
