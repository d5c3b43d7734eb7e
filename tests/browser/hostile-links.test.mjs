// A seeded sample of the hostile-link corpus (tests/hardening/hostile-links-lib.mjs) opened in
// Chromium with the page's content security policy sent as a header: the links take turns being
// opened fresh (a new page) and by hashchange (a page that is kept). Each must settle (its view, or
// a sentence and the default view; opens slower than HOSTILE_LIMIT_MS are listed, not failed),
// run no payload, put no payload's element in the DOM, throw nothing, log no console error, leave
// no blank page, ask no other origin, and show no message with the page's internals. HOSTILE_SAMPLE=n (default 300), HOSTILE_SEED=n
// (default 1), HOSTILE_LANES=n (default 2), HOSTILE_LIMIT_MS (default 1000). The whole corpus:
// `node tests/hardening/hostile-links.mjs --all` (tests/hardening/README.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadSite, hostileLinks, sampleLinks, openLinks, settleFigures, short } from '../hardening/hostile-links-lib.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const SAMPLE = Number(process.env.HOSTILE_SAMPLE ?? 300);
const SEED = Number(process.env.HOSTILE_SEED ?? 1);
const LANES = Number(process.env.HOSTILE_LANES ?? 2);
const LIMIT = Number(process.env.HOSTILE_LIMIT_MS ?? 1000);


test(`hostile links: a sample of ${SAMPLE} (seed ${SEED}) settle with no payload run, no error and no internals shown`, async (t) => {
  const started = Date.now();
  const loaded = await loadSite(site);
  const links = sampleLinks(hostileLinks(loaded, { seed: SEED }), SAMPLE, SEED);
  const results = await openLinks(links, { site, alternate: true, lanes: LANES, limit: LIMIT, defaultState: loaded.S.decodeHash('').state });
  // Time is reported, not asserted (a test holds no wall-clock bound): an open over the limit,
  // fresh (its cold start: WASM, the model, the view's first computation) or by hashchange (a 2 MB
  // hash alone takes the browser a quarter of a second to deliver under load), is listed here; the
  // bound itself is the benchmark's (tests/hardening/hostile-links.mjs prints every time, and
  // tests/hardening/README.md the full corpus's figures). Not settling at all fails: a page that
  // has not settled when the guard runs out (10 s; 30 s for a link over 64 KB, which the browser
  // alone takes seconds to deliver) is given 20 s more, and is listed as slow if it settles in
  // them (this machine under load), stuck if not.
  const slow = results.filter((r) => r.failures.length && r.failures.every((f) => f.kind === 'slow'));
  for (const r of slow) {
    t.diagnostic(r.ms === null ? `slow ${r.mode} open: ${r.failures[0].what.slice(0, 400)}`
      : `slow ${r.mode} open (${Math.round(r.ms)} ms, opened ${r.opened}): ${short(r.link.hash, 120)}`);
  }
  const failed = results.filter((r) => r.failures.length && !slow.includes(r));
  for (const m of ['fresh', 'hashchange']) {
    const f = settleFigures(results.filter((r) => r.mode === m));
    t.diagnostic(`${m}: ${f.n} settled, median ${f.median.toFixed(0)} ms, max ${f.max.toFixed(0)} ms`);
  }
  t.diagnostic(`${results.length} links, ${failed.length} failed, ${((Date.now() - started) / 1000).toFixed(0)} s`);
  assert.equal(results.length, links.length);
  assert.deepEqual(failed.map((r) => `${r.mode}, ${r.link.kind} (${r.link.note}; opened ${r.opened}): ${r.failures.map((f) => `${f.kind}: ${f.what}`).join('; ')}\n    link: ${short(r.link.hash)}`), []);
});

test('hostile links: a link that opens after one that could not be read takes the sentence away', async () => {
  const { launchChromium, startCspProxy } = await import('./chromium.mjs');
  const { CSP } = await import('../../scripts/serve.mjs');
  const proxy = await startCspProxy(site, CSP);
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.goto(`${proxy.origin}/#v=2&view=%3Cscript%3E`);
    await page.waitForFunction(() => /could not be read/.test(document.querySelector('#app-status').textContent) && document.body.dataset.hashError === 'true');
    await page.evaluate(() => { location.hash = '#v=2&view=circuits'; });
    await page.waitForFunction(() => window.__cs.store.state.view === 'circuits' && !document.body.dataset.hashError);
    assert.equal(await page.$eval('#app-status', (e) => (e.hidden ? '' : e.textContent)), '');
  } finally {
    await browser.close();
    await proxy.close();
  }
});
