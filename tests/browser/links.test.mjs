// Link integrity as a property: random sequences of real user actions in the page (switch view,
// switch model, pick a snapshot or head, sort the head scores, ablate, cut (and its ablation kind), type text, pick an IOI template, order,
// names, place or object, switch activation patching, change how the Circuits tables are shown),
// then "Copy link", open the link in a fresh browser context and check that the reopened page has
// the same state, shows no "could not be read", and looks the same (a screenshot of the view,
// compared pixel for pixel).
// Seeded and reproducible: LINK_SEED=n picks the seed (default 1), LINK_SEQUENCES=n the number of
// sequences (default 300), LINK_ACTIONS=n the most actions in one (default 12). A failing
// sequence prints its seed, its actions and the link, and leaves both screenshots in
// test-artifacts/links/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from './chromium.mjs';
import { startServer } from '../../scripts/serve.mjs';
import { rng } from '../rng.mjs';
import { VIEW_SETTLED } from './settled.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const artifacts = path.join(root, 'test-artifacts', 'links');
const SEED = Number(process.env.LINK_SEED ?? 1);
const SEQUENCES = Number(process.env.LINK_SEQUENCES ?? 300);
const MAX_ACTIONS = Number(process.env.LINK_ACTIONS ?? 12);
const SETTLE_TIMEOUT = Number(process.env.LINK_SETTLE_MS ?? 30_000);

let server;
let browser;

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  server = await startServer({ root: site, port: 0 });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

const SNIPPETS = ['Alice was beginning to get very tired. ', 'the cat sat on the mat, ', 'Hello hello ', 'xq zv ',
  'One, two, three! ', '\n', 'é ✓ ', 'abcdefghij'];

/** Random text: snippets, sometimes repeated (so induction shows), sometimes past the context. */
function randomText(r) {
  let t = '';
  const n = 1 + r.int(6);
  for (let i = 0; i < n; i++) t += r.pick(SNIPPETS);
  if (r.next() < 0.4) t += t;
  if (r.next() < 0.1) t = t.repeat(6);
  return r.next() < 0.05 ? '' : t;
}

/** Waits until the page shows the store's state: the view rendered its latest version. */
async function settle(page, where = '') {
  try {
    await settled(page);
  } catch (e) {
    const seen = await page.evaluate(() => {
      const v = document.querySelector('#view-host > .view:not([hidden])');
      return { state: window.__cs?.store.state, version: window.__cs?.store.version, view: v?.tagName, data: { ...v?.dataset }, status: document.querySelector('#app-status')?.textContent, error: document.querySelector('#app-error')?.textContent };
    }).catch(() => null);
    throw new Error(`${where}: the page did not settle (${e.message.split('\n')[0]}): ${JSON.stringify(seen)}`);
  }
}

