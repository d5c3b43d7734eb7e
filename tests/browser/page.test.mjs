// The built page (build/site), served on localhost and driven in Debian's Chromium through
// playwright-core as a person would use it: the shipped model loads, typed text comes back as
// tokens coloured by loss, too-long text is cut with a note, a corrupt file gives a readable
// error and the page keeps working. No console errors are allowed (CSP violations show there).
// Screenshots go to test-artifacts/. CIRCUITSCOPE_SITE=dir serves another folder (default
// build/site); CHROMIUM=path picks another browser binary.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from '../../scripts/serve.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const artifacts = path.join(root, 'test-artifacts');
const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const LOAD_TIMEOUT = 60_000;

let server;
let browser;

function shippedModels() {
  const index = path.join(site, 'models', 'index.json');
  if (!existsSync(index)) return [];
  try {
    const list = JSON.parse(readFileSync(index, 'utf8'));
    return Array.isArray(list) ? list.filter((m) => m && typeof m.file === 'string') : [];
  } catch {
    return [];
  }
}

// A page with console and page errors collected.
async function openPage(options = {}) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, ...options });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('requestfailed', (req) => problems.push(`request failed: ${req.url()} ${req.failure()?.errorText ?? ''}`));
  await page.goto(server.url);
  return { context, page, problems };
}

async function waitForModel(page) {
  await page.waitForSelector('body[data-model-loaded="true"]', { timeout: LOAD_TIMEOUT });
}

// Text the loaded model can tokenize: words from its vocabulary for a word-level model.
async function sampleText(page, n) {
  const kind = await page.getAttribute('body', 'data-tokenizer');
  if (kind !== 'word') return 'The cat sat on the mat. The cat sat on the mat.'.slice(0, n);
  const placeholder = await page.getAttribute('#text-input', 'placeholder');
  const words = (placeholder.split('e.g. ')[1] ?? '').split(' ').filter(Boolean);
  return words.slice(0, Math.max(1, Math.min(words.length, n))).join(' ');
}

before(async () => {
  assert.ok(existsSync(path.join(site, 'index.html')), `${site}/index.html is missing: run \`npm run build\` first`);
  assert.ok(existsSync(executablePath), `${executablePath} is missing: apt-get install chromium`);
  mkdirSync(artifacts, { recursive: true });
  server = await startServer({ root: site, port: 0 });
  browser = await chromium.launch({
    executablePath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test('the server sends the module with the right types and refuses to leave the site', async () => {
  const get = (p) => fetch(new URL(p, server.url));
  const wasm = await get('wasm/circuitscope.wasm');
  assert.equal(wasm.status, 200);
  assert.equal(wasm.headers.get('content-type'), 'application/wasm');
  assert.equal(wasm.headers.get('cache-control'), 'no-cache');
  const mjs = await get('wasm/circuitscope.mjs');
  assert.match(mjs.headers.get('content-type'), /^text\/javascript/);
  assert.equal((await get('no-such-file.txt')).status, 404);
  // Raw request paths (fetch would normalise them): build/site/../../package.json exists.
  const raw = (p) => new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: server.port, path: p }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).on('error', reject);
  });
  assert.ok(existsSync(path.join(site, '..', '..', 'package.json')) || process.env.CIRCUITSCOPE_SITE);
  for (const p of ['/../../package.json', '/..%2f..%2fpackage.json', '/%2e%2e/%2e%2e/package.json', '/wasm/../../../package.json']) {
    assert.equal(await raw(p), 404, `GET ${p}`);
  }
});

