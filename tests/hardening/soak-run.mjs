// One soak session (soak-lib.mjs) in Chromium against build/site, shared by the command
// (tests/hardening/soak.mjs) and the npm-test sample (tests/browser/soak.test.mjs).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../browser/chromium.mjs';
import { startServer } from '../../scripts/serve.mjs';
import { soak, warmUp, heaps, messages, settled, INTERNALS } from './soak-lib.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Opens the app, warms up (every view × model × snapshot once), measures the heaps, runs
 * `interactions` seeded interactions, repeats the warm-up and measures again. Returns {visits, interactions, seconds,
 * before, after, errors: [], internals: [], unsettled: []}.
 */
export async function runSoak({ interactions, seed = 1, log = () => {} }) {
  const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
  const server = await startServer({ root: site, port: 0 });
  const browser = await launchChromium();
  const errors = [];
  const internals = new Set();
  try {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    let last = 'load';
    page.on('pageerror', (e) => errors.push(`after "${last}": ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error' && !/status of 404/.test(m.text())) errors.push(`after "${last}": console: ${m.text()}`); });
    page.on('dialog', (d) => { errors.push(`after "${last}": a dialog opened: ${d.message()}`); d.dismiss(); });
    await page.goto(`${server.url}#v=2`);
    await settled(page, 60_000);
    const started = Date.now();
    const visits = await warmUp(page);
    const before = await heaps(page, cdp);
    log(`warm-up: ${visits} view/model/snapshot visits in ${((Date.now() - started) / 1000).toFixed(0)} s; heaps ${JSON.stringify(before)}`);
    const t0 = Date.now();
    const { unsettled, slowest } = await soak(page, {
      count: interactions, seed,
      onStep: async (i, name) => {
        last = name;
        if (i % 25 === 0 || errors.length) for (const m of await messages(page)) if (INTERNALS.test(m)) internals.add(`after "${name}": ${m}`);
        if (i % 1000 === 999) log(`${i + 1} interactions, ${((Date.now() - t0) / 1000).toFixed(0)} s, ${errors.length} errors`);
      },
    });
    // The same visits again, so that every view's cache holds the analyses it held after the
    // warm-up: what remains of the difference is memory the interactions kept.
    await warmUp(page);
    const after = await heaps(page, cdp);
    return { visits, interactions, seconds: (Date.now() - t0) / 1000, before, after, errors, internals: [...internals], unsettled, slowest };
  } finally {
    await browser.close();
    await server.close();
  }
}
