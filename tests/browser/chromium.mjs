// Launches Debian's Chromium for the browser tests with the flags this machine needs: headless,
// no sandbox as root, and no background networking (the closed network refuses it noisily).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';

export const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';

export function launchChromium() {
  assert.ok(existsSync(executablePath), `${executablePath} is missing: apt-get install chromium`);
  return chromium.launch({
    executablePath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}
