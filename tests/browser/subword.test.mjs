// Sub-word (byte-pair) models in the page, and the ICL chart's standard-error band, in Debian's
// Chromium with the page's content security policy. The model is made here: the native CLI trains
// tests/browser/fixtures/bpe-tiny.json (a byte-pair vocabulary of 300 learned from the held-out
// corpus, one layer, 12 steps, well under a second), which also writes a metrics file whose
// records carry icl_se over 8 held-out windows.
//  (a) the model file opened through the header's "Open a model file": the status lines call its
//      vocabulary sub-word (byte-pair), typed text is kept and cut into the core's sub-word tokens,
//      the token strip shows them with their leading spaces (␣) and newlines (↵) visible and their
//      real text in the tooltip, and a token's top-5 predictions and the attention patterns
//      render; no page or console error.
//  (b) the Training view of that run (the model and its metrics file served under models/): the
//      ICL chart shades ± 1 standard error (drawn on the canvas, in the ICL curve's colour) and
//      its caption names the 8 windows; the CSV download has icl_se. The same metrics without
//      icl_se (as a trainer before it wrote them): no band and no such words.
// Screenshots go to test-artifacts/subword-*.png. Needs `npm run build` (build/native/circuitscope and build/site).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, startCspProxy } from './chromium.mjs';
import { VIEW_SETTLED } from './settled.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const cli = path.join(root, 'build', 'native', 'circuitscope');
const artifacts = path.join(root, 'test-artifacts');
const recipe = path.join(root, 'tests', 'browser', 'fixtures', 'bpe-tiny.json');
const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data: blob:; worker-src 'self'";
const TYPED = 'The angel came to him, and told him to go.\nThe angel came to him, and told him to go.';

const trainingPage = (model) => `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>cs-training</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/style.css"><link rel="stylesheet" href="/views/views.css">
<script type="module" src="/views/training.js"></script></head>
<body><main><cs-training model="${model.replace(/[^\w.-]/g, '')}"></cs-training></main></body></html>`;

let tmp;
let modelFile;
let metricsFile;
let server;
let browser;

before(async () => {
  assert.ok(existsSync(path.join(site, 'open-model.js')), `${site}/open-model.js is missing: run \`npm run build\``);
  assert.ok(existsSync(cli), `${path.relative(root, cli)} is missing: run \`npm run build\``);
  tmp = mkdtempSync(path.join(os.tmpdir(), 'cs-subword-'));
  mkdirSync(artifacts, { recursive: true });
  modelFile = path.join(tmp, 'bpe-tiny.safetensors');
  metricsFile = path.join(tmp, 'bpe-tiny.metrics.json');
  execFileSync(cli, ['train', recipe, '--out', modelFile, '--log-every', '100'], { encoding: 'utf8' });
  // The run's files served as a shipped model's would be (models/NAME.*), and a page with only
  // <cs-training>; everything else from the built site.
  // The same run as an older trainer wrote it, without icl_se (bpe-nose): no band.
  const noSe = JSON.parse(readFileSync(metricsFile, 'utf8'));
  for (const r of noSe.records) delete r.icl_se;
  const noSeFile = path.join(tmp, 'bpe-nose.metrics.json');
  writeFileSync(noSeFile, JSON.stringify(noSe));
  const files = { '/models/bpe-tiny.safetensors': [modelFile, 'application/octet-stream'], '/models/bpe-tiny.metrics.json': [metricsFile, 'application/json'],
    '/models/bpe-nose.safetensors': [modelFile, 'application/octet-stream'], '/models/bpe-nose.metrics.json': [noSeFile, 'application/json'] };
  server = await startCspProxy(site, CSP, (req, res, u) => {
    if (files[u.pathname]) {
      const [file, type] = files[u.pathname];
      res.writeHead(200, { 'content-type': type, 'content-security-policy': CSP });
      res.end(readFileSync(file));
      return true;
    }
    if (u.pathname !== '/__training.html') return false;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP });
    res.end(trainingPage(u.searchParams.get('model') ?? 'bpe-tiny'));
    return true;
  });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** A page at `url` in a fresh context, recording page errors and console errors. */
async function open(url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light', acceptDownloads: true });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (msg) => { if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`); });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  await page.goto(`${server.origin}${url}`);
  return { context, page, problems };
}

const settle = (page) => page.waitForFunction(VIEW_SETTLED, { complete: true }, { timeout: 60_000 });

