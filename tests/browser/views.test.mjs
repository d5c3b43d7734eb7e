// The analysis views (web/views/ioi.js, circuits.js, training.js, report.js), each on a standalone
// page that only includes its module, as another page of the site would, served from the built
// site (build/site) with the page's content security policy as a header, in Debian's Chromium.
// Checks what a person would look for: the IOI model's answer, the 1L1H vs 1L2H accuracy, cutting
// V-composition, the IOI template builder (in the whole app, its state in the link), the circuits
// of char-2l, the training curves (when the metrics exist), in-browser training with pause and a
// download that loads back, the report (when it exists), and the induction view's panels (the
// strongest head enlarged first, visible keyboard focus, a model without heads, each panel
// alone). No console errors are allowed, except the 404s of files the test knows are missing
// (listed as diagnostics).
// Screenshots go to test-artifacts/views-*.png (views-ioi.png, views-ioi-2l1h-cut.png,
// views-ioi-templates.png, views-circuits.png, views-training-*.png, views-report.png). Needs
// `npm run build`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { launchChromium, startCspProxy, trainInPage } from './chromium.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const artifacts = path.join(root, 'test-artifacts');
const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:";
const cli = path.join(root, 'build', 'native', 'circuitscope');

// A standalone page holding one view: only its module and the stylesheets, no app.
function standalone(tag, module, attrs) {
  const a = Object.entries(attrs).map(([k, v]) => ` ${k}="${String(v).replace(/[&"<>]/g, '')}"`).join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${tag}</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/style.css"><link rel="stylesheet" href="/views/views.css">
<script type="module" src="/${module}"></script></head>
<body><main><${tag}${a}></${tag}></main></body></html>`;
}

let server;  // build/site behind a proxy that adds the CSP header
let origin;
let browser;

before(async () => {
  assert.ok(existsSync(path.join(site, 'views', 'ioi.js')), `${site}/views/ioi.js is missing: run \`npm run build\` first`);
  mkdirSync(artifacts, { recursive: true });
  server = await startCspProxy(site, CSP, (req, res, u) => {
    if (u.pathname !== '/__view.html') return false;
    const tag = u.searchParams.get('tag');
    const attrs = JSON.parse(u.searchParams.get('attrs') || '{}');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP });
    res.end(standalone(tag, tag === 'cs-panel' ? 'panels/panel.js' : `views/${tag.replace(/^cs-/, '')}.js`, attrs));
    return true;
  });
  origin = server.origin;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Opens a view alone on a page; `missing` lists site files the test expects to 404. */
function openView(tag, attrs = {}, { missing = [] } = {}) {
  return openUrl(`${origin}/__view.html?tag=${tag}&attrs=${encodeURIComponent(JSON.stringify(attrs))}`, { missing });
}

/** Opens the whole app (index.html) at a hash such as '#v=1&view=ioi&model=...'. */
function openApp(hash, { missing = [] } = {}) {
  return openUrl(`${origin}/${hash}`, { missing });
}

async function openUrl(url, { missing = [] } = {}) {
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems = [];
  const notFound = [];
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    if (/status of 404/.test(msg.text())) return;  // matched against the responses below
    problems.push(`console error: ${msg.text()}`);
  });
  page.on('response', (res) => {
    if (res.status() === 404) notFound.push(new URL(res.url()).pathname);
  });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('worker', (w) => w.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`worker console error: ${msg.text()}`);
  }));
  await page.goto(url);
  await page.evaluate(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  // Every change of the state shown, as the store's actions ('set' actions as their values): the
  // app's one store, or on a page of one view or panel, that element's own.
  await page.evaluate(async () => {
    window.__events = [];
    const lone = document.body.hasAttribute('data-cs-app') ? null : document.querySelector('main > *');
    if (lone) await customElements.whenDefined(lone.localName);
    const store = lone ? /** @type {any} */ (lone).store : (await import('/store.js')).store;
    store.subscribe((_state, _prev, action) => window.__events.push(action.type === 'set' ? action.values : action));
  });
  const check = async (t) => {
    const unexpected = notFound.filter((p) => !missing.some((m) => p.endsWith(m)));
    assert.deepEqual(unexpected, [], 'no unexpected 404s');
    for (const p of new Set(notFound)) t?.diagnostic(`expected 404 (not trained yet): ${p}`);
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
    assert.deepEqual(problems, []);
  };
  return { context, page, problems, check };
}

const siteHas = (p) => existsSync(path.join(site, p));

test('IOI: ioi-1l2h gets a template right; 1L1H vs 1L2H accuracy; unknown names are explained', async (t) => {
  const { context, page, check } = await openView('cs-ioi', { model: 'ioi-1l2h', io: 'A', s: 'B', order: 'IOSS' });
  try {
    await page.waitForSelector('cs-ioi .cs-results[data-ready="true"]', { state: 'attached', timeout: 60_000 });
    const bars = await page.$$eval('cs-ioi .cs-bar-row', (rows) => rows.map((r) => ({ name: r.dataset.name, prob: +r.dataset.prob })));
    assert.equal(bars.length, 6);
    const best = bars.reduce((a, b) => (b.prob > a.prob ? b : a));
    assert.equal(best.name, 'A', `IO (A) has the highest probability: ${JSON.stringify(bars)}`);
    assert.equal(await page.$eval('cs-ioi .cs-results', (e) => e.dataset.right), 'true');
    assert.match(await page.$eval('cs-ioi .cs-verdict', (e) => e.textContent), /right/);
    // The numbers the panel shows, as JSON: the same probabilities as the bars.
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('cs-ioi button:text("Download the numbers (JSON)")')]);
    const numbers = JSON.parse(readFileSync(await dl.path(), 'utf8'));
    assert.equal(numbers.predicted, 'A');
    for (const b of bars) assert.ok(Math.abs(numbers.probabilities[b.name] - b.prob) < 1e-6, `p(${b.name}) in the JSON matches the bar`);
    assert.equal(numbers.heads.length, 2 + 2, 'two heads, the direct path and the bias');
    // The other order, with display names typed in.
    await page.selectOption('cs-ioi select[id$="-order"]', 'SIOS');
    await page.fill('cs-ioi input[id$="-io"]', 'Alice');
    await page.press('cs-ioi input[id$="-io"]', 'Enter');
    await page.waitForFunction(() => document.querySelector('cs-ioi .cs-results')?.dataset.io === 'C' && document.querySelector('cs-ioi .cs-results').dataset.ready === 'true');
    assert.equal(await page.$eval('cs-ioi .cs-results', (e) => e.dataset.right), 'true', 'S IO S with Alice (C) as IO');
    // The architectures' accuracy over all 60 sequences.
    await page.waitForSelector('cs-ioi tr[data-model="ioi-1l1h"]');
    const zoo = await page.$$eval('cs-ioi tr[data-model]', (rows) => Object.fromEntries(rows.map((r) => [r.dataset.model, { acc: +r.dataset.accuracy, text: r.textContent }])));
    assert.equal(zoo['ioi-1l2h'].acc, 1);
    assert.match(zoo['ioi-1l2h'].text, /100%/);
    assert.ok(zoo['ioi-1l1h'].acc < 0.5, `1L1H fails: ${zoo['ioi-1l1h'].acc}`);
    assert.match(zoo['ioi-1l1h'].text, /0 of 10/, 'no 1L1H seed solves it');
    assert.match(zoo['ioi-1l2h'].text, /10 of 10/);
    t.diagnostic(`accuracy: ${Object.entries(zoo).map(([k, v]) => `${k} ${(100 * v.acc).toFixed(1)}%`).join(', ')}`);
    // A name the model does not know.
    await page.fill('cs-ioi input[id$="-io"]', 'Zoe');
    await page.press('cs-ioi input[id$="-io"]', 'Enter');
    await page.waitForSelector('cs-ioi .cs-message:not([hidden])');
    const msg = await page.$eval('cs-ioi .cs-message', (e) => e.textContent);
    assert.match(msg, /does not know the name "Zoe"/);
    assert.match(msg, /Mary \(A\).*John \(B\)/);
    const events = await page.evaluate(() => window.__events);
    assert.ok(events.some((e) => e.io === 'Zoe') && events.some((e) => e.order === 'SIOS'), 'changes go to the store');
    // Back to a known name for the screenshot.
    await page.fill('cs-ioi input[id$="-io"]', 'Mary');
    await page.press('cs-ioi input[id$="-io"]', 'Enter');
    await page.waitForSelector('cs-ioi .cs-message[hidden]', { state: 'attached' });
    await page.waitForSelector('cs-ioi .cs-results[data-ready="true"]', { state: 'attached' });
    await page.screenshot({ path: path.join(artifacts, 'views-ioi.png'), fullPage: true });
    await check(t);
  } finally {
    await context.close();
  }
});

test('IOI: cutting V-composition on ioi-2l1h changes the accuracy shown', async (t) => {
  const { context, page, check } = await openView('cs-ioi', { model: 'ioi-2l1h' });
  try {
    await page.waitForSelector('cs-ioi[data-complete="true"]', { timeout: 60_000 });
    const clean = await page.$eval('cs-ioi', (e) => +e.dataset.accuracy);
    const shown = {};
    for (const cut of ['Q', 'K', 'V']) {
      await page.selectOption('cs-ioi select[id$="-cut"]', cut.toLowerCase());
      await page.waitForFunction((c) => document.querySelector('cs-ioi .cs-accuracy').textContent.includes(`${c}-composition cut`), cut);
      shown[cut] = await page.$eval('cs-ioi', (e) => +e.dataset.accuracy);
    }
    t.diagnostic(`ioi-2l1h accuracy: clean ${clean}, cut Q ${shown.Q}, K ${shown.K}, V ${shown.V}`);
    assert.notEqual(shown.V, clean, 'cutting V-composition changes the accuracy');
    assert.match(await page.$eval('cs-ioi .cs-accuracy', (e) => e.textContent), /without the intervention/);
    assert.ok((await page.evaluate(() => window.__events)).some((e) => e.cut?.join() === '*>*.v'));
    // Removing the positional embedding too.
    await page.check('cs-ioi input[id$="-nopos"]');
    await page.waitForFunction(() => document.querySelector('cs-ioi .cs-accuracy').textContent.includes('without the positional embedding'));
    await page.screenshot({ path: path.join(artifacts, 'views-ioi-2l1h-cut.png'), fullPage: true });
    await check(t);
  } finally {
    await context.close();
  }
});

// ------------------------------------------------------------------------------------------------
// The template builder (sentence-template IOI models), in the whole app so that the state goes
// through the URL hash. The shipped template models may or may not solve every sentence: these
// tests check what is shown (the sentence, a probability for IO and S, the heads, the patterns,
// the lens, the splits), never that the model is right.

const TEMPLATE_MODEL = 'ioi-templates-1l2h';

