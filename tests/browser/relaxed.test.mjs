// Which WebAssembly module the page loads, in Debian's Chromium (which ships relaxed SIMD): the
// page and the training worker take wasm/circuitscope-relaxed.wasm and never fetch the SIMD128
// one, <html data-wasm> says so, and it all runs under the page's content security policy (sent
// as a header too, as in worker.test.mjs) with no console error. In the same page, both modules
// (init({simd}) loads either) give the same logits within float32 rounding, so the SIMD128
// module that other browsers get works under the same policy.
// Needs `npm run build` (build/site). CIRCUITSCOPE_SITE=dir and CHROMIUM=path as in page.test.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, startCspProxy } from './chromium.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const CSP = (() => {
  const html = readFileSync(path.join(root, 'web', 'index.html'), 'utf8');
  const m = html.match(/http-equiv="Content-Security-Policy"\s+content="([^"]+)"/);
  if (!m) throw new Error('web/index.html has no Content-Security-Policy meta tag');
  return m[1].replace(/\s+/g, ' ').trim();
})();
const recipe = (() => {
  const r = JSON.parse(readFileSync(path.join(root, 'models', 'recipes', 'ioi-1l2h.json'), 'utf8'));
  delete r.output;
  return { ...r, steps: 5 };
})();

let server;
let browser;

before(async () => {
  for (const f of ['circuitscope.wasm', 'circuitscope-relaxed.wasm', 'circuitscope-relaxed.mjs']) {
    assert.ok(existsSync(path.join(site, 'wasm', f)), `${site}/wasm/${f} is missing: run \`npm run build\` first`);
  }
  server = await startCspProxy(site, CSP);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test('Chromium loads the relaxed-SIMD module in the page and the worker, under the CSP', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems = [];
  const wasmRequests = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('requestfailed', (req) => problems.push(`request failed: ${req.url()}`));
  context.on('request', (req) => {
    if (/\.wasm$/.test(new URL(req.url()).pathname)) wasmRequests.push(new URL(req.url()).pathname);
  });
  try {
    await page.goto(`${server.origin}/`);
    await page.waitForSelector('body[data-model-loaded="true"]', { timeout: 60_000 });
    await page.waitForSelector('html[data-wasm]', { timeout: 60_000 });
    assert.equal(await page.evaluate(() => document.documentElement.dataset.wasm), 'relaxed');
    const started = await page.evaluate(async (recipe) => {
      const { TrainerClient } = await import('./worker-client.js');
      const client = new TrainerClient({});
      const s = await client.start(recipe, { metricsEvery: 1 });
      await client.done;
      client.terminate();
      return s;
    }, recipe);
    assert.equal(started.simd, 'relaxed', 'the training worker runs the relaxed module');
    assert.deepEqual([...new Set(wasmRequests)], ['/wasm/circuitscope-relaxed.wasm'], 'only the relaxed module is fetched');
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('in the page, the relaxed and SIMD128 modules give the same logits (|diff| <= 1e-5 * max(1, max |logit|))', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  try {
    await page.goto(`${server.origin}/`);
    await page.waitForSelector('body[data-model-loaded="true"]', { timeout: 60_000 });
    const out = await page.evaluate(async () => {
      const { init, hasRelaxedSimd } = await import('./wasm/circuitscope.js');
      const bytes = new Uint8Array(await (await fetch('./models/char-2l.safetensors')).arrayBuffer());
      const results = {};
      for (const simd of ['relaxed', 'simd128']) {
        const cs = await init({ simd });
        const model = cs.load(bytes);
        const ids = model.tokenize('The cat sat on the mat. The cat sat on the mat.').ids;
        results[simd] = { simd: cs.simd, logits: Array.from(model.run(ids).logits.data) };
        model.delete();
      }
      return { has: hasRelaxedSimd(), ...results };
    });
    assert.equal(out.has, true);
    assert.equal(out.relaxed.simd, 'relaxed');
    assert.equal(out.simd128.simd, 'simd128');
    assert.equal(out.relaxed.logits.length, out.simd128.logits.length);
    const scale = Math.max(1, ...out.simd128.logits.map(Math.abs));
    let worst = 0;
    for (let i = 0; i < out.simd128.logits.length; i++) worst = Math.max(worst, Math.abs(out.relaxed.logits[i] - out.simd128.logits[i]));
    assert.ok(worst <= 1e-5 * scale, `largest logit difference ${worst} (scale ${scale})`);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('init() in a page: a .wasm the server sends as application/octet-stream still loads; a missing one rejects with its URL, never hangs', async () => {
  // The module is compiled while its glue is fetched (compileStreaming, which needs
  // application/wasm); another content type is compiled from the bytes instead.
  const wasm = readFileSync(path.join(site, 'wasm', 'circuitscope.wasm'));
  const plain = await startCspProxy(site, CSP, (req, res, url) => {
    if (url.pathname !== '/plain/circuitscope.wasm') return false;
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': wasm.length });
    res.end(wasm);
    return true;
  });
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  try {
    await page.goto(`${plain.origin}/favicon.svg`);
    const out = await page.evaluate(async () => {
      const { init } = await import('/wasm/circuitscope.js');
      const cs = await init({ simd: 'simd128', wasmUrl: '/plain/circuitscope.wasm' });
      const bytes = new Uint8Array(await (await fetch('/models/char-2l.safetensors')).arrayBuffer());
      const model = cs.load(bytes);
      const loss = model.run(model.tokenize('The cat sat on the mat.').ids).loss.data[0];
      model.delete();
      const missing = await Promise.race([
        init({ simd: 'simd128', wasmUrl: '/wasm/no-such-module.wasm' }).then(() => 'resolved', (e) => String(e.message)),
        new Promise((r) => setTimeout(() => r('still waiting after 10 s'), 10_000)),
      ]);
      return { simd: cs.simd, loss, missing };
    });
    assert.equal(out.simd, 'simd128');
    assert.ok(Number.isFinite(out.loss) && out.loss > 0, `loss ${out.loss}`);
    assert.match(out.missing, /no-such-module\.wasm could not be fetched \(HTTP 404\)/);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
    await plain.close();
  }
});
