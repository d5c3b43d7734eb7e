// The activation-patching panels (ioi-patching, induction-patching; web/parts/patch-map.js) in
// Debian's Chromium, served from the built site (build/site) under the page's content security
// policy: with patching on, the heatmaps' cells say the core's numbers (the read-out of a hovered
// cell against model.patch() called in the same page), the corrupted tokens the core changed are
// marked, the direction switch goes into the link and a reopened link shows the same, and a
// refused case (too many forward passes; a text without a repeat) shows the core's sentence.
// Needs `npm run build`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, startCspProxy, KEYSTROKE_TEXT } from './chromium.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:";
const FOX = 'The quick brown fox. The quick brown fox';

let server;
let browser;

before(async () => {
  assert.ok(existsSync(path.join(site, 'panels', 'ioi', 'patching.js')), `${site}/panels/ioi/patching.js is missing: run \`npm run build\` first`);
  server = await startCspProxy(site, CSP, (req, res, u) => {
    if (u.pathname !== '/__view.html') return false;
    const tag = u.searchParams.get('tag');
    const attrs = JSON.parse(u.searchParams.get('attrs') || '{}');
    const a = Object.entries(attrs).map(([k, v]) => ` ${k}="${String(v).replace(/[&"<>]/g, '')}"`).join('');
    const module = tag === 'cs-panel' ? 'panels/panel.js' : `views/${tag.replace(/^cs-/, '')}.js`;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${tag}</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml"><link rel="stylesheet" href="/style.css">
<script type="module" src="/${module}"></script></head><body><main><${tag}${a}></${tag}></main></body></html>`);
    return true;
  });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function open(url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.goto(url);
  return { context, page, problems };
}
const openView = (tag, attrs) => open(`${server.origin}/__view.html?tag=${tag}&attrs=${encodeURIComponent(JSON.stringify(attrs))}`);

/** The core's patching of `text` on `model`, called in the page: the numbers the panel must show. */
function corePatch(page, model, text, direction, intervention = {}) {
  return page.evaluate(async ([model, text, direction, intervention]) => {
    const { getModel } = await import('/store.js');
    const m = await getModel(model);
    const r = m.patch(m.tokenize(text).ids, { direction, intervention, positions: 'auto' });
    return { head: Array.from(r.head.data), headEffect: Array.from(r.head_effect.data), headPos: r.head_pos && Array.from(r.head_pos.data),
      headPosEffect: r.head_pos_effect && Array.from(r.head_pos_effect.data), clean: r.clean_logit_diff, corrupted: r.corrupted_logit_diff,
      changed: r.corruption.changed, L: r.head.shape[0], H: r.head.shape[1], T: r.tokens.length, note: r.note, passes: r.passes };
  }, [model, text, direction, intervention]);
}

/** Moves the pointer onto cell (r, c) of a patching heatmap; returns the read-out's data. */
async function hoverCell(page, scope, canvas, r, c) {
  const sel = `${scope} canvas.${canvas}`;
  await page.$eval(sel, (e) => e.scrollIntoView({ block: 'center', inline: 'nearest' }));
  const at = await page.$eval(sel, (e, [r, c]) => {
    const g = e.dataset;
    const rect = e.getBoundingClientRect();
    const s = rect.width / e.width;
    return { x: rect.left + (Number(g.x0) + (c + 0.5) * Number(g.cell)) * s, y: rect.top + (Number(g.y0) + (r + 0.5) * Number(g.cell)) * s };
  }, [r, c]);
  await page.mouse.move(at.x, at.y);
  return page.$eval(`${scope} .cs-patch-hover`, (e) => ({ ...e.dataset, text: e.textContent }));
}

/** Checks some cells of both maps against the core's result `want`. */
async function checkCells(page, scope, want, cells) {
  const { H, T } = want;
  for (const [l, h] of cells.heads) {
    const got = await hoverCell(page, scope, 'cs-patch-heads', l, h);
    assert.equal(got.map, 'head');
    assert.equal(got.head, `L${l}H${h}`);
    assert.equal(Number(got.effect), want.headEffect[l * H + h], `effect of L${l}H${h}`);
    assert.equal(Number(got.value), want.head[l * H + h], `logit difference of L${l}H${h}`);
  }
  for (const [k, t] of cells.positions) {
    const got = await hoverCell(page, scope, 'cs-patch-positions', k, t);
    assert.equal(got.map, 'position');
    assert.equal(got.head, `L${Math.floor(k / H)}H${k % H}`);
    assert.equal(Number(got.pos), t);
    assert.equal(Number(got.effect), want.headPosEffect[k * T + t], `effect of head ${k} at ${t}`);
    assert.equal(Number(got.value), want.headPos[k * T + t], `logit difference of head ${k} at ${t}`);
    assert.match(got.text, new RegExp(`^${got.head} at position ${t} `));
  }
}

test('IOI: ioi-1l2h with patching on shows the core\'s effects per head and per head and position', async () => {
  const { context, page, problems } = await openView('cs-ioi', { model: 'ioi-1l2h', io: 'A', s: 'B', order: 'IOSS', patch: 'denoise' });
  try {
    const scope = 'cs-ioi section[data-panel="ioi-patching"]';
    await page.waitForSelector(`${scope} .cs-patch[data-state="shown"]`, { timeout: 60_000 });
    const want = await corePatch(page, 'ioi-1l2h', 'A B B <MID>', 'denoise');
    assert.ok(want.clean > 0 && want.corrupted < 0, 'the corruption flips the answer');
    const shown = await page.$eval(`${scope} .cs-patch`, (e) => ({ ...e.dataset }));
    assert.equal(Number(shown.cleanDiff), want.clean);
    assert.equal(Number(shown.corruptedDiff), want.corrupted);
    // The corrupted input (the second row) marks the positions the core changed, and shows names.
    const rows = await page.$$eval(`${scope} .cs-patch-input`, (ps) => ps.map((p) => [...p.querySelectorAll('.cs-patch-tok')].map((t) => ({ text: t.textContent, changed: t.classList.contains('changed') }))));
    assert.deepEqual(rows[1].map((t, i) => (t.changed ? i : -1)).filter((i) => i >= 0), want.changed);
    assert.deepEqual(rows.map((r) => r.map((t) => t.text).join(' ')), ['<BOS> Mary John John <MID>', '<BOS> Mary John Mary <MID>']);
    await checkCells(page, scope, want, { heads: [[0, 0], [0, 1]], positions: [[0, 3], [1, 1], [1, 4], [0, 0]] });
    assert.match(await page.textContent(`${scope} .cs-explain`), /^Denoising: /);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('IOI in the app: the direction switch goes into the link, and the link reopens it', async () => {
  const { context, page, problems } = await open(`${server.origin}/#v=2&view=ioi&model=ioi-1l2h`);
  try {
    const scope = 'cs-ioi section[data-panel="ioi-patching"]';
    await page.waitForSelector(`${scope} .cs-patch[data-state="off"]`, { timeout: 60_000 });
    assert.doesNotMatch(await page.evaluate(() => location.hash), /patch=/, 'off by default');
    await page.selectOption(`${scope} select[id$="-patch"]`, 'denoise');
    await page.waitForSelector(`${scope} .cs-patch[data-direction="denoise"][data-state="shown"]`);
    await page.selectOption(`${scope} select[id$="-patch"]`, 'noise');
    await page.waitForFunction(() => /(^|&)patch=noise(&|$)/.test(location.hash.slice(1)));
    await page.waitForSelector(`${scope} .cs-patch[data-direction="noise"][data-state="shown"]`);
    assert.match(await page.textContent(`${scope} .cs-explain`), /^Noising: /);
    const hash = await page.evaluate(() => location.hash);
    const want = await corePatch(page, 'ioi-1l2h', 'A B B <MID>', 'noise');
    await checkCells(page, scope, want, { heads: [[0, 1]], positions: [[1, 3]] });
    assert.deepEqual(problems, []);
    const again = await open(`${server.origin}/${hash}`);
    try {
      await again.page.waitForSelector(`${scope} .cs-patch[data-direction="noise"][data-state="shown"]`, { timeout: 60_000 });
      assert.equal(await again.page.$eval(`${scope} select[id$="-patch"]`, (e) => e.value), 'noise');
      await checkCells(again.page, scope, want, { heads: [[0, 1]], positions: [[1, 3]] });
      // Off again: the key leaves the link.
      await again.page.selectOption(`${scope} select[id$="-patch"]`, '');
      await again.page.waitForFunction(() => !/patch=/.test(location.hash));
      await again.page.waitForSelector(`${scope} .cs-patch[data-state="off"]`);
      assert.deepEqual(again.problems, []);
    } finally {
      await again.context.close();
    }
  } finally {
    await context.close();
  }
});

test('induction: char-2l with patching on a repeated text shows the core\'s effects, at every position of its whole context too', async () => {
  const { context, page, problems } = await openView('cs-induction', { model: 'char-2l', text: FOX, patch: 'denoise' });
  try {
    const scope = 'cs-induction section.ind-patching';
    await page.waitForSelector('cs-induction[data-ready="true"][data-complete="true"]', { timeout: 60_000 });
    await page.waitForSelector(`${scope} .cs-patch[data-state="shown"]`);
    const want = await corePatch(page, 'char-2l', FOX, 'denoise');
    assert.equal(want.T, FOX.length + 1);
    const marked = await page.$$eval(`${scope} .cs-patch-input:nth-of-type(2) .cs-patch-tok.changed`, (ts) => ts.map((t) => Number(t.dataset.pos)));
    assert.deepEqual(marked, want.changed, 'the first copy, as the core changed it');
    await checkCells(page, scope, want, { heads: [[0, 0], [1, 1], [1, 3]], positions: [[5, 30], [4, 2], [7, want.T - 2], [0, 0]] });
    // Noise, through the panel's switch.
    await page.selectOption(`${scope} select[id$="-patch"]`, 'noise');
    await page.waitForSelector(`${scope} .cs-patch[data-direction="noise"][data-state="shown"]`, { timeout: 30_000 });
    await checkCells(page, scope, await corePatch(page, 'char-2l', FOX, 'noise'), { heads: [[1, 2]], positions: [[6, 25]] });
    // A head ablated on the same text: patched again under the ablation, not the result kept for the text.
    const ablated = await corePatch(page, 'char-2l', FOX, 'noise', { ablate: [{ layer: 0, head: 0 }] });
    await page.evaluate(() => document.querySelector('cs-induction').update({ ablate: ['L0H0'] }));
    assert.notEqual(ablated.clean, (await corePatch(page, 'char-2l', FOX, 'noise')).clean);
    await page.waitForFunction(([s, v]) => Number(document.querySelector(`${s} .cs-patch[data-state="shown"]`)?.dataset.cleanDiff) === v,
      [scope, ablated.clean], { timeout: 30_000 });
    await checkCells(page, scope, ablated, { heads: [[1, 2]], positions: [[6, 25]] });
    await page.evaluate(() => document.querySelector('cs-induction').update({ ablate: [] }));
    // The whole context (each patched pass starts at its head's layer and computes two logits).
    const whole = await corePatch(page, 'char-2l', KEYSTROKE_TEXT, 'noise');
    await page.fill('cs-induction textarea', KEYSTROKE_TEXT);
    await page.waitForFunction(([s, n]) => document.querySelector(`${s} .cs-patch-diffs`)?.textContent.includes(`(${n} forward passes)`),
      [scope, whole.passes], { timeout: 60_000 });
    assert.equal(whole.note, '');
    await checkCells(page, scope, whole, { heads: [[0, 1]], positions: [[3, 40]] });
    assert.equal(await page.$(`${scope} .cs-patch-whole-only`), null);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('induction: a text too long to patch each position of shows every head patched at all positions, with the core\'s sentence', async () => {
  const LONG = 'The cat sat on the mat and looked at the hat. '.repeat(16);   // 241 tokens of bpe-2l's 256
  const { context, page, problems } = await openView('cs-induction', { model: 'bpe-2l', text: LONG, patch: 'denoise' });
  try {
    const scope = 'cs-induction section.ind-patching';
    await page.waitForSelector('cs-induction[data-ready="true"][data-complete="true"]', { timeout: 60_000 });
    await page.waitForSelector(`${scope} .cs-patch[data-state="shown"]`, { timeout: 60_000 });
    const want = await corePatch(page, 'bpe-2l', LONG, 'denoise');
    assert.equal(want.headPos, null);
    assert.match(want.note, /^Each head is patched at every position at once only: patching it at each of the \d+ positions alone/);
    assert.equal(await page.textContent(`${scope} .cs-patch-whole-only`), want.note);
    assert.equal(await page.$(`${scope} canvas.cs-patch-positions`), null);
    await checkCells(page, scope, want, { heads: [[0, 0], [1, 3]], positions: [] });
  } finally {
    await context.close();
  }
});

test('induction-patching mounts alone; a text without a repeat gets the core\'s sentence', async () => {
  const { context, page, problems } = await openView('cs-panel', { name: 'induction-patching', model: 'char-2l', text: 'Hello there', patch: 'noise' });
  try {
    await page.waitForSelector('cs-panel[data-ready="true"] .cs-patch[data-state="refused"]', { timeout: 60_000 });
    assert.match(await page.textContent('cs-panel .cs-patch-refused'), /^break the repeat: the text has no block of 4 or more tokens that occurs twice/);
    assert.equal(await page.$eval('cs-panel select[id$="-patch"]', (e) => e.value), 'noise');
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});