test('the page loads a model, colours typed text by loss and reports errors in the page', async () => {
  const models = shippedModels();
  assert.ok(models.length > 0, `${site}/models/index.json lists no model: nothing for the page to load`);
  const { context, page, problems } = await openPage();
  try {
    await waitForModel(page);
    assert.match(await page.textContent('#model-status'), /^Loaded /);

    // Type, as a person would, and wait for the coloured tokens.
    const text = await sampleText(page, 40);
    await page.fill('#text-input', '');
    await page.click('#text-input');
    await page.keyboard.type(text, { delay: 5 });
    await page.waitForFunction(
      (t) => [...document.querySelectorAll('#tokens .tok')].map((e) => e.textContent).join('').replace(/\s+/g, '') ===
        t.replace(/\s+/g, ''),
      text, { timeout: 10_000 });

    const tokens = await page.$$eval('#tokens .tok', (els) => els.map((e) => ({
      text: e.textContent, loss: e.dataset.loss, title: e.title, cls: e.className,
    })));
    assert.ok(tokens.length >= 2, 'at least two tokens');
    const withLoss = tokens.filter((t) => t.loss !== undefined);
    assert.ok(withLoss.length >= tokens.length - 1, 'every token but possibly the first has a loss');
    for (const t of withLoss) {
      assert.ok(Number.isFinite(Number(t.loss)) && Number(t.loss) >= 0, `loss of ${JSON.stringify(t.text)}: ${t.loss}`);
      assert.match(t.title, /loss \d+\.\d+ nats/);
      assert.match(t.cls, /\bloss-[0-6]\b/);
    }
    const mean = withLoss.reduce((s, t) => s + Number(t.loss), 0) / withLoss.length;
    const shown = await page.textContent('#mean-loss');
    assert.ok(Math.abs(parseFloat(shown) - mean) < 2e-3, `mean loss shown "${shown}", tokens average ${mean}`);
    assert.equal(await page.locator('#legend .swatch').count(), 7);
    assert.ok(await page.isHidden('#error'), `no error shown, got: ${await page.textContent('#error')}`);
    await page.screenshot({ path: path.join(artifacts, 'page.png'), fullPage: true });

    // Text longer than the context is cut, with a note.
    const nCtx = Number(await page.getAttribute('body', 'data-n-ctx'));
    assert.ok(nCtx > 0);
    const kind = await page.getAttribute('body', 'data-tokenizer');
    if (kind !== 'word') {
      await page.fill('#text-input', 'abcdefghij'.repeat(Math.ceil((nCtx + 20) / 10)));
      await page.waitForSelector('#note:not([hidden])', { timeout: 10_000 });
      assert.match(await page.textContent('#note'), /longer than this model's context/);
      const n = await page.locator('#tokens .tok').count();
      assert.equal(n, nCtx - 1, 'the last n_ctx - 1 characters are analysed');
      await page.fill('#text-input', text);
      await page.waitForSelector('#note', { state: 'hidden', timeout: 10_000 });
    }

    // A corrupt model file: a readable error, and the page still works with the old model.
    const real = readFileSync(path.join(site, 'models', models[0].file));
    await page.setInputFiles('#model-file', {
      name: 'broken.safetensors',
      mimeType: 'application/octet-stream',
      buffer: real.subarray(0, Math.floor(real.length / 2)),
    });
    await page.waitForSelector('#error:not([hidden])', { timeout: 10_000 });
    const message = await page.textContent('#error');
    assert.match(message, /broken\.safetensors/);
    assert.match(message, /model file:/);
    assert.ok(await page.isVisible('#error'));
    await page.screenshot({ path: path.join(artifacts, 'page-error.png'), fullPage: true });

    await page.click('#text-input');
    await page.keyboard.press('End');
    await page.keyboard.type(' ok', { delay: 5 });
    await page.waitForFunction(
      (t) => document.querySelectorAll('#tokens .tok').length > 0 &&
        document.querySelector('#text-input').value.endsWith(t),
      ' ok', { timeout: 10_000 });
    const after = await page.$$eval('#tokens .tok', (els) => els.map((e) => e.textContent).join(''));
    assert.ok(after.replace(/\s+/g, '').length > 0, 'tokens still shown after the failed load');
    assert.match(await page.textContent('#model-status'), /^Loaded /);

    assert.deepEqual(problems, [], 'no console errors, page errors or failed requests');
  } finally {
    await context.close();
  }
});

test('the page renders in dark mode without errors', async () => {
  const models = shippedModels();
  assert.ok(models.length > 0, 'no shipped model');
  const { context, page, problems } = await openPage({ colorScheme: 'dark' });
  try {
    await waitForModel(page);
    await page.fill('#text-input', await sampleText(page, 40));
    await page.waitForSelector('#tokens .tok', { timeout: 10_000 });
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.notEqual(bg, 'rgb(247, 247, 244)', 'dark background in dark mode');
    await page.screenshot({ path: path.join(artifacts, 'page-dark.png'), fullPage: true });
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});