test('(a) a byte-pair model file opens; typed text shows as sub-word tokens with visible spaces', async () => {
  const { context, page, problems } = await open('/');
  try {
    await settle(page);
    // Text typed for the char model first: a sub-word model reads text too, so it is kept.
    await page.fill('cs-induction textarea', TYPED);
    await page.waitForFunction((t) => window.__cs.store.state.text === t, TYPED);
    await page.setInputFiles('#open-file-input', modelFile);
    await page.waitForFunction(() => ['opened', 'failed'].includes(document.body.dataset.openFile));
    assert.equal(await page.evaluate(() => document.body.dataset.openFile), 'opened', await page.textContent('#app-status'));
    await settle(page);
    const state = await page.evaluate(() => window.__cs.store.state);
    assert.deepEqual([state.view, state.model], ['induction', 'local:bpe-tiny']);
    assert.equal(state.text, TYPED, 'the typed text is kept for a sub-word model');
    assert.match(await page.textContent('#app-status'), /Opened bpe-tiny\.safetensors as local:bpe-tiny \(1 layer of 2 heads, sub-word \(byte-pair\) vocabulary of 300 tokens\)/);
    assert.match(await page.textContent('cs-induction .ind-status'), /sub-word \(byte-pair\) vocabulary of 300 tokens/);
    assert.match(await page.textContent('cs-induction label[for="ind-text"]'), /sub-word/);
    const option = await page.$eval('#model-switch option[value="local:bpe-tiny"]', (o) => o.textContent);
    assert.match(option, /local file/);

    // The core's tokens of the text, and what the strip shows for them.
    await page.waitForFunction((t) => document.querySelector('cs-induction').lastResult?.analysis?.text === t, TYPED);
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const { spans, tokens } = await page.evaluate(() => {
      const a = document.querySelector('cs-induction').lastResult.analysis;
      const tokens = Array.from(a.ids, (id, i) => (i < a.bos ? null : a.text.slice(a.begins[i], a.ends[i])));
      const spans = [...document.querySelectorAll('cs-induction .ind-tokens span.tok')].map((s) => ({ text: s.textContent, title: s.title, br: s.nextElementSibling?.localName === 'br' }));
      return { spans, tokens };
    });
    assert.equal(spans.length, tokens.length, 'one span per token');
    assert.ok(tokens.length - 1 < TYPED.length, `sub-word tokens: ${tokens.length - 1} for ${TYPED.length} characters`);
    const lead = tokens.findIndex((s) => s && s.length > 1 && s.startsWith(' ') && /\w/.test(s));
    assert.ok(lead > 0, `a token with a leading space: ${JSON.stringify(tokens)}`);
    tokens.forEach((s, i) => {
      if (s === null) { assert.equal(spans[i].text, 'BOS'); return; }
      const shown = s.replace(/ /g, '␣').replace(/\n/g, '↵');
      assert.equal(spans[i].text, shown, `token ${i} ${JSON.stringify(s)} shown with its spaces and newlines visible`);
      assert.ok(spans[i].title.startsWith(JSON.stringify(s)), `token ${i}'s tooltip has its real text: ${spans[i].title}`);
      assert.equal(spans[i].br, s.includes('\n'), `token ${i}: a line break after a newline`);
    });
    assert.ok(spans.some((s) => s.text.startsWith('␣') && s.text.length > 1), 'a leading space is visible');
    assert.ok(spans.some((s) => s.text.includes('↵')), 'the newline is visible');

    // A token's predictions: the top 5, their spaces visible, each with its real text as tooltip.
    await page.hover(`cs-induction .ind-tokens span.tok[data-pos="${lead}"]`);
    await page.waitForSelector('cs-induction .ind-focus ol.ind-top li');
    const top = await page.$$eval('cs-induction .ind-focus ol.ind-top li code', (cs) => cs.map((c) => ({ text: c.textContent, title: c.title })));
    assert.equal(top.length, 5, 'five predictions');
    for (const c of top) {
      const real = JSON.parse(c.title);
      assert.equal(c.text, real.replace(/ /g, '␣').replace(/\n/g, '↵').replace(/\t/g, '⇥'), `prediction ${c.title} shown as ${c.text}`);
    }
    assert.match(await page.textContent('cs-induction .ind-focus'), /Token \d+ /);
    await page.screenshot({ path: path.join(artifacts, 'subword-tokens.png'), fullPage: true });
    // The attention patterns drew (one per head, the enlarged one too).
    const canvases = await page.$$eval('cs-induction canvas', (cs) => cs.filter((c) => c.width > 0 && c.height > 0).length);
    assert.ok(canvases >= 2, `attention patterns drawn (${canvases} canvases)`);
    // The Circuits view takes the model too.
    await page.click('#tab-circuits');
    await page.waitForFunction(() => window.__cs.store.state.view === 'circuits');
    await settle(page);
    assert.equal(await page.evaluate(() => window.__cs.store.state.model), 'local:bpe-tiny');
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

/** The ICL chart's figure: its caption, band attribute and how much of its band is on the canvas. */
async function iclChart(page) {
  return page.evaluate(() => {
    const fig = [...document.querySelectorAll('cs-training .cs-grid2 figure.cs-uplot')]
      .find((f) => f.querySelector('.cs-uplot-title')?.textContent.startsWith('In-context learning score'));
    const caption = fig.querySelector('figcaption.cs-uplot-caption');
    const out = { band: fig.dataset.band ?? null, caption: caption && !caption.hidden ? caption.textContent : null, label: fig.querySelector('[role="img"]').getAttribute('aria-label') };
    const chart = fig.csChart;
    const u = chart.u;
    if (!chart.band) return out;
    // The band's colour, as the chart resolves --cs-line-4 (the ICL curve's).
    const probe = document.createElement('span');
    probe.style.color = getComputedStyle(fig).getPropertyValue('--cs-line-4').trim();
    document.body.append(probe);
    const rgb = getComputedStyle(probe).color.match(/\d+/g).map(Number);
    probe.remove();
    const canvas = fig.querySelector('canvas');
    const ctx = canvas.getContext('2d');
    // Inside the band at every record: pixels between y + 0.5 se and y + 0.9 se (clear of the line)
    // in the band's colour, translucent.
    let inside = 0;
    let tinted = 0;
    const xs = u.data[0];
    const ys = u.data[1];
    for (let i = 0; i < xs.length; i++) {
      const x = Math.round(u.valToPos(xs[i], 'x', true));
      const y0 = Math.round(u.valToPos(ys[i] + 0.9 * chart.band[i], 'y', true));
      const y1 = Math.round(u.valToPos(ys[i] + 0.5 * chart.band[i], 'y', true));
      for (let dx = -2; dx <= 2; dx++) {
        const col = Math.min(Math.max(x + dx, u.bbox.left + 1), u.bbox.left + u.bbox.width - 2);
        for (let y = y0; y <= y1; y++) {
          const [r, g, b, a] = ctx.getImageData(col, y, 1, 1).data;
          inside++;
          if (a > 20 && a < 140 && Math.abs(r - rgb[0]) < 40 && Math.abs(g - rgb[1]) < 40 && Math.abs(b - rgb[2]) < 40) tinted++;
        }
      }
    }
    return { ...out, inside, tinted, se: chart.band };
  });
}

test('(b) the ICL chart shades ± 1 standard error from the metrics file and says over how many windows', async () => {
  const metrics = JSON.parse(readFileSync(metricsFile, 'utf8'));
  assert.equal(metrics.icl_indices.windows, 8);
  assert.ok(metrics.records.every((r) => Number.isFinite(r.icl_se) && r.icl_se > 0), 'every record has icl_se');
  const { context, page, problems } = await open('/__training.html?model=bpe-tiny');
  try {
    await page.waitForSelector('cs-training[data-charts]', { timeout: 60_000 });
    await page.waitForFunction(() => document.querySelectorAll('cs-training .cs-grid2 figure.cs-uplot .uplot canvas').length >= 3, null, { timeout: 30_000 });
    await page.waitForFunction(() => document.querySelector('cs-training figure.cs-uplot[data-band]'));
    const c = await iclChart(page);
    assert.equal(c.band, String(metrics.records.length), 'the band is drawn over every record');
    assert.deepEqual(c.se, metrics.records.map((r) => r.icl_se), 'the band\'s widths are the file\'s icl_se');
    assert.equal(c.caption, 'shaded: ± 1 standard error over 8 held-out windows');
    assert.match(c.label, /shaded: ± 1 standard error over 8 held-out windows/, 'the summary says so too');
    await (await page.$('cs-training .cs-grid2')).screenshot({ path: path.join(artifacts, 'subword-icl-band.png') });
    assert.ok(c.tinted > 0.6 * c.inside, `the band is on the canvas: ${c.tinted} of ${c.inside} pixels inside it in its colour`);
    // Only the ICL chart has a band.
    assert.equal(await page.$$eval('cs-training figure.cs-uplot[data-band]', (f) => f.length), 1);

    const download = page.waitForEvent('download');
    await page.click('cs-training button:text-is("Download the records (CSV)")');
    const csv = readFileSync(await (await download).path(), 'utf8').trim().split(/\r?\n/);
    const head = csv[0].split(',');
    assert.ok(head.includes('icl_se'), `the CSV has icl_se: ${csv[0]}`);
    const col = head.indexOf('icl_se');
    csv.slice(1).forEach((line, i) => assert.ok(Math.abs(Number(line.split(',')[col]) - metrics.records[i].icl_se) < 1e-12, `row ${i}: ${line}`));
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('(b) without icl_se (a metrics file from before the trainer recorded it) there is no band and no such caption', async () => {
  const { context, page, problems } = await open('/__training.html?model=bpe-nose');
  try {
    await page.waitForSelector('cs-training[data-charts]', { timeout: 60_000 });
    await page.waitForFunction(() => document.querySelectorAll('cs-training .cs-grid2 figure.cs-uplot .uplot canvas').length >= 3, null, { timeout: 30_000 });
    const c = await iclChart(page);
    assert.equal(c.band, null, 'no band');
    assert.equal(c.caption, null, 'no caption');
    assert.doesNotMatch(await page.textContent('cs-training'), /standard error/);
    assert.doesNotMatch(c.label, /standard error/);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});
