// The line charts of the Training view (web/parts/line-chart.js: uPlot, vendored into
// build/site/vendor by scripts/build.sh), on a standalone page holding only <cs-training> and
// the page's stylesheets (not uPlot's: the view adds it), served from the built site with the
// page's content security policy as a header, in Debian's Chromium. Checks that the charts are
// uPlot canvases with something drawn on them, with their legends and one-line summaries; that
// char-2l's phase change is a dashed vertical line on each of them; that they follow their
// container's width and the colour scheme; and that the live chart of "Train it yourself" gets
// new points on the same canvas while a run goes on. No console errors or CSP violations.
// Screenshots go to test-artifacts/charts-*.png. Needs `npm run build`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, startCspProxy } from './chromium.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const artifacts = path.join(root, 'test-artifacts');
const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:";

const page = (model) => `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>cs-training</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/style.css"><link rel="stylesheet" href="/views/views.css">
<script type="module" src="/views/training.js"></script></head>
<body><main><cs-training model="${model.replace(/[^\w.-]/g, '')}"></cs-training></main></body></html>`;

let server;
let browser;

before(async () => {
  assert.ok(existsSync(path.join(site, 'parts', 'line-chart.js')), `${site}/parts/line-chart.js is missing: run \`npm run build\` first`);
  assert.ok(existsSync(path.join(site, 'vendor', 'uPlot.mjs')), `${site}/vendor/uPlot.mjs is missing: run \`npm ci\` and \`npm run build\``);
  mkdirSync(artifacts, { recursive: true });
  server = await startCspProxy(site, CSP, (req, res, u) => {
    if (u.pathname !== '/__training.html') return false;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP });
    res.end(page(u.searchParams.get('model') ?? 'char-2l'));
    return true;
  });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function openTraining(model, { width = 1280, height = 720 } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, colorScheme: 'light' });
  const p = await context.newPage();
  const problems = [];
  p.on('console', (msg) => { if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`); });
  p.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  p.on('worker', (w) => w.on('console', (msg) => { if (msg.type() === 'error') problems.push(`worker console error: ${msg.text()}`); }));
  await p.addInitScript(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  await p.goto(`${server.origin}/__training.html?model=${model}`);
  const check = async () => {
    assert.deepEqual(await p.evaluate(() => window.__violations), [], 'no CSP violations');
    assert.deepEqual(problems, [], 'no console errors');
  };
  return { context, page: p, check };
}

test('charts: the Training view draws char-2l\'s curves as uPlot canvases, the phase change marked', async (t) => {
  const metricsFile = path.join(site, 'models', 'char-2l.metrics.json');
  if (!existsSync(metricsFile)) {
    t.skip('models/char-2l.metrics.json is not in the site (the model zoo is not trained)');
    return;
  }
  const records = JSON.parse(readFileSync(metricsFile, 'utf8')).records;
  const { context, page: p, check } = await openTraining('char-2l');
  try {
    await p.waitForSelector('cs-training[data-charts]', { timeout: 60_000 });
    await p.waitForFunction(() => document.querySelectorAll('cs-training .cs-grid2 figure.cs-uplot .uplot canvas').length >= 3, null, { timeout: 30_000 });
    const phase = await p.$eval('cs-training', (v) => v.dataset.phaseChange);
    assert.ok(+phase > 0, `char-2l has a phase change (${phase})`);
    // The view added uPlot's stylesheet (the page did not link it), from the site, not inline.
    const links = await p.$$eval('link[rel="stylesheet"]', (ls) => ls.map((l) => new URL(l.href).pathname));
    assert.ok(links.includes('/vendor/uPlot.min.css'), `uPlot's stylesheet is linked: ${links}`);
    assert.equal(await p.$$eval('style', (s) => s.length), 0, 'no inline <style>');

    const charts = await p.$$eval('cs-training .cs-grid2 figure.cs-uplot', (figs) => figs.map((f) => {
      const bad = getComputedStyle(f).getPropertyValue('--cs-bad').trim();
      const probe = document.createElement('span');
      probe.style.color = bad;
      document.body.append(probe);
      const markerColor = getComputedStyle(probe).color;
      probe.remove();
      return {
        title: f.querySelector('.cs-uplot-title')?.textContent ?? '',
        label: f.querySelector('[role="img"]')?.getAttribute('aria-label') ?? '',
        points: +f.dataset.points,
        marker: f.dataset.marker,
        legend: [...f.querySelectorAll('.u-legend .u-label')].map((e) => e.textContent),
        markerColor,
        svg: f.querySelectorAll('svg').length,
      };
    }));
    assert.equal(charts.length, 3, 'the loss, ICL and prefix-matching charts');
    const measured = await measure(p, charts.map((c) => c.markerColor));
    charts.forEach((c, i) => {
      const m = measured[i];
      t.diagnostic(`${c.title}: ${m.width}x${m.height} canvas, ${m.ink} of ${m.total} pixels drawn, ${m.markerPixels} marker pixels; legend ${c.legend.join(' | ')}`);
      assert.equal(c.svg, 0, `${c.title}: not an SVG chart`);
      assert.ok(m.ink > 0.02 * m.total, `${c.title}: the canvas is drawn on (${m.ink} of ${m.total} pixels)`);
      assert.equal(c.points, records.length, `${c.title}: one point per record`);
      assert.ok(c.label.startsWith(c.title) && c.label.length > c.title.length + 10, `${c.title}: a one-line summary as aria-label (${c.label})`);
      assert.match(c.label, new RegExp(`phase change \\(step ${phase}\\)`));
      assert.equal(c.marker, phase, `${c.title}: the phase change is drawn at step ${phase}`);
      assert.ok(m.markerPixels >= 20, `${c.title}: a dashed vertical line in --cs-bad at the phase change (${m.markerPixels} pixels)`);
      assert.ok(c.legend.includes(`phase change (step ${phase})`), `${c.title}: the phase change is in the legend`);
      assert.equal(c.legend[0], 'training step', 'the legend starts with the step');
    });
    assert.deepEqual(charts[0].legend.slice(1, 4), ['train loss', 'validation loss', 'loss on repeated tokens']);
    assert.deepEqual(charts[2].legend.slice(1, 9), ['L0H0', 'L0H1', 'L0H2', 'L0H3', 'L1H0', 'L1H1', 'L1H2', 'L1H3']);

    // Hovering shows the values at that step in the legend.
    const over = await p.$('cs-training .cs-grid2 figure.cs-uplot .u-over');
    const box = await over.boundingBox();
    const before = await p.$eval('cs-training .cs-grid2 figure.cs-uplot .u-legend .u-value', (e) => e.textContent);
    await p.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2);
    await p.waitForFunction((b) => document.querySelector('cs-training .cs-grid2 figure.cs-uplot .u-legend .u-value').textContent !== b, before);
    const hovered = await p.$eval('cs-training .cs-grid2 figure.cs-uplot .u-legend .u-value', (e) => e.textContent);
    t.diagnostic(`legend step: ${before} (last), ${hovered} under the cursor`);
    assert.ok(+hovered < +before, 'the legend follows the cursor');
    await p.mouse.move(0, 0);
    await p.screenshot({ path: path.join(artifacts, 'charts-training-1280.png'), fullPage: true });

    // Dark mode: the charts are redrawn in the page's dark colours.
    const light = measured.map((m) => m.hash);
    await p.emulateMedia({ colorScheme: 'dark' });
    let dark = light;
    for (let i = 0; i < 50 && dark.some((h, k) => h === light[k]); i++) {
      await p.waitForTimeout(100);
      dark = (await measure(p, [])).map((m) => m.hash);
    }
    assert.ok(dark.every((h, i) => h !== light[i]), 'the charts are redrawn when the colour scheme changes');
    await p.screenshot({ path: path.join(artifacts, 'charts-training-dark.png'), fullPage: true });
    await p.emulateMedia({ colorScheme: 'light' });

    // Phone width: the charts shrink to their column, with no horizontal overflow.
    await p.setViewportSize({ width: 375, height: 720 });
    await p.waitForFunction(() => [...document.querySelectorAll('cs-training .cs-grid2 figure.cs-uplot')]
      .every((f) => f.querySelector('.uplot canvas').getBoundingClientRect().width <= f.getBoundingClientRect().width + 1));
    const narrow = await p.$$eval('cs-training .cs-grid2 figure.cs-uplot', (figs) => figs.map((f) => ({
      canvas: f.querySelector('.uplot canvas').getBoundingClientRect().width,
      right: Math.max(...[f, ...f.querySelectorAll('*')].map((e) => e.getBoundingClientRect().right)),
    })));
    t.diagnostic(`at 375 px: canvases ${narrow.map((n) => Math.round(n.canvas)).join(', ')} px wide`);
    for (const n of narrow) {
      assert.ok(n.canvas > 200, `a readable chart (${n.canvas} px)`);
      assert.ok(n.right <= 375, `the chart and its legend fit on the screen (right edge ${n.right})`);
    }
    await p.screenshot({ path: path.join(artifacts, 'charts-training-375.png'), fullPage: true });
    await check();
  } finally {
    await context.close();
  }
});