async function settled(page) {
  await page.waitForFunction(VIEW_SETTLED, { complete: true }, { timeout: SETTLE_TIMEOUT, polling: 50 });
  // Two frames, so what the render changed is painted.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

/** The actions open in the page as it is now: [{name, run(page)}]. */
async function possibleActions(page, r) {
  const view = await page.evaluate(() => window.__cs.store.state.view);
  const options = (sel) => page.$$eval(sel, (os) => os.map((o) => o.value));
  const visible = async (sel) => !!(await page.$(`${sel}:not([disabled])`)) && page.isVisible(sel);
  const out = [];
  const select = async (name, sel) => {
    if (!(await visible(sel))) return;
    const values = await options(`${sel} option`);
    if (values.length > 1) {
      const value = r.pick(values);
      out.push({ name: `${name}=${value}`, run: (p) => p.selectOption(sel, value) });
    }
  };
  for (const v of ['induction', 'ioi', 'circuits', 'training', 'report']) {
    if (v !== view) out.push({ name: `view=${v}`, run: (p) => p.click(`#tab-${v}`) });
  }
  await select('model', '#model-switch');
  await select('snapshot', '#snapshot-switch');
  if (view === 'induction') {
    const heads = await page.$$eval('cs-induction .ind-head-cell', (cs) => cs.map((c) => c.dataset.head));
    if (heads.length) {
      const h = r.pick(heads);
      out.push({ name: `head=${h}`, run: (p) => p.click(`cs-induction .ind-head-cell[data-head="${h}"] .ind-head`) });
      const a = r.pick(heads);
      out.push({ name: `ablate=${a}`, run: (p) => p.click(`cs-induction .ind-head-cell[data-head="${a}"] .ind-ablate`) });
    }
    const text = randomText(r);
    out.push({ name: `text=${JSON.stringify(text.slice(0, 30))}`, run: (p) => p.fill('cs-induction textarea', text) });
    out.push({ name: 'repeat', run: (p) => p.click('cs-induction button:text-is("Repeat my text")') });
    const sorts = await page.$$eval('cs-induction .ind-sort', (bs) => bs.length);
    if (sorts) {
      const k = r.int(sorts);
      out.push({ name: `hsort#${k}`, run: (p) => p.click(`cs-induction .ind-sort >> nth=${k}`) });
    }
    await select('patch', 'cs-induction select[id$="-patch"]');
  } else if (view === 'ioi') {
    await select('order', 'cs-ioi select[id$="-order"]');
    await select('cut', 'cs-ioi select[id$="-cut"]');
    await select('abl', 'cs-ioi select[id$="-abl"]');
    await select('tpl', 'cs-ioi select[id$="-tpl"]');
    await select('place', 'cs-ioi select[id$="-place"]');
    await select('object', 'cs-ioi select[id$="-object"]');
    await select('patch', 'cs-ioi select[id$="-patch"]');
    if (await visible('cs-ioi input[id$="-nopos"]')) out.push({ name: 'nopos', run: (p) => p.click('cs-ioi input[id$="-nopos"]') });
    for (const role of ['io', 's']) {
      const sel = `cs-ioi input[id$="-${role}"]`;
      if (!(await visible(sel))) continue;
      const known = await options('cs-ioi datalist option');
      const name = r.next() < 0.85 && known.length ? r.pick(known) : r.pick(['Zoe', 'mary', 'B', '']);
      out.push({ name: `${role}=${name}`, run: async (p) => { await p.fill(sel, name); await p.press(sel, 'Enter'); } });
    }
  } else if (view === 'circuits') {
    await select('head', 'cs-circuits select[id$="-head"]');
    await select('sort', 'cs-circuits select[id$="-sort"]');
    await select('top', 'cs-circuits select[id$="-top"]');
    if (await visible('cs-circuits input[id$="-zoom"]')) {
      const z = 3 + r.int(26);
      out.push({ name: `zoom=${z}`, run: (p) => p.$eval('cs-circuits input[id$="-zoom"]', (e, v) => { e.value = String(v); e.dispatchEvent(new Event('input', { bubbles: true })); }, z) });
    }
    const text = randomText(r).slice(0, 60);
    out.push({ name: `text=${JSON.stringify(text.slice(0, 30))}`, run: (p) => p.fill('cs-circuits textarea', text) });
  } else if (view === 'training') {
    if (await visible('cs-training input[type="range"]')) {
      const max = Number(await page.getAttribute('cs-training input[type="range"]', 'max'));
      const i = r.int(max + 1);
      out.push({ name: `slider=${i}`, run: (p) => p.$eval('cs-training input[type="range"]', (e, v) => { e.value = String(v); e.dispatchEvent(new Event('change', { bubbles: true })); }, i) });
    }
  }
  return out;
}

/** A screenshot of the view (focus and hover moved away, so neither shows). */
async function shot(page) {
  // Where the user left a text box scrolled is not part of the view's state.
  await page.evaluate(() => {
    document.activeElement?.blur();
    window.scrollTo(0, 0);
    for (const t of document.querySelectorAll('textarea')) t.scrollTop = 0;
  });
  await page.mouse.move(0, 0);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  // The messages above the view (the copied link, the status) are hidden while the screenshot is
  // taken, so both pages lay the view out at the same place; the clip is the view's box rounded
  // out to whole pixels.
  const box = await page.evaluate(() => {
    document.querySelector('.app-messages').style.display = 'none';
    const r = document.querySelector('#view-host > .view:not([hidden])').getBoundingClientRect();
    const top = Math.floor(r.top + scrollY);
    return { x: Math.floor(r.left), y: top, width: Math.ceil(r.right) - Math.floor(r.left), height: Math.ceil(r.bottom + scrollY) - top };
  });
  const png = await page.screenshot({ clip: box, fullPage: true, animations: 'disabled', caret: 'hide' });
  await page.evaluate(() => { document.querySelector('.app-messages').style.display = ''; });
  png.box = box;
  return png;
}

// Screenshots of the same view in two browser contexts may differ in a few anti-aliased pixels
// at element edges that fall between device pixels; a changed digit or line is hundreds.
const MAX_DIFF_PIXELS = 24;
let diffPage = null;

/** How many pixels differ between two PNGs of the same size ({n: Infinity} if sizes differ), and where. */
async function pixelDiff(a, b) {
  diffPage ??= await (await browser.newContext()).newPage();
  return diffPage.evaluate(async ([a, b]) => {
    const load = (s) => new Promise((res, rej) => { const i = new Image(); i.onload = () => res(i); i.onerror = rej; i.src = `data:image/png;base64,${s}`; });
    const [A, B] = await Promise.all([load(a), load(b)]);
    if (A.width !== B.width || A.height !== B.height) return { n: Infinity, sizes: [A.width, A.height, B.width, B.height] };
    const pixels = (img) => {
      const c = document.createElement('canvas');
      c.width = img.width; c.height = img.height;
      const ctx = c.getContext('2d');
      ctx.drawImage(img, 0, 0);
      return ctx.getImageData(0, 0, img.width, img.height).data;
    };
    const pa = pixels(A), pb = pixels(B);
    let n = 0, x0 = Infinity, y0 = Infinity, x1 = -1, y1 = -1;
    for (let i = 0; i < pa.length; i += 4) {
      if (pa[i] === pb[i] && pa[i + 1] === pb[i + 1] && pa[i + 2] === pb[i + 2]) continue;
      const p = i / 4, x = p % A.width, y = Math.floor(p / A.width);
      n++; x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y);
    }
    return { n, box: [x0, y0, x1, y1] };
  }, [a.toString('base64'), b.toString('base64')]);
}

