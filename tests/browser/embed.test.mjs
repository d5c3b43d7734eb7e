// One-figure embeds from another origin. The site (build/site) is served by the bundled server
// (scripts/serve.mjs, with its CORS headers) on one port; a second server on another port (another
// origin) serves a host page with no stylesheet of ours, holding (a) the <iframe> the app's own
// Embed button of a panel copies, with the host line it gives (embed.js), and (b) a <cs-panel>
// custom element loaded from the site. Both must render styled, the iframe must take its
// content's height, and both must answer a hover on a token. Then every panel the store knows
// (PANELS) is embedded alone, one after another in one host page: each settles without an error
// and its iframe takes its content's height. Screenshots go to test-artifacts/embed-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { launchChromium } from './chromium.mjs';
import { startServer } from '../../scripts/serve.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const artifacts = path.join(root, 'test-artifacts');
const { PANELS } = await import(pathToFileURL(path.join(site, 'store.js')).href);

let server;   // the site
let host;     // the host page's origin
let hostBody = '';
let browser;

before(async () => {
  assert.ok(existsSync(path.join(site, 'embed.js')), `${site}/embed.js is missing: copy web/ into the site`);
  mkdirSync(artifacts, { recursive: true });
  server = await startServer({ root: site, port: 0 });
  host = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-cache' });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>A course page</title>
<link rel="icon" href="data:,"></head><body><h1>A course page on another origin</h1>${hostBody}</body></html>`);
  });
  await new Promise((resolve) => host.listen(0, '127.0.0.1', resolve));
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
  host?.closeAllConnections?.();
  await new Promise((resolve) => host?.close(() => resolve()));
});

const hostUrl = () => `http://127.0.0.1:${host.address().port}/`;

/** A page with its errors (the page's, its frames' console errors) collected. */
async function openPage(url) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 1400 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write']).catch(() => {});
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  await page.goto(url);
  return { context, page, problems };
}

/** The iframe element and its frame once its embedded panel has rendered. */
async function embeddedFrame(page, selector) {
  const handle = await page.waitForSelector(selector);
  const frame = await handle.contentFrame();
  await frame.waitForSelector('cs-panel[data-ready="true"], #app-error:not([hidden]), .cs-view-error', { timeout: 60_000 });
  return { handle, frame };
}

/** Waits until the iframe is as tall as its content (embed.js set it from the posted height). */
async function followsContent(page, handle, frame) {
  let sizes;
  for (let i = 0; i < 100; i++) {
    const content = await frame.evaluate(() => Math.ceil(document.body.getBoundingClientRect().height));
    const box = await handle.evaluate((f) => f.getBoundingClientRect().height);
    sizes = { content, box };
    if (Math.abs(content - box) <= 2) return sizes;
    await page.waitForTimeout(100);
  }
  assert.fail(`the iframe did not take its content's height: ${JSON.stringify(sizes)}`);
}

// Hovers a token until the view marks it (class "focused"): a hover that lands while the panel is
// still laying out (the page's height changes as the embedded panels settle, so what is under
// the mouse moves) is tried again, up to 5 times. Returns whether it was marked.
// Hovers `tok` until the hover's details show the core's top-5 next tokens in `list` (a selector
// in the same document). Under load the embed can still be sizing itself to its content when the
// mouse arrives, so the mouse can end up off the token once the details open; hover again then.
async function hoverUntilTop5(tok, list) {
  for (let i = 0; i < 5; i++) {
    if (!(await hoverUntilFocused(tok))) continue;
    const shown = await tok.evaluate((el, sel) => new Promise((resolve) => {
      const t0 = performance.now();
      const check = () => (el.ownerDocument.querySelectorAll(sel).length === 5 ? resolve(true) : performance.now() - t0 > 3000 ? resolve(false) : requestAnimationFrame(check));
      check();
    }), list);
    if (shown) return true;
  }
  return false;
}

async function hoverUntilFocused(tok) {
  for (let i = 0; i < 5; i++) {
    await tok.hover();
    const marked = await tok.evaluate((el) => new Promise((resolve) => {
      const t0 = performance.now();
      const check = () => (el.classList.contains('focused') ? resolve(true) : performance.now() - t0 > 1000 ? resolve(false) : requestAnimationFrame(check));
      check();
    }));
    if (marked) return true;
  }
  return false;
}

test('a panel\'s Embed button and a custom element both render, styled, on another origin, size to their content and answer a hover', async (t) => {
  // The embed code, from the app's own button on the token strip.
  const app = await openPage(`${server.url}#v=2&view=induction&model=char-2l`);
  let snippet;
  let withControls;
  try {
    await app.page.waitForSelector('cs-induction[data-ready="true"]', { timeout: 60_000 });
    await app.page.click('cs-induction section[data-panel="induction-tokens"] .cs-panel-embed');
    await app.page.waitForSelector('#copy-bare-field:not([hidden])');
    withControls = await app.page.inputValue('#copy-text');
    await app.page.check('#copy-bare');
    await app.page.waitForFunction((prev) => document.querySelector('#copy-text').value !== prev, withControls);
    snippet = await app.page.inputValue('#copy-text');
    const clip = await app.page.evaluate(() => navigator.clipboard.readText().catch(() => null));
    if (clip !== null) assert.equal(clip, snippet, 'the clipboard holds the code the box shows');
    // The view's Copy embed code still gives the whole view.
    await app.page.uncheck('#copy-bare');
    await app.page.click('#copy-embed');
    assert.match(await app.page.inputValue('#copy-text'), /^<iframe src="[^"]*#v=2&amp;[^"]*embed=1[^"]*" title="circuitscope: Induction view"/);
    assert.doesNotMatch(await app.page.inputValue('#copy-text'), /panel=/);
    assert.deepEqual(app.problems, []);
  } finally {
    await app.context.close();
  }
  t.diagnostic(snippet);
  const src = /^<iframe src="([^"]+)"/.exec(snippet)[1].replace(/&amp;/g, '&');
  assert.equal(new URL(src).origin, new URL(server.url).origin);
  assert.match(src, /[#&]panel=induction-tokens(&|$)/);
  assert.match(src, /[#&]embed=1(&|$)/);
  assert.match(src, /[#&]hide=controls%2Cheader(&|$)|[#&]hide=controls,header(&|$)/);
  assert.match(snippet, / height="480" /, 'the iframe starts 480 px tall');
  assert.match(withControls, /panel=induction-tokens/);
  assert.doesNotMatch(withControls, /hide=/);
  assert.match(snippet, new RegExp(`<script src="${server.url}embed\\.js" async></script>$`), 'the code carries the host line');

  // The host page: the iframe and the custom element, and no stylesheet.
  hostBody = `<p>An embedded figure:</p>${snippet}
<p>A custom element:</p><cs-panel name="induction-tokens" model="char-2l"></cs-panel>
<p>Another, of another model:</p><cs-panel id="second" name="induction-tokens" model="char-1l"></cs-panel>
<script type="module" src="${server.url}panels/panel.js"></script>`;
  const { context, page, problems } = await openPage(hostUrl());
  try {
    assert.notEqual(new URL(page.url()).origin, new URL(server.url).origin, 'the host page is another origin');
    // (a) the iframe: that panel alone, without controls, as tall as its content.
    const { handle, frame } = await embeddedFrame(page, 'iframe');
    const sizes = await followsContent(page, handle, frame);
    t.diagnostic(`iframe: content ${sizes.content} px, iframe ${sizes.box} px (480 at first)`);
    assert.notEqual(sizes.box, 480, 'the iframe changed its height');
    const inside = await frame.evaluate(() => ({
      panels: [...document.querySelectorAll('section.cs-panel')].map((s) => s.dataset.panel),
      views: document.querySelectorAll('cs-induction, cs-ioi, cs-circuits, cs-training, cs-report').length,
      header: !!document.querySelector('#app-header')?.checkVisibility(),
      tools: !!document.querySelector('.cs-panel-tools')?.checkVisibility(),
      tok: getComputedStyle(document.querySelector('.tok')).display,
    }));
    assert.deepEqual(inside, { panels: ['induction-tokens'], views: 0, header: false, tools: false, tok: 'inline-block' });
    assert.ok(await hoverUntilTop5(frame.locator('.tok[data-pos="20"]'), '.ind-top li'), 'the embedded panel answers a hover with the top 5 next tokens');
    // (b) the custom element (under the iframe, which has settled), styled by the stylesheet it
    // linked itself.
    const element = page.locator('body > cs-panel:not(#second)');
    await page.waitForSelector('body > cs-panel:not(#second)[data-ready="true"]', { timeout: 60_000 });
    await page.waitForSelector('body > cs-panel#second[data-ready="true"]', { timeout: 60_000 });
    // Each element has its own state: two panels asking for two models show two models.
    const models = await page.evaluate(() => [...document.querySelectorAll('body > cs-panel')].map((e) => /** @type {any} */ (e).state.model));
    assert.deepEqual(models, ['char-2l', 'char-1l']);
    const style = await page.evaluate(() => {
      const tok = document.querySelector('body > cs-panel .tok');
      const section = document.querySelector('body > cs-panel section.cs-panel');
      return {
        links: [...document.querySelectorAll('link[rel="stylesheet"]')].map((l) => l.getAttribute('href')),
        tok: getComputedStyle(tok).display,
        radius: getComputedStyle(section).borderTopLeftRadius,
        tokens: getComputedStyle(document.querySelector('body > cs-panel .tokens')).fontFamily,
        height: section.getBoundingClientRect().height,
      };
    });
    t.diagnostic(`custom element: ${JSON.stringify(style)}`);
    assert.deepEqual(style.links, [`${server.url}views/views.css`], 'the element linked its own stylesheet, once');
    assert.equal(style.tok, 'inline-block', 'tokens are styled by the site\'s stylesheet');
    assert.equal(style.radius, '6px');
    assert.match(style.tokens, /monospace/);
    assert.ok(style.height > 100, 'the panel has content');
    assert.ok(await hoverUntilTop5(element.locator('.tok[data-pos="20"]'), 'body > cs-panel:not(#second) .ind-top li'), 'the custom element answers a hover with the top 5 next tokens');

    // The element's own Embed button gives the same kind of code, pointing at the site.
    // (The mouse leaves the token first: at the foot of the page, the details the hover shows
    // change the page's height, its scroll, and so what is under the mouse.)
    await page.mouse.move(0, 0);
    await element.locator('.cs-panel-embed').click();
    const said = await element.locator('.cs-view-status').textContent();
    const copied = /copied/.test(said) ? await page.evaluate(() => navigator.clipboard.readText()) : said;
    assert.match(copied, new RegExp(`<iframe src="${server.url}#v=2&amp;[^"]*embed=1&amp;[^"]*panel=induction-tokens`));
    assert.match(copied, /embed\.js" async><\/script>$/);
    await page.screenshot({ path: path.join(artifacts, 'embed-host.png'), fullPage: true });
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('every panel embeds alone from another origin: each settles without an error and takes its content\'s height', async (t) => {
  hostBody = `<div id="slot"></div><script src="${server.url}embed.js" async></script>`;
  const { context, page, problems } = await openPage(hostUrl());
  try {
    await page.waitForFunction(() => window.__circuitscopeEmbed === true);
    for (const panel of PANELS) {
      const view = panel.split('-')[0];
      const src = `${server.url}#v=2&view=${view}&panel=${panel}&embed=1&hide=controls,header`;
      const started = Date.now();
      await page.evaluate((src) => {
        const f = document.createElement('iframe');
        f.src = src;
        f.title = 'circuitscope';
        f.width = '100%';
        f.height = '480';
        f.style.border = '0';
        document.getElementById('slot').replaceChildren(f);
      }, src);
      const { handle, frame } = await embeddedFrame(page, '#slot iframe');
      const state = await frame.evaluate(() => ({
        error: document.querySelector('#app-error')?.textContent || document.querySelector('.cs-view-error')?.textContent || '',
        panels: [...document.querySelectorAll('section.cs-panel')].map((s) => s.dataset.panel),
        title: document.querySelector('section.cs-panel h2')?.textContent ?? '',
      }));
      assert.equal(state.error, '', `${panel}: no error in the embed`);
      assert.deepEqual(state.panels, [panel], `${panel}: the panel alone`);
      const sizes = await followsContent(page, handle, frame);
      t.diagnostic(`${panel}: "${state.title}", ${sizes.box} px, ${Date.now() - started} ms`);
      assert.deepEqual(problems, [], `${panel}: no console or page error`);
    }
  } finally {
    await context.close();
  }
});