/** The sentence of a template filled by plain text replacement (S IO S swaps the first two names). */
function expectedSentence(template, { io, s, order, place, object }) {
  let t = template;
  if (order === 'SIOS') t = t.replace('{IO}', '\u0000').replace('{S}', io).replace('\u0000', s);
  return t.replace('{IO}', io).replaceAll('{S}', s).replace('{PLACE}', place).replace('{OBJECT}', object);
}

/** Waits until the template view shows `sentence` analysed (and its splits, when asked). */
async function waitForSentence(page, sentence, { splits = true } = {}) {
  await page.waitForFunction(({ sentence, splits }) => {
    const v = document.querySelector('cs-ioi');
    const res = v?.querySelector('.cs-results');
    return v?.dataset.kind === 'templates' && res?.dataset.ready === 'true' && res.dataset.sentence === sentence &&
      (!splits || v.dataset.complete === 'true');
  }, { sentence, splits }, { timeout: 120_000 });
}

test('IOI templates: a link opens the builder; a training template and name pair give the sentence and its analysis', async (t) => {
  if (!siteHas(`models/${TEMPLATE_MODEL}.safetensors`)) {
    t.skip(`${TEMPLATE_MODEL} is not in this build of the site`);
    return;
  }
  const { context, page, check } = await openApp(`#v=1&view=ioi&model=${TEMPLATE_MODEL}`);
  try {
    await page.waitForSelector('cs-ioi[data-kind="templates"][data-ready="true"]', { timeout: 120_000 });
    // The task as the model file carries it; the core's sentence builder says a pair is held out
    // exactly for the pairs of the core's 'held-out pairs' split.
    const info = await page.evaluate(async (name) => {
      const { getModel } = await import('/store.js');
      const model = await getModel(name);
      const task = model.ioiTask();
      const ioiPairHeldOut = (_task, a, b) => model.ioiSentence({ template: 0, io: a, s: b }).pair_held_out;
      const templateHeldOut = (_task, i) => task.template_info[i].held_out;
      const vocab = model.tokenizer.vocab;
      const nameOf = new Map(task.names.map((n, i) => [vocab.indexOf(n), i]));
      const seqs = model.ioiSequences('held-out pairs');
      const [B, T] = seqs.shape;
      let disagree = 0;
      for (let b = 0; b < B; b++) {
        const pair = [...new Set(Array.from(seqs.data.subarray(b * T, (b + 1) * T)).filter((id) => nameOf.has(id)).map((id) => nameOf.get(id)))];
        if (pair.length !== 2 || !ioiPairHeldOut(task, pair[0], pair[1])) disagree++;
      }
      // A trained template other than the first, and a trained pair other than the default one.
      const tpl = task.templates.findIndex((x, i) => i > 0 && !templateHeldOut(task, i) && x.includes('{PLACE}') && x.includes('{OBJECT}'));
      let pair = null;
      for (let a = 2; a < task.names.length && !pair; a++) for (let b = a + 1; b < task.names.length && !pair; b++) if (!ioiPairHeldOut(task, a, b)) pair = [a, b];
      const heldPairs = [];
      for (let a = 0; a < task.names.length; a++) for (let b = a + 1; b < task.names.length; b++) if (ioiPairHeldOut(task, a, b)) heldPairs.push([a, b]);
      return { task, B, disagree, tpl, pair, heldPairs: heldPairs.length, layers: model.config.n_layers, heads: model.config.n_heads };
    }, TEMPLATE_MODEL);
    const { task } = info;
    t.diagnostic(`${TEMPLATE_MODEL}: ${task.templates.length} templates (${task.holdout_templates} held out), ${task.names.length} names, ${info.heldPairs} held-out pairs`);
    assert.equal(task.kind, 'ioi_templates');
    assert.ok(info.B > 0, 'the held-out pairs split has sentences');
    assert.equal(info.disagree, 0, "the sentence builder's held-out pairs are the split's");
    assert.ok(info.tpl > 0 && info.pair, 'a training template and name pair exist');

    // The controls: every template listed, the held-out ones marked.
    const options = await page.$$eval('cs-ioi select[id$="-tpl"] option', (o) => o.map((x) => ({ value: x.value, text: x.textContent, held: x.dataset.heldOut })));
    assert.equal(options.length, task.templates.length);
    assert.equal(options.filter((o) => /held out of training/.test(o.text)).length, task.holdout_templates);
    assert.equal(options.at(-1).held, 'true');
    assert.doesNotMatch(options[0].text, /\{|\}/, 'slots are shown readably');
    assert.match(options[0].text, /\[IO\].*\[S\]/);
    const datalist = await page.$$eval('cs-ioi datalist option', (o) => o.map((x) => x.value));
    assert.deepEqual(datalist, task.names, 'the name fields suggest the model\'s names');
    // The header's model picker offers both template models, labelled as such.
    const models = await page.$$eval('#model-switch option', (o) => o.map((x) => x.textContent));
    for (const m of ['ioi-templates-1l2h', 'ioi-templates-2l']) assert.ok(models.some((x) => x.startsWith(m) && /sentence templates/.test(x)), `${m} is offered: ${models}`);

    // Pick a training template, the order, a name pair (typed in another case), place and object.
    const io = task.names[info.pair[0]];
    const s = task.names[info.pair[1]];
    const place = task.places.at(-1);
    const object = task.objects[1];
    await page.selectOption('cs-ioi select[id$="-tpl"]', String(info.tpl));
    await page.selectOption('cs-ioi select[id$="-order"]', 'SIOS');
    await page.selectOption('cs-ioi select[id$="-place"]', place);
    await page.selectOption('cs-ioi select[id$="-object"]', object);
    await page.fill('cs-ioi input[id$="-io"]', io.toLowerCase());
    await page.press('cs-ioi input[id$="-io"]', 'Enter');
    await page.fill('cs-ioi input[id$="-s"]', s);
    await page.press('cs-ioi input[id$="-s"]', 'Tab');
    const sentence = expectedSentence(task.templates[info.tpl], { io, s, order: 'SIOS', place, object });
    await waitForSentence(page, sentence);
    assert.equal(await page.$eval('cs-ioi .cs-sentence q', (e) => e.textContent), sentence, 'the sentence is shown');
    assert.equal(await page.$eval('cs-ioi .cs-split', (e) => e.dataset.split), 'train');
    assert.equal(await page.isVisible('cs-ioi .cs-message'), false, 'no message');
    assert.equal(await page.isVisible('cs-ioi .cs-names'), false, 'no display names for a template model');

    // The analysis: IO and S identified, finite probabilities, a row for IO and for S.
    const res = await page.$eval('cs-ioi .cs-results', (e) => ({ ...e.dataset }));
    assert.equal(res.io, io);
    assert.equal(res.s, s);
    assert.ok(res.predicted.length > 0);
    for (const p of [+res.probIo, +res.probS]) assert.ok(Number.isFinite(p) && p >= 0 && p <= 1, `probability ${p}`);
    t.diagnostic(`"${sentence}": predicted ${res.predicted}, p(IO) ${(+res.probIo).toFixed(3)}, p(S) ${(+res.probS).toFixed(3)}`);
    const rows = await page.$$eval('cs-ioi .cs-bar-row', (r) => r.map((x) => ({ ...x.dataset, label: x.textContent })));
    const ioRow = rows.find((x) => x.role === 'io');
    const sRow = rows.find((x) => x.role === 's');
    assert.ok(ioRow && sRow, `rows for IO and S: ${JSON.stringify(rows)}`);
    assert.equal(ioRow.name, io);
    assert.equal(sRow.name, s);
    assert.ok(Math.abs(+ioRow.prob - +res.probIo) < 1e-5, 'the IO row shows p(IO)');
    assert.match(ioRow.label, /right answer/);
    assert.match(sRow.label, /wrong/);
    for (const x of rows) assert.ok(Number.isFinite(+x.prob) && +x.prob >= 0 && +x.prob <= 1);
    assert.ok(rows.length >= 5 && rows.length <= 7, `the top names plus IO and S (${rows.length} rows)`);
    // Heads (sum and difference), one pattern per head with the sentence's words, the lens.
    const headRows = await page.$$eval('cs-ioi tbody.cs-heads tr', (r) => r.map((x) => x.textContent));
    assert.equal(headRows.length, info.layers * info.heads + 2, 'every head, the direct path and the bias');
    assert.equal(await page.$$eval('cs-ioi .cs-patterns canvas', (c) => c.length), info.layers * info.heads);
    const over = await page.getAttribute('cs-ioi .cs-patterns canvas', 'aria-label');
    assert.ok(over.includes('over: <BOS> ') && over.includes(` ${io} `) && over.endsWith(' to'), `the pattern is labelled with the sentence's words: ${over}`);
    const lens = await page.$$eval('cs-ioi tbody.cs-lens tr', (r) => r.length);
    assert.equal(lens, info.layers + 1, 'a logit-lens row per stage');
    // Accuracy on each split, and the template models side by side.
    const splits = await page.$$eval('cs-ioi .cs-split-table tbody tr', (r) => r.map((x) => [x.dataset.split, +x.dataset.accuracy]));
    assert.deepEqual(splits.map((x) => x[0]), ['train', 'held-out pairs', 'held-out templates', 'held-out both']);
    for (const [, acc] of splits) assert.ok(Number.isFinite(acc) && acc >= 0 && acc <= 1);
    t.diagnostic(`${TEMPLATE_MODEL} accuracy: ${splits.map(([k, v]) => `${k} ${(100 * v).toFixed(1)}%`).join(', ')}`);
    assert.doesNotMatch(await page.$eval('cs-ioi .cs-accuracy', (e) => e.textContent), /60 sequences/);
    assert.ok(await page.$('cs-ioi tr[data-model="ioi-templates-2l"]'), 'the other template model is compared');

    // The exports carry the sentence.
    const [json] = await Promise.all([page.waitForEvent('download'), page.click('cs-ioi button:text("Download the numbers (JSON)")')]);
    const numbers = JSON.parse(readFileSync(await json.path(), 'utf8'));
    assert.equal(numbers.sentence, sentence);
    assert.equal(numbers.template.index, info.tpl);
    assert.equal(numbers.io, io);
    assert.equal(Object.keys(numbers.probabilities).length, task.names.length);
    const [csv] = await Promise.all([page.waitForEvent('download'), page.click('cs-ioi button:text("Per-head contributions (CSV)")')]);
    const lines = readFileSync(await csv.path(), 'utf8').trim().split('\n');
    assert.match(lines[0], /,sentence$/);
    assert.ok(lines.slice(1).every((l) => l.endsWith(sentence.includes(',') ? `"${sentence}"` : sentence)), 'every CSV row carries the sentence');

    // The state is in the hash.
    const hash = await page.evaluate(() => location.hash);
    for (const part of [`model=${TEMPLATE_MODEL}`, `tpl=${info.tpl}`, 'order=SIOS', `s=${s}`, `place=${place}`, `object=${object}`]) assert.ok(hash.includes(part), `${part} in ${hash}`);
    assert.match(hash, new RegExp(`io=${io}`, 'i'));
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(artifacts, 'views-ioi-templates.png'), fullPage: true });
    await check(t);
  } finally {
    await context.close();
  }
});