test('charts: the live chart of "Train it yourself" gets new points on the same canvas', async (t) => {
  const { context, page: p, check } = await openTraining('char-2l');
  try {
    await p.waitForSelector('cs-training[data-ready="true"]', { timeout: 60_000 });
    // The induction recipe, cut to 300 steps (its phase change comes near step 240).
    await p.selectOption('cs-training select[id$="-recipe"]', 'induction-2l');
    await p.fill('cs-training input[id$="-steps"]', '300');
    await p.click('cs-training button:text-is("Start")');
    const lossChart = 'cs-training .cs-train-chart figure.cs-uplot';
    await p.waitForFunction((sel) => +document.querySelector(sel)?.dataset.points >= 3 && document.querySelector(`${sel} .uplot canvas`), lossChart, { timeout: 60_000 });
    const first = await p.$eval(lossChart, (f) => {
      f.querySelector('.uplot canvas').dataset.testMark = 'first';   // the same canvas later?
      return { points: +f.dataset.points, step: +document.querySelector('cs-training').dataset.trainStep };
    });
    await p.waitForFunction(([sel, n]) => +document.querySelector(sel).dataset.points >= n + 5, [lossChart, first.points], { timeout: 60_000 });
    const later = await p.$eval(lossChart, (f) => ({ points: +f.dataset.points, mark: f.querySelector('.uplot canvas').dataset.testMark }));
    t.diagnostic(`live loss chart: ${first.points} points at step ${first.step}, then ${later.points}`);
    assert.ok(later.points > first.points, 'more points as the run goes on');
    assert.equal(later.mark, 'first', 'updated in place (setData), not re-created');
    await p.waitForSelector('cs-training[data-train-state="stopped"]', { timeout: 120_000 });
    await p.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const end = await p.$$eval('cs-training .cs-train-chart figure.cs-uplot', (figs) => figs.map((f) => ({
      title: f.querySelector('.cs-uplot-title').textContent, points: +f.dataset.points, marker: f.dataset.marker ?? null,
      mark: f.querySelector('.uplot canvas').dataset.testMark ?? null, label: f.querySelector('[role="img"]').getAttribute('aria-label'),
    })));
    const phase = await p.$eval('cs-training', (v) => v.dataset.phaseChangeStep ?? null);
    t.diagnostic(`after the run: ${end.map((c) => `${c.title}: ${c.points} points${c.marker ? `, marker at ${c.marker}` : ''}`).join('; ')}; phase change ${phase}`);
    assert.equal(end.length, 2, 'the loss chart and the prefix-matching chart');
    assert.equal(end[0].mark, 'first', 'the same loss chart to the end of the run');
    assert.equal(end[0].points, 300, 'a point per step of the 300');
    assert.match(end[1].title, /^Prefix-matching/);
    if (phase) {
      assert.equal(end[1].marker, phase, 'the live prefix-matching chart marks the phase change');
      assert.match(end[1].label, /phase change \(step \d+/);
    }
    await p.locator('cs-training .cs-train-chart').scrollIntoViewIfNeeded();
    await p.screenshot({ path: path.join(artifacts, 'charts-live.png') });
    await check();
  } finally {
    await context.close();
  }
});

// What the Training view's chart canvases show, in the page: `ink`, the pixels drawn (alpha > 0)
// out of `total`; `hash`, a checksum of the pixels; `markerPixels`, the pixels of colour
// colors[k] (an rgb() string) within a pixel of the column where chart k drew its marker.
async function measure(p, colors) {
  return p.$$eval('cs-training .cs-grid2 figure.cs-uplot', (figs, colors) => figs.map((figure, k) => {
    const markerColor = colors[k];
    const canvas = figure.querySelector('.uplot canvas');
    const { width, height } = canvas;
    const d = canvas.getContext('2d').getImageData(0, 0, width, height).data;
    let ink = 0;
    let hash = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] > 0) ink++;
      hash = (hash * 31 + d[i] + 7 * d[i + 1] + 13 * d[i + 2] + 17 * d[i + 3]) >>> 0;
    }
    let markerPixels = 0;
    const px = Number(figure.dataset.markerPx);
    if (markerColor && Number.isFinite(px)) {
      const [r, g, b] = markerColor.match(/\d+/g).map(Number);
      for (let y = 0; y < height; y++) {
        for (let x = Math.max(0, px - 1); x <= Math.min(width - 1, px + 1); x++) {
          const i = 4 * (y * width + x);
          if (d[i + 3] > 128 && Math.abs(d[i] - r) < 40 && Math.abs(d[i + 1] - g) < 40 && Math.abs(d[i + 2] - b) < 40) markerPixels++;
        }
      }
    }
    return { width, height, ink, total: width * height, hash, markerPixels };
  }), colors);
}
