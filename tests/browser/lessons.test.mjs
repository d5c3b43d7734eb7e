// The shipped lessons (web/lessons/*.md), followed as a student would in the whole app: for every
// step, open it from the lesson's list of steps, see that its check is not yet met, do what the
// step asks with the page's own controls (where a step names one control, touching it alone
// must not pass), and wait for the check to turn green. Progress goes into the link: reopening
// the last link shows every step done. Also: a lesson opened from the list (its first step's
// state, its panel outlined once the view has loaded, its ticks kept in the browser and said in
// words); a teacher's own lesson, written from docs/lessons.md alone, pasted into the page;
// a pasted lesson's problems shown open (nesting 5,000 deep among them); a hostile lesson file
// (scripts, event handlers, javascript: and http: links, frames, styles, images by ..) that must
// run nothing; the glossary links. Screenshots go to test-artifacts/lesson-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from './chromium.mjs';
import { startServer } from '../../scripts/serve.mjs';
import { VIEW_SETTLED } from './settled.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.join(root, 'build', 'site');
const artifacts = path.join(root, 'test-artifacts');
mkdirSync(artifacts, { recursive: true });

let server;
let browser;
before(async () => {
  assert.ok(existsSync(path.join(site, 'lessons', 'index.json')), 'build/site has no lessons: run scripts/build.sh site');
  server = await startServer({ root: site, port: 0 });
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

async function open(hash) {
  const context = await browser.newContext({ viewport: { width: 1300, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('dialog', (d) => { errors.push(`dialog: ${d.message()}`); d.dismiss(); });
  await page.goto(`http://127.0.0.1:${server.port}/${hash}`);
  return { context, page, errors };
}

const settle = (page) => page.waitForFunction(VIEW_SETTLED, 0, { timeout: 60_000, polling: 100 });
const met = (page) => page.$eval('.cs-lesson-check', (e) => e.dataset.met);

// What a student does at each step, with the page's controls (never the store).
const thumb = (name) => (p) => p.click(`cs-induction button[aria-label^="${name}:"]`);
const ablate = (name) => (p) => p.click(`cs-induction button[aria-label="Ablate ${name}"]`);
const ioiNames = (io, s) => async (p) => {
  await p.fill('cs-ioi input[id^="cs-ioi-seq-"][id$="-io"]', io);
  await p.fill('cs-ioi input[id^="cs-ioi-seq-"][id$="-s"]', s);
};
const STUDENT = {
  'induction-heads': [
    async (p) => { await p.fill('#ind-text', 'The quick brown fox jumps over'); await p.click('cs-induction button:text("Repeat my text")'); },
    thumb('L1H1'),
    ablate('L1H1'),
    async (p) => { await p.click('cs-induction button:text("Clear ablations")'); await settle(p); await ablate('L0H1')(p); },
  ],
  'phase-change': [
    async (p) => { await p.selectOption('cs-training select[id$="-recipe"]', 'induction-2l'); await p.click('cs-training button:text-is("Start")'); },
    (p) => p.selectOption('#snapshot-switch', 'step2000'),
    (p) => p.selectOption('#snapshot-switch', 'step2000'),
    (p) => p.selectOption('#snapshot-switch', 'step7000'),
  ],
  'one-layer-circuits': [
    (p) => p.selectOption('cs-circuits select[id$="-sort"]', 'both'),
    (p) => p.selectOption('cs-circuits select[id$="-head"]', 'L0H2'),
    (p) => p.selectOption('cs-circuits select[id$="-head"]', 'L0H0'),
    (p) => p.selectOption('cs-circuits select[id$="-head"]', 'L0H2'),
  ],
  composition: [
    async (p) => { await p.click('cs-induction button:text("Repeat my text")'); await settle(p); await thumb('L0H1')(p); },
    (p) => p.selectOption('cs-circuits select[id$="-head"]', 'L1H1'),
    (p) => p.selectOption('#ind-cut', 'k'),
    (p) => p.selectOption('#ind-cut', 'v'),
  ],
  'ioi-circuit': [
    (p) => p.selectOption('#model-switch', 'ioi-1l2h'),
    async (p) => { await p.selectOption('cs-ioi select[id$="-order"]', 'SIOS'); await settle(p); await ioiNames('C', 'D')(p); },
    async (p) => { await p.check('cs-ioi input[id$="-nopos"]'); await settle(p); await ioiNames('C', 'D')(p); },
    (p) => p.selectOption('cs-ioi select[id$="-cut"]', 'q'),
  ],
};

// The control a step names, touched alone without looking at what it shows: a check must not be
// met by that (a step with no possible wrong answer teaches nothing). By lesson, by step.
const SHORTCUT = {
  'ioi-circuit': {
    1: (p) => p.selectOption('cs-ioi select[id$="-order"]', 'SIOS'),
    2: (p) => p.check('cs-ioi input[id$="-nopos"]'),
  },
};

const lessons = JSON.parse(readFileSync(path.join(root, 'web', 'lessons', 'index.json'), 'utf8')).lessons;

test('every shipped lesson has a student script here', () => {
  assert.deepEqual(lessons.map((l) => l.name).sort(), Object.keys(STUDENT).sort());
});

for (const { name } of lessons) {
  test(`lesson ${name}: each step opens, its check waits for the experiment, then turns green`, { timeout: 600_000 }, async (t) => {
    const { context, page, errors } = await open(`#v=2&lesson=${name}`);
    try {
      await page.waitForSelector('cs-lesson[data-ready="true"]');
      const steps = await page.$$eval('.cs-lesson-steps > li', (l) => l.length);
      assert.equal(steps, STUDENT[name].length, 'a student action for every step');
      for (let i = 0; i < steps; i++) {
        await page.click(`.cs-lesson-steps > li:nth-child(${i + 1}) > a`);
        await page.waitForFunction((i) => document.querySelector('cs-lesson')?.dataset.step === String(i) && document.querySelector('cs-lesson').dataset.ready === 'true', i);
        await settle(page);
        await page.waitForTimeout(300);   // a check runs after the view settles
        assert.equal(await met(page), 'false', `step ${i + 1}'s check is not met before the experiment`);
        if (SHORTCUT[name]?.[i]) {
          const v = await page.evaluate(() => window.__cs.store.version);
          await SHORTCUT[name][i](page);
          await page.waitForFunction(VIEW_SETTLED, v + 1);
          await page.waitForTimeout(300);
          assert.equal(await met(page), 'false', `step ${i + 1}'s check is met by touching its control alone`);
        }
        if (name === 'induction-heads' && i > 0) assert.match(await page.inputValue('#ind-text'), /^The quick brown fox/, 'the step kept the text the reader typed (keep: text)');
        await STUDENT[name][i](page);
        await page.waitForSelector('.cs-lesson-check[data-met="true"]', { timeout: 240_000 }).catch(async (e) => {
          const seen = await page.$$eval('.cs-lesson-conditions li', (l) => l.map((x) => `${x.textContent}: ${x.dataset.met}`)).catch(() => []);
          throw new Error(`step ${i + 1}'s check did not turn green (${seen.join('; ')}): ${e.message.split('\n')[0]}`);
        });
        await page.waitForFunction((i) => new URLSearchParams(location.hash.slice(1)).get('done')?.split(',').includes(String(i)), i);
        if (i === 0) await page.screenshot({ path: path.join(artifacts, `lesson-${name}.png`) });
      }
      // Progress lives in the link: a new page on the last link shows every step done.
      const hash = await page.evaluate(() => location.hash);
      const again = await open(hash);
      try {
        await again.page.waitForSelector('cs-lesson[data-ready="true"]');
        const done = await again.page.$$eval('.cs-lesson-steps > li', (l) => l.map((x) => x.dataset.done));
        assert.deepEqual(done, done.map(() => 'true'), 'every step shows done after reopening the link');
        assert.deepEqual(again.errors, []);
      } finally {
        await again.context.close();
      }
      assert.deepEqual(errors, [], 'no page error');
      t.diagnostic(`${name}: ${steps} steps done`);
    } finally {
      await context.close();
    }
  });
}

// A lesson opened from the list, in a page showing another view: it opens its first step's own
// link (not the page's state), its panel is outlined once that view has loaded, and, opened
// again from the list, it keeps the step done (with words for screen readers, not a tick only).
test('a lesson opened from the list opens its first step, outlines its panel once loaded, and keeps its ticks', { timeout: 120_000 }, async () => {
  const { context, page, errors } = await open('#v=2&view=induction&model=char-2l&lesson=index');
  const ready = (name) => page.waitForFunction((n) => document.querySelector('cs-lesson')?.dataset.lesson === n && document.querySelector('cs-lesson').dataset.ready === 'true', name);
  const state = () => page.evaluate(() => { const s = window.__cs.store.state; return { view: s.view, model: s.model, step: s.step, done: s.done }; });
  try {
    await settle(page);
    await page.click('cs-lesson a[data-lesson="ioi-circuit"]');
    await ready('ioi-circuit');
    await settle(page);
    assert.deepEqual(await state(), { view: 'ioi', model: 'ioi-1l1h', step: null, done: [] }, "the first step's link, not the page's state");
    await page.waitForSelector('#view-host .view:not([hidden]) section.cs-lesson-focus[data-panel="ioi-prediction"]', { timeout: 10_000 });
    assert.equal(await met(page), 'false');
    await page.selectOption('#model-switch', 'ioi-1l2h');
    await page.waitForSelector('.cs-lesson-check[data-met="true"]');
    assert.doesNotMatch(await page.textContent('.cs-lesson-steps > li:nth-child(2)'), /done/);
    assert.match(await page.textContent('.cs-lesson-steps > li:nth-child(1)'), /\(done\)/, 'a done step says so in words');
    // Away to the list and back: the step is still done, and the lesson opens its first step again.
    await page.click('.cs-lesson-crumbs a');
    await ready('index');
    await page.click('cs-lesson a[data-lesson="ioi-circuit"]');
    await ready('ioi-circuit');
    await settle(page);
    assert.deepEqual(await state(), { view: 'ioi', model: 'ioi-1l1h', step: null, done: ['0'] }, 'the steps done are kept in the browser');
    assert.deepEqual(await page.$$eval('.cs-lesson-steps > li', (l) => l.map((x) => x.dataset.done)), ['true', 'false', 'false', 'false']);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
  // A step's link opened in a fresh page: the panel is outlined once its view has loaded.
  const fresh = await open('#v=2&view=ioi&model=ioi-1l2h&lesson=ioi-circuit&step=1');
  try {
    await fresh.page.waitForSelector('#view-host .view:not([hidden]) section.cs-lesson-focus[data-panel="ioi-heads"]', { timeout: 20_000 });
    assert.deepEqual(fresh.errors, []);
  } finally {
    await fresh.context.close();
  }
});

test('a glossary link in a lesson opens its entry beside the step', async () => {
  const { context, page, errors } = await open('#v=2&lesson=induction-heads');
  try {
    await page.waitForSelector('cs-lesson[data-ready="true"]');
    await page.click('.cs-lesson-step a[data-glossary="loss"]');
    await page.waitForSelector('.cs-lesson-term h3');
    assert.match(await page.textContent('.cs-lesson-term'), /nats/);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

// A teacher's lesson, written from docs/lessons.md ("Writing a lesson") alone.
const TEACHER = `# My first lesson

Read the model's guess for a name.

## Swap the order

\`\`\`step
link: #v=2&view=ioi&model=ioi-1l2h
panel: ioi-prediction
\`\`\`

Change the order to S IO S.

\`\`\`check
when: order is SIOS
when: probIO > 0.5
hint: Use the order menu.
say: Well done.
\`\`\`
`;

test("a teacher's own lesson, pasted into the page, opens and its check works", async () => {
  const { context, page, errors } = await open('#v=2');
  try {
    await settle(page);
    await page.click('#open-lessons');
    await page.waitForSelector('.cs-lesson-paste');
    await page.click('.cs-lesson-paste summary');
    await page.fill('.cs-lesson-paste textarea', TEACHER);
    await page.click('.cs-lesson-paste button');
    await page.waitForFunction(() => document.querySelector('cs-lesson')?.dataset.lesson === 'pasted' && document.querySelector('cs-lesson').dataset.ready === 'true');
    await settle(page);
    assert.equal(await page.evaluate(() => window.__cs.store.state.view), 'ioi', 'the step opened its link');
    assert.equal(await met(page), 'false');
    await page.selectOption('cs-ioi select[id$="-order"]', 'SIOS');
    await page.waitForSelector('.cs-lesson-check[data-met="true"]');
    assert.equal(await page.$('.cs-lesson-problems'), null, 'the lesson has no problems');
    assert.deepEqual(errors, []);
    // The link carries the lesson: a student opens it with nothing else.
    await page.click('#copy-link');
    const link = await page.inputValue('#copy-text');
    const student = await open(new URL(link).hash);
    try {
      await student.page.waitForFunction(() => document.querySelector('cs-lesson')?.dataset.ready === 'true');
      assert.match(await student.page.textContent('cs-lesson h2'), /My first lesson/);
      await student.page.waitForSelector('.cs-lesson-check[data-met="true"]');
      assert.deepEqual(student.errors, []);
    } finally {
      await student.context.close();
    }
  } finally {
    await context.close();
  }
});

// A pasted lesson nested 5,000 deep, with a mistake: the page says so in words, above the steps
// where the reader looks, and goes on working.
test("a pasted lesson's problems show open, and nesting thousands deep is one of them, in words", async () => {
  const { context, page, errors } = await open('#v=2');
  try {
    await settle(page);
    await page.click('#open-lessons');
    await page.click('.cs-lesson-paste summary');
    await page.fill('.cs-lesson-paste textarea', `# Deep\n\n## One\n\n${'>'.repeat(5000)} very deep\n\n\`\`\`check\nwhen: secondLoss > 1\n\`\`\`\n\n## Two\n\nText.\n`);
    await page.click('.cs-lesson-paste button');
    await page.waitForFunction(() => document.querySelector('cs-lesson')?.dataset.lesson === 'pasted' && document.querySelector('cs-lesson').dataset.ready === 'true');
    await page.waitForSelector('.cs-lesson-problems[role="alert"] li', { state: 'visible', timeout: 5_000 });
    const said = await page.textContent('.cs-lesson-problems');
    assert.match(said, /line 5: quotes and lists nest 5,000 deep/);
    assert.match(said, /no measure "secondLoss"/);
    assert.doesNotMatch(await page.textContent('cs-lesson'), /call stack/i);
    assert.match(await page.textContent('.cs-lesson-step'), /very deep/);
    await page.click('.cs-lesson-way a:text("Next")');
    await page.waitForFunction(() => document.querySelector('cs-lesson')?.dataset.step === '1' && document.querySelector('cs-lesson').dataset.ready === 'true');
    assert.equal(await page.getAttribute('.cs-lesson-problems', 'role'), 'note', 'shown at every step, announced once');
    assert.ok(await page.isVisible('#view-host'), 'the page still shows its view');
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

// Every way a lesson file could try to run code or reach out. The page's policy refuses inline
// code anyway; the sanitizer must also leave nothing of it in the page.
const HOSTILE = `# Hostile <script>window.__pwned = 1</script>

<img src=x onerror="window.__pwned = 2">
<svg><script>window.__pwned = 3</script></svg>
<iframe src="javascript:window.__pwned = 4"></iframe>

## Step <b onmouseover="window.__pwned = 5">one</b>

[click](javascript:window.__pwned=6) [data](data:text/html,<script>alert(1)</script>)
<a href="https://example.com" onclick="window.__pwned = 7">out</a>
<style>body { display: none }</style>
<form action="https://example.com"><input name=x></form>
<math><mi xlink:href="javascript:alert(1)">x</mi></math>
<div style="background:url(https://example.com/x.png)">styled</div>
<img src="https://example.com/track.png">

[plain http](http://example.com/page) ![up](../models/index.json) ![up again](img/../../README.md) ![fine](img/lesson.png)

\`\`\`step
link: #v=2&view=induction&text=%3Cscript%3Ewindow.__pwned%3D8%3C%2Fscript%3E
\`\`\`

\`\`\`check
when: text is <img src=x onerror=window.__pwned=9>
hint: <img src=x onerror="window.__pwned = 10">
say: <script>window.__pwned = 11</script>
\`\`\`
`;

test('a hostile lesson file runs no script and leaves no active content in the page', async () => {
  const { context, page } = await open('#v=2');
  const requests = [];
  page.on('request', (r) => { if (!r.url().startsWith(`http://127.0.0.1:${server.port}/`) && !r.url().startsWith('data:')) requests.push(r.url()); });
  try {
    await settle(page);
    await page.click('#open-lessons');
    await page.click('.cs-lesson-paste summary');
    await page.fill('.cs-lesson-paste textarea', HOSTILE);
    await page.click('.cs-lesson-paste button');
    await page.waitForFunction(() => document.querySelector('cs-lesson')?.dataset.lesson === 'pasted' && document.querySelector('cs-lesson').dataset.ready === 'true');
    await settle(page);
    await page.hover('.cs-lesson-step h3').catch(() => {});
    await page.click('.cs-lesson-step a:text("click")').catch(() => {});
    await page.waitForTimeout(500);
    assert.equal(await page.evaluate(() => window.__pwned), undefined, 'no script ran');
    const active = await page.$$eval('cs-lesson script, cs-lesson iframe, cs-lesson style, cs-lesson form, cs-lesson svg, cs-lesson math, cs-lesson [style]', (n) => n.map((x) => x.outerHTML.slice(0, 80)));
    assert.deepEqual(active, [], 'no script, frame, style or form left');
    const images = await page.$$eval('cs-lesson img', (n) => n.map((x) => /** @type {HTMLImageElement} */ (x).src));
    assert.ok(images.every((src) => src.startsWith(`http://127.0.0.1:${server.port}/`)), `images only from the site: ${images}`);
    const paths = await page.$$eval('cs-lesson img', (n) => n.map((x) => x.getAttribute('src')));
    assert.deepEqual(paths, ['img/lesson.png'], 'no image by a path with ..');
    assert.deepEqual(await page.$$eval('cs-lesson a[href]', (n) => n.map((x) => x.getAttribute('href')).filter((h) => /^http:/i.test(h))), [], 'no http: link');
    assert.ok(await page.isVisible('cs-lesson a:text("plain http")') || await page.isVisible('cs-lesson :text("plain http")'), 'its text stays');
    const handlers = await page.$$eval('cs-lesson *', (n) => n.flatMap((x) => [...x.attributes].filter((a) => /^on/i.test(a.name) || /javascript:|data:/i.test(a.value)).map((a) => `${x.localName} ${a.name}`)));
    assert.deepEqual(handlers, [], 'no event handler or script URL left');
    assert.deepEqual(requests, [], 'no request left the page\'s origin');
    assert.ok(await page.isVisible('#view-host'), 'the page still shows its view');
  } finally {
    await context.close();
  }
});

test('the glossary page shows every entry of lessons/glossary.md, each at its anchor', async () => {
  const { context, page, errors } = await open('glossary.html#phase-change');
  try {
    await page.waitForSelector('body[data-ready="true"]');
    const ids = await page.$$eval('.glossary-list dt', (d) => d.map((x) => x.id));
    const file = readFileSync(path.join(root, 'web', 'lessons', 'glossary.md'), 'utf8');
    assert.deepEqual(ids, [...file.matchAll(/^## .*\{#([a-z0-9-]+)\}\s*$/gm)].map((m) => m[1]));
    assert.ok(ids.length >= 25, `${ids.length} entries`);
    assert.match(await page.textContent('#phase-change + dd'), /induction heads form/);
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});