test('IOI templates: an unknown name is explained with the names the model knows; a copied link restores the sentence', async (t) => {
  if (!siteHas(`models/${TEMPLATE_MODEL}.safetensors`)) {
    t.skip(`${TEMPLATE_MODEL} is not in this build of the site`);
    return;
  }
  const { context, page, check } = await openApp(`#v=1&view=ioi&model=${TEMPLATE_MODEL}&order=SIOS&tpl=2`);
  let link;
  let expected;
  try {
    await page.waitForSelector('cs-ioi[data-kind="templates"][data-ready="true"]', { timeout: 120_000 });
    const task = await page.evaluate(async (name) => (await (await import('/store.js')).getModel(name)).ioiTask(), TEMPLATE_MODEL);
    // The link's settings and the model's first two names (the defaults).
    expected = expectedSentence(task.templates[2], { io: task.names[0], s: task.names[1], order: 'SIOS', place: task.places[0], object: task.objects[0] });
    await waitForSentence(page, expected, { splits: false });

    // A name the model does not know: a message naming it and listing the known names.
    await page.fill('cs-ioi input[id$="-io"]', 'Zoe<b>');
    await page.press('cs-ioi input[id$="-io"]', 'Enter');
    await page.waitForSelector('cs-ioi .cs-message:not([hidden])');
    const msg = await page.$eval('cs-ioi .cs-message', (e) => e.textContent);
    assert.match(msg, /does not know the name "Zoe<b>"/);
    for (const n of [task.names[0], task.names[7], task.names.at(-1)]) assert.ok(msg.includes(n), `the message lists ${n}`);
    assert.equal(await page.$('cs-ioi .cs-message b'), null, 'the typed text is text, not HTML');
    assert.equal(await page.$eval('cs-ioi .cs-results', (e) => e.dataset.ready), 'false');
    assert.equal(await page.$$eval('cs-ioi .cs-bar-row', (r) => r.length), 0, 'no stale analysis');
    // The same name for IO and S.
    await page.fill('cs-ioi input[id$="-io"]', task.names[1]);
    await page.press('cs-ioi input[id$="-io"]', 'Enter');
    await page.waitForFunction(() => /must be different names/.test(document.querySelector('cs-ioi .cs-message').textContent));
    // The page keeps working: pick another name, switch the order and the place.
    await page.fill('cs-ioi input[id$="-io"]', task.names[5].toUpperCase());
    await page.press('cs-ioi input[id$="-io"]', 'Enter');
    await page.selectOption('cs-ioi select[id$="-order"]', 'IOSS');
    await page.selectOption('cs-ioi select[id$="-place"]', task.places[3]);
    expected = expectedSentence(task.templates[2], { io: task.names[5], s: task.names[1], order: 'IOSS', place: task.places[3], object: task.objects[0] });
    await waitForSentence(page, expected);
    assert.equal(await page.isVisible('cs-ioi .cs-message'), false);

    // Copy the link.
    await context.grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.click('#copy-link');
    link = await page.inputValue('#copy-text');
    await check(t);
  } finally {
    await context.close();
  }
  // A fresh page from the link shows the same template, order, names and sentence.
  const fresh = await openApp(new URL(link).hash);
  try {
    await waitForSentence(fresh.page, expected, { splits: false });
    const shown = await fresh.page.evaluate(() => {
      const v = document.querySelector('cs-ioi');
      const val = (sel) => v.querySelector(sel).value;
      return { tpl: val('select[id$="-tpl"]'), order: val('select[id$="-order"]'), io: val('input[id$="-io"]'), s: val('input[id$="-s"]'), sentence: v.querySelector('.cs-sentence q').textContent };
    });
    const task = await fresh.page.evaluate(async (name) => (await (await import('/store.js')).getModel(name)).ioiTask(), TEMPLATE_MODEL);
    assert.deepEqual(shown, { tpl: '2', order: 'IOSS', io: task.names[5], s: task.names[1], sentence: expected });
    await fresh.check(t);
  } finally {
    await fresh.context.close();
  }
});

test('IOI templates: a link with settings the model does not have says so and shows the defaults', async (t) => {
  if (!siteHas(`models/${TEMPLATE_MODEL}.safetensors`)) {
    t.skip(`${TEMPLATE_MODEL} is not in this build of the site`);
    return;
  }
  const { context, page, check } = await openApp(`#v=1&view=ioi&model=${TEMPLATE_MODEL}&tpl=99&place=moon`);
  try {
    await page.waitForSelector('cs-ioi[data-kind="templates"][data-ready="true"]', { timeout: 120_000 });
    const notice = await page.$eval('cs-ioi .cs-notice', (e) => (e.hidden ? '' : e.textContent));
    assert.match(notice, /template "99"/);
    assert.match(notice, /place "moon"/);
    assert.equal(await page.$eval('cs-ioi select[id$="-tpl"]', (e) => e.value), '0');
    assert.equal(await page.$eval('cs-ioi .cs-results', (e) => e.dataset.ready), 'true', 'the defaults are analysed');
    await check(t);
  } finally {
    await context.close();
  }
  // A link the codec cannot read at all: the app's message and a working page.
  const bad = await openApp(`#v=1&view=ioi&model=${TEMPLATE_MODEL}&tpl=x`);
  try {
    await bad.page.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 60_000 });
    assert.match(await bad.page.textContent('#app-status'), /could not be read \(tpl/);
    await bad.check(t);
  } finally {
    await bad.context.close();
  }
});

test('IOI in the app: cutting composition and removing positions go into the link and come back', async (t) => {
  const { context, page, check } = await openApp('#v=1&view=ioi&model=ioi-2l1h');
  try {
    await page.waitForSelector('cs-ioi[data-ready="true"]', { timeout: 60_000 });
    await page.selectOption('cs-ioi select[id$="-cut"]', 'v');
    await page.waitForFunction(() => document.querySelector('cs-ioi .cs-accuracy').textContent.includes('V-composition cut'));
    await page.check('cs-ioi input[id$="-nopos"]');
    await page.waitForFunction(() => /cut=\*%3E\*\.v/.test(location.hash) && /nopos=1/.test(location.hash));
    const hash = await page.evaluate(() => location.hash);
    await check(t);
    const again = await openApp(hash);
    try {
      await again.page.waitForFunction(() => document.querySelector('cs-ioi .cs-accuracy')?.textContent.includes('V-composition cut'), null, { timeout: 60_000 });
      assert.equal(await again.page.$eval('cs-ioi select[id$="-cut"]', (e) => e.value), 'v');
      assert.equal(await again.page.isChecked('cs-ioi input[id$="-nopos"]'), true);
      await again.check(t);
    } finally {
      await again.context.close();
    }
  } finally {
    await context.close();
  }
});

test('IOI in the app: the ablation kind of the cut goes into the link, and the numbers shown are the core\'s for that intervention', async (t) => {
  const { context, page, check } = await openApp('#v=2&view=ioi&model=ioi-2l1h&cut=*%3E*.v');
  try {
    await page.waitForSelector('cs-ioi[data-ready="true"]', { timeout: 60_000 });
    const shown = {};
    for (const kind of ['mean', 'mean-all', 'resample', 'zero']) {
      // What the page's module gives for this intervention, built here without the store.
      const want = await page.evaluate(async (k) => {
        const { getModel } = await import('/store.js');
        const m = await getModel('ioi-2l1h');
        const iv = { ...m.cutComposition('v'), ablation: k };
        const a = m.ioi(m.ioiSentence({ order: 0, io: 0, s: 1 }).tokens, iv);
        return { accuracy: m.ioiEvaluate(iv).accuracy, probIo: a.prob_io.toFixed(6) };
      }, kind);
      await page.selectOption('cs-ioi select[id$="-abl"]', kind);
      await page.waitForFunction(({ k, acc }) => {
        const text = document.querySelector('cs-ioi .cs-accuracy')?.textContent ?? '';
        const named = k === 'zero' ? !/ ablation\)/.test(text) : text.includes(`(${k} ablation)`);
        return named && text.includes('V-composition cut') && document.querySelector('cs-ioi').dataset.accuracy === String(acc);
      }, { k: kind, acc: want.accuracy }, { timeout: 60_000 });
      assert.equal(await page.$eval('cs-ioi .role-io[data-prob]', (e) => e.dataset.prob), want.probIo, `${kind}: p(IO) of the sequence shown`);
      const hash = await page.evaluate(() => location.hash);
      assert.equal(/abl=/.test(hash), kind !== 'zero', hash);
      if (kind !== 'zero') assert.match(hash, new RegExp(`abl=${kind}(&|$)`));
      // The same figure as the native CLI's.
      const native = JSON.parse(execFileSync(cli, ['ioi', path.join(root, 'models', 'ioi-2l1h.safetensors'), '--cut', 'v', '--ablation', kind, '--json'], { encoding: 'utf8' }));
      assert.equal(want.accuracy, native.accuracy, `${kind}: page and CLI`);
      shown[kind] = want.accuracy;
    }
    t.diagnostic(`ioi-2l1h with V-composition cut: ${JSON.stringify(shown)}`);
    assert.ok(new Set(Object.values(shown)).size >= 3, 'the kinds give different accuracies');
    assert.ok((await page.evaluate(() => window.__events)).some((e) => e.abl === 'resample'));
    await check(t);
    const again = await openApp('#v=2&view=ioi&model=ioi-2l1h&cut=*%3E*.v&abl=resample');
    try {
      await again.page.waitForFunction(() => document.querySelector('cs-ioi .cs-accuracy')?.textContent.includes('(resample ablation)'), null, { timeout: 60_000 });
      assert.equal(await again.page.$eval('cs-ioi select[id$="-abl"]', (e) => e.value), 'resample');
      await again.check(t);
    } finally {
      await again.context.close();
    }
  } finally {
    await context.close();
  }
});

