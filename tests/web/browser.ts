// Headless Chromium for the web view's tests: Debian's `chromium` (installed by .ci/run when
// missing) driven by playwright-core, which downloads no browser. Also builds the page first,
// so a test run from source never serves a stale or missing dist/web.
import { after } from 'node:test';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { ROOT } from '../helpers/bundle';
import { launchChromium } from '../helpers/chromium';

export const SCREENSHOTS = join(ROOT, 'docs', 'screenshots');

export function buildWebView(): void {
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-web.mjs')], { stdio: 'ignore' });
}

export async function launchBrowser(): Promise<Browser> {
  const browser = await launchChromium();
  after(() => browser.close());
  return browser;
}

export interface OpenPage {
  page: Page;
  context: BrowserContext;
  /** Script errors and console errors (CSP violations among them), not failed requests. */
  problems: string[];
  /** Requests answered >= 400, as "STATUS METHOD /path". */
  failed: string[];
}

/** A fresh tab (own sessionStorage) at 1280×800, recording what went wrong on the page. */
export async function openPage(browser: Browser, url: string, viewport = { width: 1280, height: 800 }): Promise<OpenPage> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const problems: string[] = [];
  const failed: string[] = [];
  page.on('console', (m) => m.type() === 'error' && !m.text().startsWith('Failed to load resource') && problems.push(m.text()));
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('response', (r) => r.status() >= 400 && failed.push(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`));
  await page.goto(url);
  return { page, context, problems, failed };
}

export async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Signs in and waits until the page is signed in: the click only starts the token check, so
 *  a navigation right after it would race the sign-in on a busy machine. */
export async function signedIn(page: Page, token: string): Promise<void> {
  await signIn(page, token);
  await visible(page, page.getByRole('button', { name: 'Sign out' }), 'signed in');
}

/** Waits for `locator`; on a timeout the error carries what the page showed instead, so a
 *  failure seen only in CI can be read from its log. */
export async function visible(page: Page, locator: Locator, what: string | (() => string), timeout = 30_000): Promise<void> {
  try {
    await locator.waitFor({ timeout });
  } catch (err) {
    const shown = await page.locator('body').innerText({ timeout: 2000 }).catch(() => '(unreadable)');
    throw new Error(`${typeof what === 'string' ? what : what()}: not shown within ${timeout} ms at ${page.url()}; the page showed:\n${shown.slice(0, 2000)}`, { cause: err });
  }
}

/** Writes docs/screenshots/<name>.png only when UNKEY_INFRA_SCREENSHOTS=1: they are committed
 *  once, not rewritten by every test run. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.UNKEY_INFRA_SCREENSHOTS !== '1') return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: false });
}
