// The panels' mocks (web/panels/VIEW/mocks/PART.json, web/panels/mock.js): every panel has one;
// each draws in Chromium with no model loaded (<cs-panel name=... mock>: no WebAssembly and no
// model file is fetched, and nothing is logged as an error); and what each panel's query
// returns today, in the state its mock was recorded in, has the mock's shape (its keys and the
// kinds of their values), so a mock cannot drift from its panel. When a query's result changes
// shape, `npm run mocks PANEL` records the mock again. Each mock's drawing is saved as
// test-artifacts/mocks/PANEL.png: every panel of the page at a glance. Needs `npm run build`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { startServer } from '../../scripts/serve.mjs';
import { launchChromium } from './chromium.mjs';
import { root, panelFiles, blankPage, mountPanel, recordPanel } from './mock-record.mjs';

const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const MAX_MOCK_BYTES = 512 * 1024;   // a mock is a small recorded state, not a dataset (char-2l's training run is 341 KB)

let server, browser, origin, PANELS;

before(async () => {
  assert.ok(existsSync(path.join(site, 'panels', 'mock.js')), `${site}/panels/mock.js is missing: run \`npm run build\` first`);
  ({ PANELS } = await import(pathToFileURL(path.join(site, 'store.js')).href));
  server = await startServer({ root: site, port: 0 });
  origin = `http://127.0.0.1:${server.port}`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

const readMock = (name) => JSON.parse(readFileSync(panelFiles(name).mock, 'utf8'));

test('every panel has a mock beside it, recorded from that panel, and small', () => {
  assert.ok(PANELS.length >= 20);
  for (const name of PANELS) {
    const { module, mock } = panelFiles(name);
    assert.ok(existsSync(module), `${name}: ${module} is missing`);
    assert.ok(existsSync(mock), `${name} has no mock: \`npm run mocks ${name}\` records ${path.relative(root, mock)}`);
    const m = readMock(name);
    assert.equal(m.panel, name, `${path.relative(root, mock)} was recorded from ${m.panel}`);
    for (const k of ['attrs', 'state', 'data']) assert.ok(m[k] && typeof m[k] === 'object', `${name}'s mock has no ${k}`);
    assert.ok(statSync(mock).size <= MAX_MOCK_BYTES, `${name}'s mock is ${statSync(mock).size} bytes (at most ${MAX_MOCK_BYTES}): record it in a smaller state`);
  }
});

test('every panel draws its mock with no model loaded', async () => {
  const { page, errors } = await blankPage(browser, origin);
  await page.setViewportSize({ width: 1100, height: 800 });
  const shots = path.join(root, 'test-artifacts', 'mocks');
  mkdirSync(shots, { recursive: true });
  const fetched = [];
  page.on('request', (r) => fetched.push(new URL(r.url()).pathname));
  try {
    for (const name of PANELS) {
      await mountPanel(page, name, { mock: '' }, 20_000);
      const shown = await page.evaluate(() => {
        const el = /** @type {any} */ (document.querySelector('cs-panel'));
        const section = el.querySelector('section.cs-panel');
        return {
          error: el.querySelector('.cs-view-error')?.textContent ?? null,
          heading: section?.querySelector('h2')?.textContent ?? null,
          drawn: section ? section.children.length : 0,
          // what the figure holds: text, canvases, SVG or table cells
          content: section ? (section.textContent.length + section.querySelectorAll('canvas, svg, td').length) : 0,
        };
      });
      assert.equal(shown.error, null, `${name} failed to draw its mock: ${shown.error}`);
      assert.ok(shown.heading, `${name} drew no heading`);
      assert.ok(shown.drawn >= 2 && shown.content > shown.heading.length, `${name} drew nothing under its heading`);
      await page.locator('cs-panel').screenshot({ path: path.join(shots, `${name}.png`) });
    }
    // The module's JS wrapper may load (a panel imports a plain function from it); its WebAssembly
    // and the model files may not.
    const loaded = fetched.filter((p) => /\.wasm$|\.safetensors$|\/models\/(?!index\.json$)/.test(p));
    assert.deepEqual(loaded, [], 'drawing the mocks fetched a module or a model');
    assert.deepEqual(errors, [], 'console errors while drawing the mocks');
  } finally {
    await page.close();
  }
});

test("what each panel's query returns today has its mock's shape", async () => {
  const { page, errors } = await blankPage(browser, origin);
  try {
    const drifted = [];
    for (const name of PANELS) {
      const mock = readMock(name);
      const live = await recordPanel(page, name, mock.attrs);
      const recorded = await page.evaluate(async (data) => {
        const { decodeMock, mockShape } = await import('/panels/mock.js');
        return mockShape(decodeMock(data));
      }, mock.data);
      if (live.shape !== recorded) drifted.push(`${name}: recorded ${recorded.slice(0, 300)}\n  today    ${live.shape.slice(0, 300)}`);
    }
    assert.deepEqual(drifted, [], `mocks whose panel's query now returns another shape (\`npm run mocks NAME\` records them again):\n${drifted.join('\n')}`);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
  }
});

test('a mock round-trips typed arrays and non-finite numbers exactly, and refuses a model handle by its path', async () => {
  const { page } = await blankPage(browser, origin);
  try {
    const r = await page.evaluate(async () => {
      const { encodeMock, decodeMock, mockShape } = await import('/panels/mock.js');
      const buf = new Float32Array([0.1, -2.5, NaN, 3e38, -0]);
      const data = { a: buf.subarray(1, 4), b: [1, NaN, Infinity, null, 'x'], c: { d: new Int32Array([7, -8]), e: true } };
      const back = decodeMock(JSON.parse(JSON.stringify(encodeMock(data))));
      let refused = '';
      try { encodeMock({ rows: [{ name: 'm', model: new (class Model {})() }] }); } catch (e) { refused = e.message; }
      let fn = '';
      try { encodeMock({ x: { f: () => 1 } }); } catch (e) { fn = e.message; }
      return {
        a: [back.a.constructor.name, ...Array.from(back.a).map(String)],
        b: back.b.map(String), d: Array.from(back.c.d), e: back.c.e,
        same: mockShape(back) === mockShape(data), refused, fn,
      };
    });
    assert.deepEqual(r.a, ['Float32Array', '-2.5', 'NaN', String(Math.fround(3e38))]);
    assert.deepEqual(r.b, ['1', 'NaN', 'Infinity', 'null', 'x']);
    assert.deepEqual(r.d, [7, -8]);
    assert.equal(r.e, true);
    assert.ok(r.same);
    assert.match(r.refused, /data\.rows\[0\]\.model is a Model, not plain data/);
    assert.match(r.fn, /data\.x\.f is a function/);
  } finally {
    await page.close();
  }
});