test('circuits: QK/OV heatmaps, eigenvalues and composition of char-2l render without errors', async (t) => {
  const { context, page, check } = await openView('cs-circuits', { model: 'char-2l', head: 'L1H0' });
  try {
    await page.waitForSelector('cs-circuits[data-ready="true"]', { timeout: 60_000 });
    const info = await page.evaluate(() => {
      const v = document.querySelector('cs-circuits');
      const canvases = [...v.querySelectorAll('.cs-heat-wrap canvas')].map((c) => [c.width, c.height]);
      return {
        canvases,
        qkShape: v.dataset.qkShape,
        eigenPoints: v.querySelectorAll('.cs-figures svg circle').length,
        compositionTables: v.querySelectorAll('.cs-figures table').length,
        topRows: v.querySelectorAll('.cs-scroll table tbody tr').length,
        attributionRows: v.querySelectorAll('table[data-part="parts"] tr').length,
        copying: +v.dataset.ovCopying,
      };
    });
    t.diagnostic(`circuits: ${JSON.stringify(info)}`);
    assert.equal(info.canvases.length, 3, 'QK, OV and the composed QK circuit');
    for (const [w, h] of info.canvases) assert.ok(w > 100 && h > 100, `heatmap drawn (${w}x${h})`);
    assert.equal(info.qkShape, '82x82');
    assert.ok(info.eigenPoints >= 32, 'OV and QK eigenvalues plotted');
    assert.equal(info.compositionTables, 3, 'Q, K and V composition tables');
    assert.ok(info.topRows > 10);
    assert.equal(info.attributionRows, 3 + 8, 'embed, pos_embed, bias and 8 heads');
    assert.ok(Number.isFinite(info.copying));
    // Sort, show all tokens, zoom: the heatmap redraws larger.
    const before = await page.$eval('cs-circuits .cs-heat-wrap canvas', (c) => c.width);
    await page.selectOption('cs-circuits select[id$="-top"]', 'all');
    await page.selectOption('cs-circuits select[id$="-sort"]', 'both');
    await page.waitForFunction((w) => document.querySelector('cs-circuits .cs-heat-wrap canvas').width > w, before);
    await page.selectOption('cs-circuits select[id$="-top"]', '40');
    // A 1-layer IOI model shows skip-trigrams.
    await page.evaluate(() => /** @type {any} */ (document.querySelector('cs-circuits')).store.dispatch({ type: 'model', model: 'ioi-1l2h' }));
    await page.waitForFunction(() => document.querySelector('cs-circuits').dataset.qkShape === '8x8');
    await page.waitForFunction(() => [...document.querySelectorAll('cs-circuits caption')].some((c) => c.textContent === 'Top skip-trigrams'));
    await page.evaluate(() => /** @type {any} */ (document.querySelector('cs-circuits')).store.dispatch({ type: 'model', model: 'char-2l' }));
    await page.waitForFunction(() => document.querySelector('cs-circuits').dataset.qkShape === '82x82');
    await page.screenshot({ path: path.join(artifacts, 'views-circuits.png'), fullPage: true });
    await check(t);
  } finally {
    await context.close();
  }
});

test('circuits: all 2,048 tokens of a byte-pair model at a large zoom stay within one canvas, and the panel says so', async (t) => {
  // 2,048 x 2,048 cells at 8 pixels would be a canvas of 16,384 pixels a side: seconds to draw.
  const started = Date.now();
  const { context, page, check } = await openApp('#v=2&view=circuits&model=bpe-1l&head=L0H0&top=all&zoom=8');
  try {
    await page.waitForSelector('cs-circuits[data-ready="true"]', { timeout: 60_000 });
    const info = await page.$$eval('cs-circuits .cs-heat-wrap canvas', (cs) => cs.map((c) => [c.width, c.height, c.closest('section').dataset.panel]));
    t.diagnostic(`settled in ${Date.now() - started} ms: ${JSON.stringify(info)}`);
    assert.ok(info.length >= 2, 'the QK and OV heatmaps');
    for (const [w, h, panel] of info) {
      assert.ok(w <= 4096 && h <= 4096, `${panel}: ${w} x ${h} pixels`);
      assert.ok(w > 2048 && h > 2048, `${panel}: every token still has at least a pixel (${w} x ${h})`);
    }
    for (const panel of ['circuits-qk', 'circuits-ov']) {
      assert.match(await page.$eval(`cs-circuits section[data-panel="${panel}"] .cs-zoom-note`, (p) => p.textContent),
        /At 8 pixels a cell, 2048 × 2048 tokens would not fit on one canvas \(4,096 pixels a side\): cells are drawn 2 pixels\. Show fewer tokens/);
    }
    // The top 40 at the same zoom fit: no note.
    await page.selectOption('cs-circuits select[id$="-top"]', '40');
    await page.waitForFunction(() => !document.querySelector('cs-circuits .cs-zoom-note') && document.querySelector('cs-circuits .cs-heat-wrap canvas').width < 1000);
    // From a zoom of 10 the tokens are labelled on both margins (40 cells of 10 pixels and the labels).
    await page.evaluate(() => /** @type {any} */ (document.querySelector('cs-circuits')).update({ zoom: 10 }));
    await page.waitForFunction(() => document.querySelector('cs-circuits').dataset.version === String(/** @type {any} */ (window).__cs.store.version));
    const sizes = await page.$$eval('cs-circuits .cs-heat-wrap canvas', (cs) => cs.map((c) => [c.width, c.height]));
    for (const [w, h] of sizes) assert.ok(w > 400 && h > 400, `labelled at zoom 10: ${w} x ${h} pixels`);
    assert.equal(await page.$('cs-circuits .cs-zoom-note'), null);
    await check(t);
  } finally {
    await context.close();
  }
});

