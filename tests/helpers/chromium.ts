// Where Debian's `chromium` is and how to start it headless: shared by the web view's tests
// (tests/web/browser.ts) and bench:rollout's render measurement, which must not pull in
// node:test's hooks. playwright-core drives it and downloads no browser.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const CANDIDATES = [process.env.UNKEY_INFRA_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(Boolean) as string[];

export function chromiumExecutable(): string {
  const path = CANDIDATES.find((p) => existsSync(p));
  if (!path) throw new Error(`no chromium found (tried ${CANDIDATES.join(', ')}): apt-get install -y chromium`);
  return path;
}

export function launchChromium(): Promise<Browser> {
  // --no-sandbox: CI runs as root in a container, where Chromium's sandbox cannot start.
  return chromium.launch({ executablePath: chromiumExecutable(), args: ['--no-sandbox'] });
}
