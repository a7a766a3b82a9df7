/**
 * A real browser for the tests of HTML pages and the command-line sign-in: Debian's chromium, driven
 * by playwright-core. Installed with apt-get when missing and the run is root (it says so); where no
 * browser can be had the caller skips, printing why.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The browser's path, installing Debian's chromium when missing; or why there is none. */
export function ensureChromium(): { path: string } | { reason: string } {
  if (existsSync(CHROMIUM)) return { path: CHROMIUM };
  if (process.getuid?.() !== 0)
    return { reason: `${CHROMIUM} is missing and installing it needs root (apt-get install -y chromium)` };
  if (!existsSync('/usr/bin/apt-get'))
    return { reason: `${CHROMIUM} is missing and this host has no apt-get to install it` };
  const install = () =>
    execFileSync('apt-get', ['install', '-y', '-q', '-o', 'DPkg::Lock::Timeout=600', 'chromium'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  console.log(
    `[browser tests] ${CHROMIUM} is missing: installing Debian's chromium (apt-get install -y chromium) as root...`,
  );
  try {
    install();
  } catch {
    try {
      console.log('[browser tests] apt-get install failed; running apt-get update and trying again...');
      execFileSync('apt-get', ['update', '-q'], { stdio: 'ignore' });
      install();
    } catch (err) {
      return {
        reason: `apt-get install -y chromium failed: ${String((err as { stderr?: Buffer }).stderr ?? err).slice(0, 500)}`,
      };
    }
  }
  return existsSync(CHROMIUM)
    ? { path: CHROMIUM }
    : { reason: `apt-get installed chromium but ${CHROMIUM} is still missing` };
}

/**
 * The headless chromium of this test process, started at its first use: files one after another in a vitest
 * worker (`isolate: false`) share it, as a start and stop cost ~2.8 s of CPU here (docs/benchmarks.md). Playwright
 * stops it when the process ends.
 */
let shared: Promise<Browser> | undefined;

/** A fresh browser context (its own cookies, storage and cache) in the shared chromium; `close` ends the context. */
export async function launchBrowser(
  executablePath: string,
): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const launch = () => chromium.launch({ executablePath, headless: true, args: ARGS });
  shared ??= launch();
  let browser = await shared.catch(() => undefined);
  if (!browser?.isConnected()) {
    shared = launch();
    browser = await shared;
  }
  const context = await browser.newContext();
  return { context, close: () => context.close() };
}
