// Text at the edges, in every view that takes text (the Induction and Circuits text boxes, the IOI
// name boxes): empty, one character, exactly the model's context, one token past it, a 1 MB
// paste, emoji, combining characters and right-to-left text. Each one settles, throws nothing,
// shows no internals ("undefined", "NaN", "[object", exception names) and is handled visibly:
// text past the context says so, characters outside the vocabulary are pointed out, and a text too
// long for a link is said to be left out of it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from './chromium.mjs';
import { startServer } from '../../scripts/serve.mjs';
import { settled, messages, INTERNALS } from '../hardening/soak-lib.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
let server;
let browser;

before(async () => {
  server = await startServer({ root: site, port: 0 });
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

const MB = 'The quick brown fox jumps over the lazy dog. '.repeat(Math.ceil(2 ** 20 / 45)).slice(0, 2 ** 20);

/** The edge texts for a model of context nCtx (characters; <BOS> takes one position). */
function edges(nCtx) {
  const fill = (n) => 'abcdefghijklmnopqrstuvwxyz '.repeat(Math.ceil(n / 27)).slice(0, n);
  return [
    { name: 'empty', text: '' },
    { name: 'one character', text: 'a' },
    { name: `exactly the context (${nCtx} tokens)`, text: fill(nCtx - 1), fits: true },
    { name: `one token past the context (${nCtx + 1} tokens)`, text: fill(nCtx), fits: false },
    { name: 'a 1 MB paste', text: MB, fits: false, tooLongForLink: true },
    { name: 'emoji', text: 'smile 😀, thumbs 👍🏽, family 👨‍👩‍👧', unknown: true },
    { name: 'combining characters', text: 'cafe\u0301 and nai\u0308ve and man\u0303ana' },
    { name: 'right-to-left text', text: 'hello שלום עולם and مرحبا بالعالم', unknown: true },
  ];
}

async function openPage(hash) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of 404/.test(m.text())) problems.push(`console error: ${m.text()}`); });
  await page.goto(`${server.url}#${hash}`);
  assert.ok(await settled(page, 60_000), `${hash}: the page did not settle`);
  return { context, page, problems };
}

/** Every text a user reads in the shown view and the app's messages. */
async function shownText(page) {
  return page.evaluate(() => document.querySelector('#view-host > .view:not([hidden])').innerText);
}

async function check(page, problems, where, { fits, unknown, tooLongForLink }, view) {
  assert.ok(await settled(page, 20_000), `${where}: the view did not settle`);
  assert.deepEqual(problems, [], where);
  const seen = await shownText(page);
  const said = (await messages(page)).join(' | ');
  for (const s of [seen, said]) {
    const bad = s.match(INTERNALS) ?? s.match(/\bundefined\b|\bInfinity\b/);
    assert.equal(bad, null, `${where}: the page shows "${bad?.[0]}" (${s.slice(Math.max(0, (bad?.index ?? 0) - 60), (bad?.index ?? 0) + 60)})`);
  }
  if (view === 'induction') {
    if (fits === false) assert.match(seen, /longer than the model's context/, `${where}: no word that the text is past the context`);
    if (fits === true) assert.doesNotMatch(seen, /longer than the model's context/, `${where}: a text that fits is said not to`);
    if (unknown) assert.match(seen, /not in the model's vocabulary/, `${where}: characters outside the vocabulary are not pointed out`);
  }
  if (view === 'circuits' && fits === false) assert.match(seen, /longer than the model's context/, `${where}: no word that the text is past the context`);
  if (tooLongForLink) {
    // The link is written a moment after typing stops (the hash is not rewritten per keystroke).
    const told = await page.waitForFunction(() => /too long for a link/.test(document.querySelector('#app-status')?.textContent ?? ''), null, { timeout: 5000 }).then(() => true, () => false);
    assert.ok(told, `${where}: the link silently loses the text (${said})`);
  }
}

for (const [view, model, box] of [['induction', 'char-2l', 'cs-induction textarea'], ['circuits', 'char-2l', 'cs-circuits textarea']]) {
  test(`edges: the ${view} view's text box with ${model}`, async (t) => {
    const { context, page, problems } = await openPage(`v=2&view=${view}&model=${model}`);
    try {
      const nCtx = await page.evaluate(async (m) => (await (await import('/store.js')).getModel(m)).config.n_ctx, model);
      for (const e of edges(nCtx)) {
        const started = Date.now();
        await page.fill(box, e.text);
        await check(page, problems, `${view}, ${e.name}`, e, view);
        t.diagnostic(`${view}: ${e.name}: settled in ${Date.now() - started} ms`);
      }
    } finally {
      await context.close();
    }
  });
}

// An emptied box stays empty: the view shows the empty text (no sample text in its place, which
// what is typed next would join), the box says what it wants, and the link reopens it empty.
test('edges: an emptied text box stays empty, with a placeholder, and its link reopens it empty', async () => {
  for (const [view, box] of [['induction', 'cs-induction textarea'], ['circuits', 'cs-circuits textarea']]) {
    const { context, page, problems } = await openPage(`v=2&view=${view}&model=char-2l`);
    try {
      await page.fill(box, '');
      assert.ok(await settled(page), `${view}: did not settle on the empty text`);
      const shown = async () => page.evaluate((b) => ({
        value: /** @type {HTMLTextAreaElement} */ (document.querySelector(b)).value,
        placeholder: /** @type {HTMLTextAreaElement} */ (document.querySelector(b)).placeholder,
        sample: /Alice was beginning/.test(document.querySelector('#view-host > .view:not([hidden])')?.textContent ?? ''),
      }), box);
      const emptied = await shown();
      assert.equal(emptied.value, '', `${view}: the box filled itself again`);
      assert.ok(emptied.placeholder.length > 10, `${view}: an empty box says nothing of what to type`);
      assert.equal(emptied.sample, false, `${view}: the view shows the sample text for an empty box`);
      // The link is written a moment after typing stops.
      const written = await page.waitForFunction(() => /[#&]text=(&|$)/.test(location.hash), null, { timeout: 5000 }).then(() => true, () => false);
      assert.ok(written, `${view}: the link does not carry the empty text (${page.url()})`);
      const link = page.url();
      await page.goto('about:blank');
      await page.goto(link);
      assert.ok(await settled(page, 60_000), `${view}: the link did not settle`);
      assert.deepEqual(await shown(), emptied, `${view}: the link reopens another text`);
      await page.type(box, 'ab');
      assert.ok(await settled(page));
      assert.equal((await shown()).value, 'ab', `${view}: what is typed joins another text`);
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
    }
  }
});

test('edges: the IOI view\'s name boxes with ioi-templates-1l2h', async (t) => {
  const { context, page, problems } = await openPage('v=2&view=ioi&model=ioi-templates-1l2h');
  try {
    for (const role of ['io', 's']) {
      const box = `cs-ioi input[id$="-${role}"]`;
      for (const e of edges(64)) {
        if (e.tooLongForLink) continue;   // a name box is not where a novel goes; the text boxes above take it
        await page.fill(box, e.text.slice(0, 200));
        await page.press(box, 'Enter');
        await check(page, problems, `IOI ${role} name, ${e.name}`, {}, 'ioi');
      }
      t.diagnostic(`IOI ${role}: ${edges(64).length - 1} edge texts`);
    }
  } finally {
    await context.close();
  }
});
