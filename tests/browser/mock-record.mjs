// Recording panels' query results (web/panels/mock.js) in Chromium: shared by `npm run mocks`
// (scripts/mocks.mjs, which writes web/panels/VIEW/mocks/PART.json) and the mocks test (which
// compares a live query's shape with the recorded one). A blank page of the site's origin mounts
// <cs-panel name=... attrs> (panels/panel.js) alone, waits until it has drawn, and encodes what
// its query returned (section.csData) with mock.js.
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

// The state each view's panels are recorded in when a panel has no mock yet (a mock keeps the
// attributes it was recorded with): small, so that the mocks stay small, and showing what the
// panel is for (a repeated text for induction; patching on, so the patching panels draw maps).
const ATTRS = {
  induction: { model: 'char-2l', text: 'The cat sat. The cat sat.' },
  'induction-patching': { model: 'char-2l', text: 'The cat sat. The cat sat.', patch: 'denoise' },
  ioi: {},
  'ioi-patching': { patch: 'denoise' },
  circuits: { model: 'char-2l' },
  training: { model: 'char-2l' },
  'training-leading': { model: 'char-1l' },   // the model with a leading-terms file
  report: {},
};

/** The web/panels path of the panel `name` ("VIEW-PART") and of its mock. */
export function panelFiles(name) {
  const [, view, part] = /^([a-z0-9]+)-(.+)$/.exec(name);
  return { module: path.join(root, 'web', 'panels', view, `${part}.js`), mock: path.join(root, 'web', 'panels', view, 'mocks', `${part}.json`) };
}

/** The attributes the panel `name` is recorded with: its mock's, else its view's above. */
export function recordAttrs(name) {
  const { mock } = panelFiles(name);
  if (existsSync(mock)) return JSON.parse(readFileSync(mock, 'utf8')).attrs;
  return ATTRS[name] ?? ATTRS[name.split('-')[0]];
}

/** A page of `origin` holding nothing but a <main>, for mounting panels into. */
export async function blankPage(browser, origin) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.route(`${origin}/__blank.html`, (route) => route.fulfill({
    contentType: 'text/html; charset=utf-8',
    body: '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>panel</title><link rel="icon" href="data:,"></head><body><main></main></body></html>',
  }));
  await page.goto(`${origin}/__blank.html`);
  return { page, errors };
}

/**
 * Mounts <cs-panel name=`name` ...attrs> alone in `page`'s <main> (blankPage) and waits until it
 * has drawn or shown an error (with the attribute `mock`, it draws its mock).
 */
export async function mountPanel(page, name, attrs, timeout = 60_000) {
  await page.evaluate(async ({ name, attrs }) => {
    await import('/panels/panel.js');
    const el = document.createElement('cs-panel');
    el.setAttribute('name', name);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    document.querySelector('main').replaceChildren(el);
  }, { name, attrs });
  await page.waitForFunction(() => {
    const el = /** @type {any} */ (document.querySelector('cs-panel'));
    return el?.dataset.ready === 'true' || el?.querySelector('.cs-view-error');
  }, null, { timeout });
}

/**
 * Mounts the panel `name` with `attrs` (mountPanel) and returns {state, data, shape}: the store's
 * state, the query's result encoded (mock.js) and its shape. Throws with the panel's own error if
 * it showed one.
 */
export async function recordPanel(page, name, attrs, timeout = 60_000) {
  await mountPanel(page, name, attrs, timeout);
  return page.evaluate(async () => {
    const el = /** @type {any} */ (document.querySelector('cs-panel'));
    const error = el.querySelector('.cs-view-error');
    if (error) throw new Error(error.textContent);
    const { encodeMock, mockShape } = await import('/panels/mock.js');
    const data = el._section.csData;
    return { state: JSON.parse(JSON.stringify(el.state)), data: encodeMock(data), shape: mockShape(data) };
  });
}