async function openFresh(url) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 404/.test(m.text())) problems.push(`console error: ${m.text()}`); });
  await page.goto(url);
  return { context, page, problems };
}

/** One sequence: actions in the author's page, Copy link, the link in a fresh context, compared. */
async function sequence(author, n) {
  const seed = SEED * 100_003 + n;
  const r = rng(seed);
  // Each sequence starts from the default view (the page itself is kept, with what its views
  // remember from earlier sequences: that is how a person uses it).
  await author.page.evaluate(() => { location.hash = '#v=2'; });
  await author.page.waitForFunction(() => window.__cs?.store.state.view === 'induction' && location.hash === '#v=2');
  const done = [];
  await settle(author.page, `sequence ${n} (seed ${seed}) start`);
  const count = 1 + r.int(MAX_ACTIONS);
  for (let i = 0; i < count; i++) {
    const a = r.pick(await possibleActions(author.page, r));
    done.push(a.name);
    await a.run(author.page);
    await settle(author.page, `sequence ${n} (seed ${seed}): ${done.join(' → ')}`);
  }
  await author.page.click('#copy-link');
  const link = await author.page.inputValue('#copy-text');
  const want = await author.page.evaluate(() => window.__cs.store.state);
  const before = await shot(author.page);
  const where = `sequence ${n} (LINK_SEED=${SEED}, seed ${seed}): ${done.join(' → ')}\n  link: ${link}`;

  const fresh = await openFresh(link);
  try {
    await settle(fresh.page, `reopening ${where}`);
    const status = (await fresh.page.textContent('#app-status')) ?? '';
    assert.doesNotMatch(status, /could not be read/, `${where}\n  ${status}`);
    const got = await fresh.page.evaluate(() => window.__cs.store.state);
    assert.deepEqual(got, want, where);
    const after = await shot(fresh.page);
    const diff = before.equals(after) ? { n: 0 } : await pixelDiff(before, after);
    if (diff.n > MAX_DIFF_PIXELS) {
      writeFileSync(path.join(artifacts, `seq${n}-author.png`), before);
      writeFileSync(path.join(artifacts, `seq${n}-reopened.png`), after);
      assert.fail(`${where}\n  the reopened view looks different: test-artifacts/links/seq${n}-*.png (${JSON.stringify(diff)}; boxes ${JSON.stringify(before.box)} ${JSON.stringify(after.box)})`);
    }
    assert.deepEqual(fresh.problems, [], where);
  } finally {
    await fresh.context.close();
  }
  assert.deepEqual(author.problems, [], where);
  return done.length;
}

// LINK_LANES author pages work side by side (lane k takes the sequences n = k mod LINK_LANES), so
// the browser's processes keep both cores busy while one page waits for the other.
const LANES = Math.max(1, Number(process.env.LINK_LANES ?? 2));

test(`links: ${SEQUENCES} random action sequences (seed ${SEED}) each reopen the same view`, async (t) => {
  const started = Date.now();
  const lane = async (k) => {
    const author = await openFresh(`${server.url}#v=2`);
    await author.context.grantPermissions(['clipboard-read', 'clipboard-write']);
    let actions = 0;
    try {
      for (let n = k; n < SEQUENCES; n += LANES) actions += await sequence(author, n);
    } finally {
      await author.context.close();
    }
    return actions;
  };
  const actions = (await Promise.all(Array.from({ length: LANES }, (_, k) => lane(k)))).reduce((a, b) => a + b, 0);
  t.diagnostic(`${SEQUENCES} sequences, ${actions} actions, ${LANES} lanes, ${((Date.now() - started) / 1000).toFixed(0)} s`);
});
