// bench:rollout --web: how long the web view's rollout page takes to show a finished rollout in
// headless Chromium (Debian's `chromium`, driven by playwright-core as tests/web does).
//
// webRenderMs is measured by the page's own clock: from navigation start (performance.now() = 0
// in a fresh tab with a cold cache) to the first DOM change after which all of these show:
//   - the rollout's state badge reads the final state,
//   - the Succeeded heading carries the rollout's succeeded count,
//   - the first page of the succeeded list (min(100, succeeded) items) is rendered,
//   - the first page of the sentinel table (min(200, fleet) rows) is rendered.
// The token is put in sessionStorage before the page's script runs, as a signed-in tab has it,
// so the time is the page's (fetch + render), not a sign-in form's.
import { launchChromium } from '../tests/helpers/chromium';

/** The page's page sizes (src/web/app/views/rollout.tsx and sentinels.tsx). */
const SUCCEEDED_PAGE = 100;
const SENTINELS_PAGE = 200;
const TIMEOUT_MS = 60_000;

export interface WebRender {
  webRenderMs: number;
  /** The same, seen from this process (includes playwright's round trips). */
  webRenderWallMs: number;
}

/** Runs in the page before its own script: records when everything listed above first shows.
 *  Text, not a function: tsx's compiled functions may call helpers the page does not have. */
const watchRendered = (want: object) => `(() => {
  const want = ${JSON.stringify(want)};
  sessionStorage.setItem(want.key, want.token);
  const done = () => {
    const state = document.querySelector('[data-testid="rollout-state"]')?.textContent ?? '';
    const heading = document.querySelector('[data-testid="succeeded"] h3')?.textContent ?? '';
    return state.includes(want.state) && heading.startsWith('Succeeded (' + want.succeeded + ')') &&
      document.querySelectorAll('[data-testid="succeeded"] li').length === want.items &&
      document.querySelectorAll('[data-testid="sentinels"] tbody tr').length === want.rows;
  };
  const observer = new MutationObserver(() => {
    if (window.__rendered === undefined && done()) {
      window.__rendered = performance.now();
      observer.disconnect();
    }
  });
  observer.observe(document, { childList: true, subtree: true, characterData: true });
})()`;

export async function measureWebRender(o: { url: string; token: string; state: string; succeeded: number; fleet: number }): Promise<WebRender> {
  const browser = await launchChromium();
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const want = {
      state: o.state,
      succeeded: o.succeeded,
      items: Math.min(SUCCEEDED_PAGE, o.succeeded),
      rows: Math.min(SENTINELS_PAGE, o.fleet),
      // src/web/app/session.ts's key.
      key: 'unkey-infra.adminToken',
      token: o.token,
    };
    await page.addInitScript({ content: watchRendered(want) });
    const t0 = performance.now();
    await page.goto(`${o.url}/#/rollout`);
    try {
      // A function, not a string: the page's CSP forbids the eval a string predicate needs.
      await page.waitForFunction(() => (globalThis as { __rendered?: number }).__rendered !== undefined, undefined, { timeout: TIMEOUT_MS, polling: 50 });
    } catch (err) {
      const shown = await page.locator('body').innerText({ timeout: 2000 }).catch(() => '(unreadable)');
      throw new Error(`rollout page not rendered within ${TIMEOUT_MS} ms (want ${JSON.stringify({ ...want, token: '…' })}); it showed:\n${shown.slice(0, 1500)}`, { cause: err });
    }
    const webRenderWallMs = performance.now() - t0;
    const webRenderMs = (await page.evaluate('window.__rendered')) as number;
    return { webRenderMs: Math.round(webRenderMs), webRenderWallMs: Math.round(webRenderWallMs) };
  } finally {
    await browser.close();
  }
}