test('circuits: the path expansion explains any target token; the composed QK circuit through the previous-token head', async (t) => {
  const { context, page, check } = await openApp('#v=2&view=circuits&model=char-2l&head=L1H1');
  try {
    await page.waitForSelector('cs-circuits[data-ready="true"]', { timeout: 60_000 });
    const attr = 'cs-circuits section[data-panel="circuits-attribution"]';
    const predicted = await page.$eval(`${attr} [data-target]`, (d) => Number(d.dataset.target));
    // Pick the second of the core's top next tokens: the link and the panel follow.
    const second = await page.$eval(`${attr} select.cs-attr-target`, (s) => s.options[2].value);
    await page.selectOption(`${attr} select.cs-attr-target`, second);
    await page.waitForFunction((v) => new RegExp(`[#&]target=${v}(&|$)`).test(location.hash), second);
    await page.waitForFunction(([sel, v]) => document.querySelector(`${sel} [data-target]`)?.dataset.target === v, [attr, second]);
    assert.notEqual(Number(second), predicted);
    assert.match(await page.$eval(attr, (p) => p.textContent), /The logit of .* is the sum of/);
    // Any token typed by name.
    const e = await page.evaluate(async () => (await (await import('/store.js')).getModel('char-2l')).tokenizer.vocab.indexOf('e'));
    await page.fill(`${attr} input.cs-attr-token`, 'e');
    await page.press(`${attr} input.cs-attr-token`, 'Enter');
    await page.waitForFunction(([sel, v]) => document.querySelector(`${sel} [data-target]`)?.dataset.target === String(v), [attr, e]);
    // Back to the prediction.
    await page.selectOption(`${attr} select.cs-attr-target`, '');
    await page.waitForFunction(() => !/[#&]target=/.test(location.hash));

    // The composed QK circuit of L1H1 through L0H1 (K-composition): a heatmap, its entries, in the link.
    const cqk = 'cs-circuits section[data-panel="circuits-composedqk"]';
    await page.waitForSelector(`${cqk} canvas`);
    assert.equal(await page.$eval(`${cqk} select.cs-cqk-through`, (s) => s.value), 'L0H0');
    await page.selectOption(`${cqk} select.cs-cqk-through`, 'L0H1');
    await page.waitForFunction(() => /[#&]through=L0H1(&|$)/.test(location.hash));
    await page.waitForFunction((sel) => /through L0H1/.test(document.querySelector(`${sel} canvas`)?.getAttribute('aria-label') ?? ''), cqk);
    const top = await page.$$eval(`${cqk} .cs-scroll table:first-child tbody tr`, (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
    t.diagnostic(`K-composition of L1H1 through L0H1, largest entries: ${top.map((r) => r.join(' ')).join(' | ')}`);
    assert.ok(top.length >= 10);
    // An induction head's K-composition term through the previous-token head matches a token
    // with itself: its largest entries lie on the diagonal.
    assert.ok(top.filter((r) => r[0] === r[1]).length >= 8, 'the largest entries are on the diagonal (dest = src read)');
    await page.selectOption(`${cqk} select.cs-cqk-input`, 'q');
    await page.waitForFunction(() => /[#&]compose=q(&|$)/.test(location.hash));
    await page.waitForFunction((sel) => /^Q-composition/.test(document.querySelector(`${sel} canvas`)?.getAttribute('aria-label') ?? ''), cqk);
    // A layer-0 head has no earlier head to compose with.
    await page.selectOption('cs-circuits select[id$="-head"]', 'L0H1');
    await page.waitForFunction((sel) => /is in layer 0/.test(document.querySelector(sel).textContent), cqk);
    await check(t);
  } finally {
    await context.close();
  }
});

for (const name of ['char-2l', 'char-1l', 'char-1l-smeared', 'bpe-2l-prose']) {
  test(`training: ${name}'s curves when its metrics exist (otherwise a clear message)`, async (t) => {
    const metrics = `models/${name}.metrics.json`;
    const has = siteHas(metrics);
    // Files the site may lack while the zoo is being trained (each 404 is listed as a diagnostic).
    const missing = [metrics, `models/${name}.safetensors`, `models/snapshots/${name}/step0.safetensors`].filter((p) => !siteHas(p)).map((p) => `/${p}`);
    const { context, page, check } = await openView('cs-training', { model: name }, { missing });
    try {
      await page.waitForSelector('cs-training[data-charts]', { timeout: 60_000 });
      if (!has) {
        t.diagnostic(`${metrics} is missing from the site: only the "not trained yet" message is checked`);
        assert.match(await page.$eval('cs-training [data-missing="metrics"]', (e) => e.textContent), /not trained yet/);
      } else {
        const records = JSON.parse(readFileSync(path.join(site, metrics), 'utf8')).records;
        await page.waitForFunction(() => document.querySelectorAll('cs-training figure.cs-uplot .uplot canvas').length >= 3);
        const info = await page.evaluate(() => {
          const v = document.querySelector('cs-training');
          return { charts: +v.dataset.charts, phase: v.dataset.phaseChange, lines: [...v.querySelectorAll('figure.cs-uplot')].reduce((n, f) => n + Number(f.dataset.series), 0), phaseLines: v.querySelectorAll('figure.cs-uplot[data-marker]').length, summary: v.querySelector('[role="status"]').textContent };
        });
        t.diagnostic(`${name}: ${records.length} records; phase change at step ${info.phase || 'none'}; ${info.summary}`);
        assert.ok(info.charts >= 3, 'loss, ICL and prefix-matching charts');
        assert.ok(info.lines >= 4);
        if (info.phase) assert.ok(info.phaseLines >= 3, 'the phase change is marked');
        // The extra training seeds (models/seeds/NAME.seedN.metrics.json) are drawn as thinner
        // ICL lines, and the sentence gives their phase changes as the report does.
        const seeds = (JSON.parse(readFileSync(path.join(site, 'models/manifest.json'), 'utf8')).seeds ?? {})[name] ?? [];
        assert.ok(seeds.length >= 2, `${name}: the site holds its extra seeds' records`);
        const iclSeries = await page.evaluate(() => Number([...document.querySelectorAll('cs-training figure.cs-uplot')]
          .find((f) => /In-context learning/.test(f.textContent)).dataset.series));
        assert.equal(iclSeries, 1 + seeds.length, 'one ICL line per seed');
        const report = JSON.parse(readFileSync(path.join(site, 'models/report.json'), 'utf8'));
        const row = report.claims.find((c) => c.id === (name === 'char-1l' ? `icl-${name}` : `phase-change-${name}`));
        const each = seeds.map((n) => [n, row.seeds.find((x) => x.seed === n).phase_change])
          .map(([n, x]) => `seed ${n}: ${x >= 0 ? `phase change at step ${x}` : 'no phase change'}`);
        assert.ok(info.summary.includes(`: ${each.join('; ')}.`), info.summary);
        // One layer without smeared keys forms no induction head: no phase change is marked (half
        // of its near-zero final score would otherwise be "reached" at step 0).
        if (name === 'char-1l') {
          assert.equal(info.phase, '', 'char-1l has no phase change');
          assert.match(info.summary, /No phase change/);
        } else {
          assert.ok(+info.phase > 0, `${name} has a phase change after step 0 (${info.phase})`);
          // The ICL score two records before the phase change (the core's before_step, the
          // report's "before") and at the end, as the records give them.
          const at = records.findIndex((r) => r.step === +info.phase);
          const iclAt = (r) => `${r.icl.toFixed(3)} ± ${r.icl_se.toFixed(3)} at step ${r.step}`;
          if (at >= 2 && Number.isFinite(records[at - 2].icl_se)) {
            assert.ok(info.summary.includes(`In-context learning score: ${iclAt(records[at - 2])} (two records before the phase change), ${iclAt(records.at(-1))} (the last record).`), info.summary);
          }
        }
        // The snapshot slider, when the snapshots exist.
        await page.waitForSelector('cs-training[data-ready="true"]');
        const slider = await page.$('cs-training input[type="range"]:not([disabled])');
        if (slider) {
          const max = +(await slider.getAttribute('max'));
          await slider.focus();
          await page.keyboard.press('Home');
          await page.$eval('cs-training input[type="range"]', (s) => s.dispatchEvent(new Event('change')));
          await page.waitForSelector('cs-training[data-snapshot]', { timeout: 60_000 });
          const ev = await page.evaluate(() => window.__events);
          t.diagnostic(`snapshot slider: ${max} snapshots; chose ${JSON.stringify(ev.at(-1))}`);
          assert.match(ev.at(-1).snapshot, /^step\d+$/);
        } else {
          t.diagnostic(`${name}: no snapshot list in the model file, slider disabled`);
        }
      }
      await page.screenshot({ path: path.join(artifacts, `views-training-${name}.png`), fullPage: true });
      await check(t);
    } finally {
      await context.close();
    }
  });
}

/**
 * Decodes a panel's PNG in the page and counts, inside box {x, y, w, h} (CSS pixels of a panel
 * pw wide, shrunk by `inset` device pixels on every side), the inked pixels: by default those of
 * a colour other than the most common one (the background); with `ink: 'blue'`, those of the
 * patterns' blue (blue over red by more than 60). Returns {inked, total}.
 */
function inkedInBox(page, png, box, { inset = 0, ink = 'other' } = {}) {
  return page.evaluate(async ({ b64, c, inset, ink }) => {
    const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
    const bmp = await createImageBitmap(new Blob([bytes], { type: 'image/png' }));
    const cv = document.createElement('canvas');
    cv.width = bmp.width, cv.height = bmp.height;
    const ctx = cv.getContext('2d');
    ctx.drawImage(bmp, 0, 0);
    const s = bmp.width / c.pw;
    const d = ctx.getImageData(Math.round(c.x * s) + inset, Math.round(c.y * s) + inset,
      Math.max(1, Math.round(c.w * s) - 2 * inset), Math.max(1, Math.round(c.h * s) - 2 * inset)).data;
    if (ink === 'blue') {
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i + 2] - d[i] > 60) n++;
      return { inked: n, total: d.length / 4 };
    }
    const counts = new Map();
    for (let i = 0; i < d.length; i += 4) { const k = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2]; counts.set(k, (counts.get(k) || 0) + 1); }
    return { inked: d.length / 4 - Math.max(...counts.values()), total: d.length / 4 };
  }, { b64: png.toString('base64'), c: box, inset, ink });
}

test('export: a panel downloads as a PNG that shows its chart, not just its text', async (t) => {
  const { context, page, check } = await openView('cs-training', { model: 'char-2l' });
  try {
    await page.waitForSelector('cs-training[data-charts]', { timeout: 60_000 });
    // The first panel holding a chart, its PNG button, and where the chart sits in the panel.
    await page.waitForSelector('cs-training figure.cs-uplot canvas');
    const handle = await page.evaluateHandle(() => [...document.querySelectorAll('cs-training section.cs-panel')].find((p) => p.querySelector('figure.cs-uplot canvas')));
    const chart = await handle.evaluate((panel) => {
      const b = panel.getBoundingClientRect();
      const r = panel.querySelector('figure.cs-uplot canvas').getBoundingClientRect();
      return { x: r.left - b.left, y: r.top - b.top, w: r.width, h: r.height, pw: b.width, label: panel.querySelector('.cs-panel-png').getAttribute('aria-label') };
    });
    assert.match(chart.label, /^Download the panel ".+" as PNG$/);
    const [download] = await Promise.all([page.waitForEvent('download'), handle.evaluate((panel) => panel.querySelector('.cs-panel-png').click())]);
    const png = readFileSync(await download.path());
    await download.saveAs(path.join(artifacts, 'views-panel-export.png'));
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG file');
    // Inside the chart's box, the curves, axes and ticks.
    const { inked, total } = await inkedInBox(page, png, chart);
    t.diagnostic(`panel PNG ${png.length} bytes; chart box ${Math.round(chart.w)}x${Math.round(chart.h)}: ${inked} of ${total} pixels not background`);
    // Axis labels alone (text) would ink well under 1%; the curves and axes take more.
    assert.ok(inked > 0.02 * total, `the chart is drawn in the PNG (${inked} of ${total} pixels)`);

    // A panel with a form control (the recipe select of "Train it yourself"): the PNG shows the
    // control's box and its chosen option, not an empty gap.
    const withSelect = await page.evaluateHandle(() => [...document.querySelectorAll('cs-training section.cs-panel')].find((p) => p.querySelector('select')));
    const sel = await withSelect.evaluate((panel) => {
      const b = panel.getBoundingClientRect();
      const r = panel.querySelector('select').getBoundingClientRect();
      return { x: r.left - b.left, y: r.top - b.top, w: r.width, h: r.height, pw: b.width };
    });
    const [download2] = await Promise.all([page.waitForEvent('download'), withSelect.evaluate((panel) => panel.querySelector('.cs-panel-png').click())]);
    const png2 = readFileSync(await download2.path());
    // Inside the select's box, less its border: the chosen option's text.
    const ink2 = await inkedInBox(page, png2, sel, { inset: 2 });
    t.diagnostic(`select box in the PNG: ${ink2.inked} of ${ink2.total} pixels not background`);
    assert.ok(ink2.inked > 0.03 * ink2.total, `the select's chosen option is drawn in the PNG (${ink2.inked} of ${ink2.total} pixels)`);
    await check(t);
  } finally {
    await context.close();
  }
});

/** Clicks `selector` in the page and returns the downloaded file's text. */
async function downloadText(page, selector) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.$eval(selector, (b) => b.click())]);
  return readFileSync(await download.path(), 'utf8');
}

/** A CSV the page wrote, as rows of cells (quoted cells with commas, quotes or newlines unquoted). */
function parseCSV(text) {
  const rows = [[]];
  let cell = '', quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') { cell += '"'; i++; } else if (ch === '"') quoted = false; else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') { rows.at(-1).push(cell); cell = ''; } else if (ch === '\n') { rows.at(-1).push(cell); cell = ''; rows.push([]); } else cell += ch;
  }
  if (rows.at(-1).length === 0) rows.pop();
  return rows;
}

test('export: the enlarged pattern\'s PNG shows what its box shows, not the canvas\'s rows beyond the text', async (t) => {
  // 100 characters, then 60: the canvas keeps room for 128 tokens and the rows of the longer text
  // below the 60 shown (drawPattern's room); the box shows the top-left 60 x 60.
  const text = 'The cat sat on the mat. The dog ran to the cat. '.repeat(3).slice(0, 100);
  const { context, page, check } = await openView('cs-induction', { model: 'char-2l', text });
  try {
    await page.waitForSelector('cs-induction[data-ready="true"]', { timeout: 60_000 });
    await page.evaluate((s) => /** @type {any} */ (document.querySelector('cs-induction')).update({ text: s }), text.slice(0, 60));
    await page.waitForFunction(() => { const v = document.querySelector('cs-induction'); return v.dataset.version === String(v.store.version) && v.dataset.ready === 'true'; });
    const panel = await page.$('cs-induction section[data-panel="induction-pattern"]');
    await panel.evaluate((p) => p.scrollIntoView({ block: 'start' }));
    const strip = await panel.evaluate((p) => {
      const b = p.getBoundingClientRect();
      const box = p.querySelector('.ind-big-box').getBoundingClientRect();
      const c = p.querySelector('.ind-big-box canvas');
      const r = c.getBoundingClientRect();
      // Below the box, as far down as the canvas reaches inside the panel.
      return { x: box.left - b.left, y: box.bottom - b.top + 1, w: box.width, h: Math.min(r.bottom, b.bottom) - box.bottom - 1, pw: b.width, canvas: [c.width, c.height], page: [b.left, b.top] };
    });
    assert.deepEqual(strip.canvas, [128, 128], 'the canvas has room beyond the 60 tokens');
    assert.ok(strip.h > 100, `the canvas reaches ${Math.round(strip.h)} pixels below its box`);
    // Pattern blue: the darker cells of the palette (text below the box is grey).
    const blue = (png) => inkedInBox(page, png, strip, { ink: 'blue' });
    const shot = await page.screenshot({ clip: { x: strip.page[0], y: strip.page[1], width: strip.pw, height: strip.y + strip.h } });
    const [download] = await Promise.all([page.waitForEvent('download'), panel.evaluate((p) => p.querySelector('.cs-panel-png').click())]);
    const png = readFileSync(await download.path());
    await download.saveAs(path.join(artifacts, 'views-pattern-export.png'));
    const onScreen = await blue(shot), exported = await blue(png);
    t.diagnostic(`below the box: ${onScreen.inked} blue pixels on screen, ${exported.inked} in the PNG, of ${exported.total}`);
    assert.ok(exported.inked <= onScreen.inked + 0.002 * exported.total, `the PNG shows the canvas beyond its box: ${exported.inked} blue pixels below it (${onScreen.inked} on screen)`);
    await check(t);
  } finally {
    await context.close();
  }
});

test('export: form controls in a PNG are clipped as the box that holds them clips them', async (t) => {
  const { context, page, check } = await openView('cs-induction', { model: 'char-2l' });
  try {
    await page.waitForSelector('cs-induction[data-ready="true"]', { timeout: 60_000 });
    // A panel-like box 200 x 120: a 30-pixel box that hides its overflow, holding a text field
    // it shows and, 60 pixels down, a select and a slider it hides.
    await page.evaluate(() => {
      const box = document.createElement('section');
      box.id = 'clip-test';
      box.style.cssText = 'position:absolute;left:0;top:0;width:200px;height:120px;background:#fff;color:#000;z-index:99';
      // Styles set through the CSSOM: the page's CSP refuses style attributes.
      const make = (tag, css, props = {}) => { const e = Object.assign(document.createElement(tag), props); e.style.cssText = css; return e; };
      const clip = make('div', 'height:30px;overflow:hidden');
      const hidden = make('div', 'margin-top:60px');
      const select = make('select', 'width:180px;height:24px');
      select.append(make('option', '', { textContent: 'hidden option text' }));
      hidden.append(select, make('input', 'width:180px', { type: 'range', value: '70' }));
      clip.append(make('input', 'width:150px;height:24px', { type: 'text', value: 'seen' }), hidden);
      box.append(clip);
      document.body.append(box);
    });
    const [download] = await Promise.all([page.waitForEvent('download'),
      page.evaluate(async () => (await import('/parts/download.js')).downloadPNG('clip-test.png', document.getElementById('clip-test')))]);
    const png = readFileSync(await download.path());
    await download.saveAs(path.join(artifacts, 'views-clipped-controls.png'));
    const shown = await inkedInBox(page, png, { x: 0, y: 0, w: 200, h: 30, pw: 200 });
    const below = await inkedInBox(page, png, { x: 0, y: 32, w: 200, h: 88, pw: 200 });
    t.diagnostic(`inside the clipping box ${shown.inked} inked pixels, below it ${below.inked} of ${below.total}`);
    assert.ok(shown.inked > 50, `the text field the box shows is in the PNG (${shown.inked} inked pixels)`);
    assert.equal(below.inked, 0, 'the select and the slider the box hides are not drawn below it');
    await check(t);
  } finally {
    await context.close();
  }
});

test('export: the token strip is in the per-token loss PNG; head scores download as CSV with the core\'s numbers', async (t) => {
  const { context, page, check } = await openView('cs-induction', { model: 'char-2l' });
  try {
    await page.waitForSelector('cs-induction[data-ready="true"]', { timeout: 60_000 });
    const panel = await page.$('cs-induction section[data-panel="induction-tokens"]');
    const box = await panel.evaluate((p) => {
      const b = p.getBoundingClientRect();
      const r = p.querySelector('.tokens').getBoundingClientRect();
      return { x: r.left - b.left, y: r.top - b.top, w: r.width, h: r.height, pw: b.width };
    });
    const [download] = await Promise.all([page.waitForEvent('download'), panel.evaluate((p) => p.querySelector('.cs-panel-png').click())]);
    const png = readFileSync(await download.path());
    await download.saveAs(path.join(artifacts, 'views-tokens-export.png'));
    const { inked, total } = await inkedInBox(page, png, box);
    t.diagnostic(`token strip in the PNG: ${inked} of ${total} pixels not background`);
    assert.ok(inked > 0.2 * total, `the loss-coloured tokens are drawn in the PNG (${inked} of ${total} pixels)`);

    // Head scores: one row per head; the random-token columns are headScores()'s numbers exactly.
    await page.waitForFunction(() => !/…/.test(document.querySelector('cs-induction .ind-scores tbody').textContent));
    const rows = parseCSV(await downloadText(page, 'cs-induction .ind-scores-csv'));
    assert.deepEqual(rows[0].slice(0, 5), ['head', 'layer', 'head_index', 'prefix_matching_text', 'previous_token_text']);
    assert.equal(rows.length, 1 + 8);
    const core = await page.evaluate(async () => {
      const m = await (await import('/store.js')).getModel('char-2l');
      const s = m.headScores();
      return { pm: Array.from(s.prefix_matching.data), copying: Array.from(s.copying.data) };
    });
    const col = (name) => rows[0].indexOf(name);
    rows.slice(1).forEach((r, i) => {
      assert.equal(r[0], `L${Math.floor(i / 4)}H${i % 4}`);
      assert.equal(Number(r[col('prefix_matching_random')]), core.pm[i]);
      assert.equal(Number(r[col('copying_random')]), core.copying[i]);
      assert.ok(Number.isFinite(Number(r[col('prefix_matching_text')])));
    });
    // A column's heading sorts the rows by it, highest first, through the store; pressed again,
    // the heads go back in order.
    const shownOrder = () => page.$$eval('cs-induction .ind-scores tbody tr', (trs) => trs.map((tr) => tr.cells[0].textContent));
    await page.click('cs-induction .ind-sort:has-text("Copying")');
    await page.waitForFunction(() => document.querySelector('cs-induction').store.state.hsort === 'rcopy');
    await page.waitForFunction(() => document.querySelector('cs-induction .ind-scores th[aria-sort="descending"]'));
    const byCopying = rows.slice(1).map((r) => [r[0], Number(r[col('copying_random')])]).sort((x, y) => y[1] - x[1]).map((x) => x[0]);
    assert.deepEqual(await shownOrder(), byCopying);
    assert.notDeepEqual(byCopying, rows.slice(1).map((r) => r[0]), 'the copying column does not already follow head order');
    await page.click('cs-induction .ind-sort:has-text("Copying")');
    await page.waitForFunction(() => document.querySelector('cs-induction').store.state.hsort === null);
    await page.waitForFunction(() => !document.querySelector('cs-induction .ind-scores th[aria-sort="descending"]'));
    assert.deepEqual(await shownOrder(), rows.slice(1).map((r) => r[0]));
    await check(t);
  } finally {
    await context.close();
  }
});

test('export: the Circuits view\'s QK table as shown, composition scores and eigenvalues download as CSV with the core\'s numbers', async (t) => {
  const { context, page, check } = await openView('cs-circuits', { model: 'char-2l', head: 'L1H0' });
  try {
    await page.waitForSelector('cs-circuits[data-ready="true"]', { timeout: 60_000 });
    const core = await page.evaluate(async () => {
      const m = await (await import('/store.js')).getModel('char-2l');
      const q = m.qk(1, 0, { k: 1, table: false, sort: 'none', top: 40 });   // the view's default order: the 40 most varied
      const c = m.composition({ samples: 100 });
      const e = m.eigen(1, 0);
      return { qk: Array.from(q.shown.data), rows: Array.from(q.rows), cols: Array.from(q.cols), vocab: m.tokenizer.vocab, comp: Array.from(c.scores.data), baseline: c.baseline,
        ov: [Array.from(e.ov.re), Array.from(e.ov.im)], qkEig: [Array.from(e.qk.re), Array.from(e.qk.im)] };
    });
    // The table shown: its rows and columns in display order, labelled with their tokens.
    const qk = parseCSV(await downloadText(page, 'cs-circuits section[data-panel="circuits-qk"] .cs-table-csv'));
    const R = core.rows.length, C = core.cols.length;
    assert.equal(qk[0][0], 'dest_token \\ src_token');
    assert.deepEqual(qk[0].slice(1), core.cols.map((j) => core.vocab[j]));
    assert.equal(qk.length, 1 + R);
    for (let i = 0; i < R; i++) {
      assert.equal(qk[1 + i][0], core.vocab[core.rows[i]]);
      for (let j = 0; j < C; j++) assert.equal(Number(qk[1 + i][1 + j]), core.qk[i * C + j]);
    }
    const comp = parseCSV(await downloadText(page, 'cs-circuits .cs-composition-csv'));
    assert.deepEqual(comp[0].slice(0, 3), ['kind', 'src_head', 'dst_head']);
    assert.equal(comp.length, 1 + 3 * 4 * 4, 'Q, K and V from each layer-0 head into each layer-1 head');
    const L = 2, H = 4;
    for (const r of comp.slice(1)) {
      const [k, l1, h1, l2, h2] = ['QKV'.indexOf(r[0]), +r[3], +r[4], +r[5], +r[6]];
      assert.equal(Number(r[7]), core.comp[(((k * L + l1) * H + h1) * L + l2) * H + h2]);
      assert.equal(Number(r[9]), core.baseline);
    }
    const eig = parseCSV(await downloadText(page, 'cs-circuits .cs-eigen-csv'));
    assert.deepEqual(eig[0], ['head', 'circuit', 'rank', 're', 'im', 'copying', 'positive_fraction']);
    assert.equal(eig.length, 1 + core.ov[0].length + core.qkEig[0].length);
    for (const r of eig.slice(1)) {
      const [re, im] = r[1] === 'OV' ? core.ov : core.qkEig;
      assert.equal(r[0], 'L1H0');
      assert.equal(Number(r[3]), re[+r[2]]);
      assert.equal(Number(r[4]), im[+r[2]]);
    }
    await check(t);
  } finally {
    await context.close();
  }
});

test('theme: the header\'s auto / light / dark control recolours the page and its canvases, is kept in localStorage and not in the link', async (t) => {
  const { context, page, check } = await openApp('#v=2&view=circuits&model=char-2l&head=L1H0');
  try {
    await page.waitForSelector('cs-circuits[data-ready="true"]', { timeout: 60_000 });
    // The heatmap's labels (the canvas's margin above the cells): the brightest inked pixel.
    const labelLight = () => page.evaluate(() => {
      const c = document.querySelector('cs-circuits section[data-panel="circuits-qk"] canvas');
      const d = c.getContext('2d').getImageData(0, 0, c.width, 10).data;
      let best = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 200) best = Math.max(best, (d[i] + d[i + 1] + d[i + 2]) / 3);
      return best;
    });
    const look = () => page.evaluate(() => ({ theme: document.documentElement.dataset.theme ?? 'auto', bg: getComputedStyle(document.body).backgroundColor, stored: localStorage.getItem('circuitscope-theme') }));
    assert.equal(await page.$eval('#theme-switch', (s) => s.value), 'auto');
    // The heatmap is drawn afresh (a new canvas) after each change of theme.
    const qkCanvas = 'cs-circuits section[data-panel="circuits-qk"] canvas';
    const markCanvas = () => page.$eval(qkCanvas, (c) => { window.__oldCanvas = c; });
    const redrawn = () => page.waitForFunction((sel) => { const c = document.querySelector(sel); return c && c !== window.__oldCanvas; }, qkCanvas);
    await markCanvas();
    await page.selectOption('#theme-switch', 'dark');
    await page.waitForFunction(() => getComputedStyle(document.body).backgroundColor === 'rgb(21, 24, 28)');
    await redrawn();
    const dark = await look();
    const darkLabels = await labelLight();
    assert.deepEqual([dark.theme, dark.stored], ['dark', 'dark']);
    assert.ok(darkLabels > 180, `the heatmap's labels are light on the dark theme (brightest ${darkLabels})`);
    assert.doesNotMatch(await page.evaluate(() => location.hash), /theme/, 'a display preference, not part of the link');
    await markCanvas();
    await page.selectOption('#theme-switch', 'light');
    await page.waitForFunction(() => getComputedStyle(document.body).backgroundColor === 'rgb(246, 246, 243)');
    await redrawn();
    const lightLabels = await labelLight();
    assert.ok(lightLabels < 120, `the heatmap's labels are dark on the light theme (brightest ${lightLabels})`);
    // Kept across a reload (same browser), and back to the system's choice with auto.
    await page.selectOption('#theme-switch', 'dark');
    await page.reload();
    await page.evaluate(() => {
      window.__violations = [];
      document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    await page.waitForSelector('cs-circuits[data-ready="true"]', { timeout: 60_000 });
    assert.equal(await page.$eval('#theme-switch', (s) => s.value), 'dark');
    assert.equal((await look()).theme, 'dark');
    await page.selectOption('#theme-switch', 'auto');
    assert.deepEqual(await look(), { theme: 'auto', bg: 'rgb(246, 246, 243)', stored: 'auto' });
    await check(t);
  } finally {
    await context.close();
  }
});

// The report's leading-terms rows state the direct path's cosine at each shipped snapshot, counted
// on the text models/index.json names ("step 250 direct 0.51, ..."): the panel must give the same.
for (const [name, row] of [['char-1l', 'leading-terms'], ['bpe-1l', 'leading-terms-bpe']]) {
  test(`training: the gradient leading terms of ${name} from small weights (the committed curve) and over its snapshots, measured when asked, as the report measures them`, async (t) => {
    const { context, page, check } = await openView('cs-training', { model: name });
    try {
      await page.waitForSelector('cs-training[data-ready="true"]', { timeout: 60_000 });
      const panel = 'cs-training section[data-panel="training-leading"]';
      // The seed's own setting, drawn from the committed curve (models/NAME.leading.json) at once.
      await page.waitForSelector(`${panel} .cs-leading-small-chart figure.cs-uplot canvas`, { timeout: 60_000 });
      const curve = await page.evaluate(async (n) => (await fetch(`/models/${n}.leading.json`)).json(), name);
      const last = curve.points.at(-1);
      const status = await page.$eval(`${panel} .cs-leading-small`, (e) => e.textContent);
      assert.equal(status, `Step ${last.step}: direct path ${last.direct.toFixed(3)}, W_U Gram ${last.unembed_gram.toFixed(3)}.`);
      await page.click(`${panel} .cs-leading-measure`);
      await page.waitForSelector(`${panel} [data-measured="true"]`, { timeout: 240_000 });
      await page.waitForSelector(`${panel} figure.cs-uplot canvas`);
      const rows = parseCSV(await downloadText(page, `${panel} .cs-leading-csv`));
      t.diagnostic(`leading terms of ${name}: ${rows.slice(1).map((r) => `step ${r[0]}: direct ${Number(r[1]).toFixed(2)}`).join(', ')}`);
      assert.equal(rows[0][1], 'direct_path_cosine');
      const snaps = await page.evaluate(async (n) => (await (await fetch('/models/manifest.json')).json()).snapshots[n], name);
      assert.equal(rows.length, 1 + snaps.length + 1, 'every snapshot and the final model');
      const report = JSON.parse(readFileSync(path.join(root, 'models', 'report.json'), 'utf8')).claims.find((c) => c.id === row);
      const stated = [...report.measured.matchAll(/step (\d+) direct (-?[\d.]+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
      assert.ok(stated.length >= 3, `the report's ${row} row states the snapshots' cosines: ${report.measured}`);
      const byStep = new Map(rows.slice(1).map((r) => [Number(r[0]), Number(r[1])]));
      for (const [step, cosine] of stated) assert.ok(Math.abs(byStep.get(step) - cosine) < 0.006, `${name} step ${step}: ${byStep.get(step)}, the report ${cosine}`);
      await check(t);
    } finally {
      await context.close();
    }
  });
}

test('training in the page: the IOI recipe advances, pauses, downloads a model that loads back', async (t) => {
  const missing = ['char-2l'].filter((n) => !siteHas(`models/${n}.metrics.json`)).flatMap((n) => [`/models/${n}.metrics.json`, `/models/${n}.safetensors`]);
  const { context, page, check } = await openView('cs-training', { model: 'char-2l' }, { missing });
  try {
    await page.waitForSelector('cs-training[data-ready="true"]', { timeout: 60_000 });
    await page.selectOption('cs-training select[id$="-recipe"]', 'ioi-1l2h');
    await page.click('cs-training button:text-is("Start")');
    await page.waitForFunction(() => +document.querySelector('cs-training').dataset.trainStep >= 20, null, { timeout: 60_000 });
    const s1 = await page.$eval('cs-training', (e) => +e.dataset.trainStep);
    await page.waitForFunction((s) => +document.querySelector('cs-training').dataset.trainStep > s, s1);
    await page.click('cs-training button:text-is("Pause")');
    await page.waitForSelector('cs-training[data-train-state="paused"]');
    const paused = await page.$eval('cs-training', (e) => +e.dataset.trainStep);
    await page.waitForTimeout(600);
    const later = await page.$eval('cs-training', (e) => +e.dataset.trainStep);
    assert.equal(later, paused, 'no steps while paused');
    assert.match(await page.$eval('cs-training .cs-train-status', (e) => e.textContent), new RegExp(`Paused at step ${paused}`));
    assert.ok(await page.$('cs-training .cs-train-chart figure.cs-uplot canvas'), 'a live loss curve');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('cs-training button:text-is("Download model")')]);
    const file = path.join(artifacts, 'views-trained-ioi-1l2h.safetensors');
    await download.saveAs(file);
    const bytes = readFileSync(file);
    assert.ok(bytes.length > 1000);
    await page.waitForSelector('cs-training[data-trained-loaded="true"]');
    // The file loads back in the page's module.
    const loaded = await page.evaluate(async (arr) => {
      const { getModule } = await import('/store.js');
      const cs = await getModule();
      const m = cs.load(new Uint8Array(arr));
      const out = { step: m.info.step, n_heads: m.config.n_heads, accuracy: m.ioiEvaluate().accuracy };
      m.delete();
      return out;
    }, [...bytes]);
    t.diagnostic(`downloaded model: ${bytes.length} bytes, step ${loaded.step}, accuracy ${loaded.accuracy}`);
    assert.equal(loaded.step, paused);
    assert.equal(loaded.n_heads, 2);
    if (existsSync(cli)) {
      execFileSync(cli, ['inspect', file], { stdio: 'pipe' });  // throws unless it exits 0
      t.diagnostic('circuitscope inspect on the downloaded file: exit 0');
    } else {
      t.diagnostic(`${cli} is missing: the CLI check is skipped`);
    }
    await page.click('cs-training button:text-is("Resume")');
    await page.waitForFunction((s) => +document.querySelector('cs-training').dataset.trainStep > s, paused);
    await page.click('cs-training button:text-is("Stop")');
    await page.waitForSelector('cs-training[data-train-state="stopped"]');
    await page.screenshot({ path: path.join(artifacts, 'views-training-run.png'), fullPage: true });

    // The induction recipe (2 layers, 2 heads, d_model 32, batch 64, T 48) to its end: the worker
    // records the head scores every 10 steps, and the view marks the phase change.
    const ind = await trainInPage(page, 'induction-2l');
    t.diagnostic(`in-browser training of the induction recipe: ${ind.stepsPerSecond.toFixed(1)} steps/s, ${ind.steps} steps in ${ind.trainSeconds} s; ` +
      `phase change at step ${ind.phaseChangeStep}, ${ind.phaseChangeSeconds} s after Start`);
    console.log(`# induction recipe in the worker: ${ind.stepsPerSecond.toFixed(1)} steps/s, phase change at step ${ind.phaseChangeStep} (${ind.phaseChangeSeconds} s)`);
    assert.equal(ind.steps, 600, 'the recipe runs its 600 steps');
    // The recipe's induction heads form near step 250 (seed 0; prefix matching 0.03 -> 0.85).
    assert.ok(ind.phaseChangeStep > 0 && ind.phaseChangeStep < 600, `a phase change inside the run (step ${ind.phaseChangeStep})`);
    assert.ok(ind.phaseChangeSeconds > 0 && ind.phaseChangeSeconds < ind.trainSeconds, 'the phase change comes before the end of the run');
    assert.match(await page.$eval('cs-training .cs-train-status', (e) => e.textContent), new RegExp(`Phase change at step ${ind.phaseChangeStep}.*the head that formed first; the head strongest at the end`));
    // The head named after training is said to be the strongest at the end, another moment.
    await page.waitForFunction(() => /at the end of training \(step 600\), the strongest prefix-matching head is L\dH\d/.test(document.querySelector('cs-training')?.textContent ?? ''), null, { timeout: 30_000 });
    assert.deepEqual(await page.$$eval('cs-training .cs-train-chart figure.cs-uplot[data-marker]', (fs) => fs.map((f) => [f.querySelector('.cs-uplot-title').textContent, f.dataset.marker])),
      [['Prefix-matching (induction) score per head', String(ind.phaseChangeStep)]], 'the live prefix-matching chart marks the phase change');

    // The character model trains in the page on the corpus fetched from the site.
    await page.selectOption('cs-training select[id$="-recipe"]', 'char-1l-smeared');
    await page.click('cs-training button:text-is("Start")');
    await page.waitForSelector('cs-training[data-train-state="running"]', { timeout: 120_000 });
    await page.waitForFunction(() => +document.querySelector('cs-training').dataset.trainStep >= 5, null, { timeout: 120_000 });
    const c0 = Date.now();
    const ca = await page.$eval('cs-training', (e) => +e.dataset.trainStep);
    await page.waitForTimeout(8000);
    const cb = await page.$eval('cs-training', (e) => +e.dataset.trainStep);
    // The shipped recipe file, proposed in fewer steps, and saying so.
    assert.match(await page.$eval('cs-training .cs-recipe-about', (e) => e.textContent), /models\/recipes\/char-1l-smeared\.json, the one the CLI trains, here in 1,500 steps instead of its 6,000\./);
    const crate = (cb - ca) / ((Date.now() - c0) / 1000);
    t.diagnostic(`in-browser training of char-1l-smeared on the corpus: ${crate.toFixed(1)} steps/s (its induction head forms near step 300 natively in 1,500 steps: about ${(300 / crate).toFixed(0)} s here)`);
    assert.ok(cb > ca, 'the character model trains in the page');
    await page.click('cs-training button:text-is("Stop")');
    await page.waitForSelector('cs-training[data-train-state="stopped"]');
    await check(t);
  } finally {
    await context.close();
  }
});

test('a panel mounts alone: <cs-panel name="report-claims"> on a page of its own', async (t) => {
  const has = siteHas('models/report.json');
  const { context, page, check } = await openView('cs-panel', { name: 'report-claims' }, { missing: has ? [] : ['/models/report.json'] });
  try {
    await page.waitForSelector('cs-panel[data-ready="true"]', { timeout: 30_000 });
    assert.equal(await page.$eval('cs-panel section h2', (h) => h.textContent), 'Reproduction report: the source papers\' claims, measured');
    if (has) {
      const claims = JSON.parse(readFileSync(path.join(site, 'models', 'report.json'), 'utf8')).claims;
      assert.equal(await page.$$eval('cs-panel tbody tr', (rs) => rs.length), claims.length);
    }
    // Alone on a page, the panel has a store of its own, and leaves its view as it was.
    assert.deepEqual(await page.evaluate(async () => [/** @type {any} */ (document.querySelector('cs-panel')).store.state.view,
      /** @type {any} */ (document.querySelector('cs-panel')).store === (await import('/store.js')).store]), ['induction', false]);
    await check(t);
  } finally {
    await context.close();
  }
});

test('induction: the enlarged pattern opens on the strongest induction head; every control shows keyboard focus', async (t) => {
  const { context, page, check } = await openView('cs-induction', { model: 'char-2l' });
  try {
    await page.waitForSelector('cs-induction[data-ready="true"]', { timeout: 60_000 });
    // The strongest head by the random-token prefix-matching column of the score table.
    const rows = await page.$$eval('cs-induction .ind-scores tbody tr', (trs) => trs.map((tr) => [tr.cells[0].textContent, Number(tr.cells[tr.cells.length - 2].textContent)]));
    const best = rows.reduce((b, r) => (r[1] > b[1] ? r : b))[0];
    assert.match(await page.getAttribute('cs-induction canvas.ind-big', 'aria-label'), new RegExp(`^Attention pattern of ${best} `));
    assert.equal(await page.getAttribute(`cs-induction .ind-head-cell[data-head="${best}"] .ind-head`, 'aria-pressed'), 'true');
    // Hovering a cell of the enlarged pattern names the two tokens and the weight.
    // (The box shows the canvas's top-left T x T cells: the canvas may have room for more.)
    const box = await page.$eval('cs-induction .ind-big-box', (c) => { const r = c.getBoundingClientRect(); return { w: r.width, h: r.height }; });
    await page.hover('cs-induction .ind-big-box', { position: { x: box.w * 0.02, y: box.h * 0.9 } });
    assert.match(await page.textContent('cs-induction .ind-big-hover'), /@\d+ → .* @\d+: attention \d\.\d{3}/);
    assert.ok(await page.$('cs-induction .tok[data-attn]'), 'hovering a row of the pattern shows that token\'s attention in the strip');
    // Tab through the view: every control that takes the focus shows it.
    await page.mouse.move(0, 0);
    await page.focus('cs-induction textarea');
    const seen = [];
    for (let i = 0; i < 40; i++) {
      const f = await page.evaluate(() => {
        const a = document.activeElement;
        if (!a || !a.closest('cs-induction')) return null;
        const s = getComputedStyle(a);
        return { what: `${a.tagName.toLowerCase()}.${a.className} ${a.getAttribute('aria-label') ?? a.textContent.slice(0, 30)}`, outline: s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0 };
      });
      if (!f) break;
      seen.push(f.what);
      assert.ok(f.outline, `keyboard focus is visible on ${f.what}`);
      await page.keyboard.press('Tab');
    }
    assert.ok(seen.some((w) => w.startsWith('span.tok')) && seen.some((w) => /Ablate L1H3/.test(w)), `the focus reaches the tokens and the head grid: ${seen.join(' | ')}`);
    await check(t);
  } finally {
    await context.close();
  }
});

test('induction: char-0l (no attention layers) names no head, and hovering a token works', async (t) => {
  const { context, page, check } = await openView('cs-induction', { model: 'char-0l' });
  try {
    await page.waitForSelector('cs-induction[data-ready="true"]', { timeout: 60_000 });
    await page.hover('cs-induction .tok[data-pos="5"]');
    await page.waitForSelector('cs-induction .ind-top li');
    const text = await page.textContent('cs-induction');
    assert.doesNotMatch(text, /L-1H|0 layers of|null/);
    assert.match(text, /no attention layers/);
    assert.equal(await page.$$eval('cs-induction .ind-head-cell', (c) => c.length), 0);
    await check(t);
  } finally {
    await context.close();
  }
});

test('induction panels mount alone: the enlarged pattern and the token strip', async (t) => {
  for (const name of ['induction-pattern', 'induction-tokens', 'induction-heads', 'induction-scores']) {
    const { context, page, check } = await openView('cs-panel', { name, model: 'char-2l' });
    try {
      await page.waitForSelector('cs-panel[data-ready="true"]', { timeout: 60_000 });
      if (name === 'induction-pattern') assert.match(await page.getAttribute('cs-panel canvas.ind-big', 'aria-label'), /^Attention pattern of L1H1 /);
      if (name === 'induction-tokens') {
        await page.hover('cs-panel .tok[data-pos="20"]');
        assert.equal(await page.$$eval('cs-panel .ind-top li', (e) => e.length), 5);
      }
      if (name === 'induction-heads') {
        // Eight slots, drawn on one canvas laid over them (parts/thumb-sheet.js).
        assert.equal(await page.$$eval('cs-panel .ind-thumb', (e) => e.length), 8);
        assert.equal(await page.$$eval('cs-panel canvas', (e) => e.map((c) => c.className).join()), 'cs-sheet');
      }
      if (name === 'induction-scores') assert.equal(await page.$$eval('cs-panel .ind-scores tbody tr', (e) => e.length), 8);
      await check(t);
    } finally {
      await context.close();
    }
  }
});

// One rule for the head a view opens on (the core's defaultHead()): Induction, Circuits and a
// lone panel all show the same head of char-2l, the strongest induction head.
test('one default head: Induction, Circuits and a panel alone open on the core\'s defaultHead()', async (t) => {
  const want = await (async () => {
    const { context, page } = await openApp('#v=2&view=induction&model=char-2l');
    try {
      await page.waitForSelector('cs-induction[data-ready="true"]', { timeout: 60_000 });
      const r = await page.evaluate(async () => {
        const { getModel } = await import('/store.js');
        const m = await getModel('char-2l');
        return { core: m.defaultHead().name, shown: /** @type {any} */ (document.querySelector('cs-induction')).lastResult?.head };
      });
      assert.equal(r.shown, r.core, 'Induction opens on another head than the core\'s default');
      return r.core;
    } finally {
      await context.close();
    }
  })();
  {
    const { context, page, check } = await openApp('#v=2&view=circuits&model=char-2l');
    try {
      await page.waitForSelector('cs-circuits[data-ready="true"]', { timeout: 60_000 });
      assert.equal(await page.inputValue('cs-circuits select[id$="-head"]'), want, 'Circuits opens on another head');
      await check(t);
    } finally {
      await context.close();
    }
  }
  {
    const { context, page, check } = await openView('cs-panel', { name: 'induction-pattern', model: 'char-2l' });
    try {
      await page.waitForSelector('cs-panel[data-ready="true"]', { timeout: 60_000 });
      assert.match(await page.getAttribute('cs-panel canvas.ind-big', 'aria-label'), new RegExp(`^Attention pattern of ${want} `), 'a lone panel names another head');
      await check(t);
    } finally {
      await context.close();
    }
  }
});

test('report: the claims of models/report.json, each linking to its view', async (t) => {
  const has = siteHas('models/report.json');
  const { context, page, check } = await openView('cs-report', {}, { missing: has ? [] : ['/models/report.json'] });
  try {
    await page.waitForSelector('cs-report[data-ready="true"]', { timeout: 30_000 });
    if (!has) {
      t.diagnostic('models/report.json is missing from the site: only the "not available" message is checked');
      assert.match(await page.$eval('cs-report [data-missing="report"]', (e) => e.textContent), /not available/);
    } else {
      const report = JSON.parse(readFileSync(path.join(site, 'models', 'report.json'), 'utf8'));
      const claims = report.claims;
      // The headline is the core's count of each outcome, not a count of "reproduced" alone.
      const headline = await page.$eval('cs-report .cs-note', (e) => e.textContent);
      assert.ok(headline.startsWith(report.summary.sentence), headline);
      assert.match(headline, /\d+ of \d+ claims reproduced; \d+ partly .*; \d+ not reproduced .*; \d+ measured/);
      const marks = await page.$$eval('cs-report tbody tr td:nth-child(5)', (ts) => ts.map((x) => x.textContent.slice(0, 1)));
      const MARK = { reproduced: '✓', partly: '◐', 'not reproduced': '✗', measured: '–' };
      assert.deepEqual(marks, claims.map((c) => MARK[c.outcome]));
      const rows = await page.$$eval('cs-report tbody tr', (rs) => rs.map((r) => ({ id: r.dataset.id, text: r.textContent, href: r.querySelector('a')?.getAttribute('href') })));
      t.diagnostic(`report: ${rows.length} claims`);
      assert.equal(rows.length, claims.length);
      // Each row links to the report's view as a versioned link the page's codec reads back to
      // the same settings (the report itself writes them without the page's version).
      const { decodeHash } = await import(pathToFileURL(path.join(site, 'store.js')).href);
      claims.forEach((c, i) => {
        assert.ok(rows[i].text.includes(c.claim));
        const got = decodeHash(rows[i].href);
        const want = decodeHash(`v=1&${c.view.slice(1)}`);   // the report writes version-1 links
        assert.equal(got.error, null, `${c.id}: ${rows[i].href}`);
        assert.equal(want.error, null, `${c.id}: ${c.view}`);
        assert.deepEqual(got.state, want.state, c.id);
      });
    }
    await page.screenshot({ path: path.join(artifacts, 'views-report.png'), fullPage: true });
    await check(t);
  } finally {
    await context.close();
  }
});
