// Opening model files in the page (web/open-model.js, web/local-models.js, the header's "Open a
// model file" and drag-and-drop in web/app.js), in the whole app served from build/site with the
// page's content security policy as a header, in Debian's Chromium:
//  (a) a model trained in the page opens in the explorer ("Open it in the explorer") and every
//      view that offers it settles with it, its name in the model picker, and no page error;
//  (b) a shipped model's file and the same model in TransformerLens layout (tests/js/tlens-fixture.mjs)
//      open through the file input; the TransformerLens one shows the core's note and token ids;
//  (b2) a TransformerLens .pth written by torch.save (Debian's python3-torch) opens when chosen
//      together with its config.json, and is refused in words alone; a config.json alone too;
//  (b3) a TransformerLens model with LayerNorm and GELU MLPs (tests/reference/make_models.py) opens
//      and every view that offers it settles, with no page error;
//  (b5) a TransformerLens state dict with GPT-2's vocabulary opens with a tokenizer.json beside
//      it and reads typed text with it (␣ for a space); a tokenizer.json alone or a broken one
//      is refused in words;
//  (b4) a 43 MB file shows its reading progress in the status line before it opens, in a WebAssembly
//      instance of its own: closing it (and a refused file) gives all its memory back;
//  (c) a file dropped on the page opens (a drop event with a DataTransfer built in the page), and
//      the drop hint shows while it is dragged;
//  (d) corrupt files (truncated; metadata strings holding <img onerror> and <script>) give the
//      loader's sentence in the status area, run no script, and the view keeps working; a model
//      whose vocabulary holds such strings opens and shows them as text;
//  (e) a link to model=local:NAME opened in a fresh page says the recipient needs the file, shows
//      the default view, and shows the linked view once that file is opened;
//  (f) several checkpoints of one run chosen together open as its training: char-2l's snapshots
//      with a held-out .txt draw the Training view's curves from the core's scores, the phase
//      change where the run's own records put it, and each checkpoint is a snapshot the views
//      use; TransformerLens .pth checkpoints (checkpoints/NAME_N.pth) with their config.json and
//      no tokenizer get head scores only; two checkpoints with one number are refused in words.
// Nothing is uploaded: no request made while opening files carries a body or leaves the site's
// GET requests. Needs `npm run build`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, startCspProxy, trainInPage } from './chromium.mjs';
import { VIEW_SETTLED } from './settled.mjs';
import { tlVocabFixture, toTransformerLens } from '../js/tlens-fixture.mjs';
import { gpt2TokenizerJson } from '../js/hf-tokenizer-files.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data: blob:; worker-src 'self'";

let server;
let browser;
let tmp;

before(async () => {
  assert.ok(existsSync(path.join(site, 'open-model.js')), `${site}/open-model.js is missing: run \`npm run build\` (or copy web/ into build/site)`);
  tmp = mkdtempSync(path.join(os.tmpdir(), 'cs-openfile-'));
  server = await startCspProxy(site, CSP);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** Opens the app at `hash`, recording page errors, console errors and every request. */
async function openApp(hash = '') {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems = [];
  const requests = [];
  page.on('console', (msg) => { if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`); });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('request', (req) => requests.push({ method: req.method(), url: req.url(), body: req.postData() }));
  await page.goto(`${server.origin}/${hash}`);
  await settle(page);
  return { context, page, problems, requests };
}

/** Waits until the page shows the store's state (tests/browser/settled.mjs). */
async function settle(page, timeout = 60_000) {
  await page.waitForFunction(VIEW_SETTLED, { complete: true }, { timeout });
}

const state = (page) => page.evaluate(() => window.__cs.store.state);
// What the page says: a refusal in the alert box (#app-error, role=alert), anything else in the
// status line.
const status = (page) => page.evaluate(() => {
  const error = document.querySelector('#app-error');
  return error && !error.hidden && error.textContent ? error.textContent : document.querySelector('#app-status').textContent;
});

/** Visits a view by its tab and checks it settles showing `name` (the picker's value, and in its text). */
async function visit(page, view, name) {
  await page.click(`#tab-${view}`);
  await page.waitForFunction((v) => window.__cs.store.state.view === v, view);
  await settle(page);
  const s = await state(page);
  assert.equal(s.model, name, `the ${view} view keeps ${name}`);
  assert.equal(await page.inputValue('#model-switch'), name, `the ${view} view's picker shows ${name}`);
  const text = await page.$eval(`cs-${view}`, (e) => e.textContent);
  assert.ok(text.includes(name), `the ${view} view names ${name}`);
}

/** Sets files on the header's file input and waits until the page says opened or failed. */
async function chooseFile(page, file) {
  await page.evaluate(() => { delete document.body.dataset.openFile; });
  await page.setInputFiles('#open-file-input', file);
  await page.waitForFunction(() => ['opened', 'failed'].includes(document.body.dataset.openFile));
  return page.evaluate(() => document.body.dataset.openFile);
}

/** A safetensors file with its header's __metadata__ changed by fn (offsets stay valid). */
function withMetadata(bytes, fn) {
  const n = Number(Buffer.from(bytes).readBigUInt64LE(0));
  const header = JSON.parse(Buffer.from(bytes.subarray(8, 8 + n)).toString('utf8'));
  header.__metadata__ = fn(header.__metadata__ ?? {});
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([len, json, Buffer.from(bytes.subarray(8 + n))]);
}

const uploads = (requests) => requests.filter((r) => r.method !== 'GET' || r.body || !r.url.startsWith(server.origin));

test('(a) a model trained in the page opens in the explorer and in every view that offers it', async () => {
  const { context, page, problems, requests } = await openApp('#v=2&view=training');
  try {
    await trainInPage(page, 'induction-2l', { steps: 60 });
    const button = 'cs-training button:text-is("Open it in the explorer")';
    assert.ok(await page.isVisible(button), 'the button sits beside Download');
    assert.doesNotMatch(await page.textContent('cs-training .cs-train-status'), /Download the model to open it here/);
    await page.click(button);
    await page.waitForFunction(() => window.__cs.store.state.view === 'induction' && window.__cs.store.state.model?.startsWith('local:'));
    await settle(page);
    const name = (await state(page)).model;
    assert.equal(name, 'local:induction-2l-step60');
    assert.match(await status(page), /Opened induction-2l-step60\.safetensors as local:induction-2l-step60 .*nothing is uploaded/);
    const option = await page.$eval(`#model-switch option[value="${name}"]`, (o) => o.textContent);
    assert.match(option, /local file/);
    // Word-level (synthetic) vocabulary: the text box holds the core's repeated random tokens.
    const text = await page.inputValue('cs-induction textarea');
    assert.match(text, /^(t\d+ )+t\d+$/, `sample text of the word vocabulary: ${text}`);
    assert.equal(await page.$eval('cs-induction', (e) => e.dataset.model), name);
    for (const view of ['circuits', 'training', 'induction']) await visit(page, view, name);
    assert.match(await page.textContent('cs-training'), /model file opened in this page: a model file carries no training records/);
    await page.click('#tab-report');
    await settle(page);
    assert.deepEqual(uploads(requests), []);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('(b) a shipped model file and one in TransformerLens layout open through the file input', async () => {
  const shipped = path.join(tmp, 'char-2l.safetensors');
  writeFileSync(shipped, readFileSync(path.join(site, 'models', 'char-2l.safetensors')));
  const tlens = path.join(tmp, 'tl char 2l.safetensors');   // a space: the name is made safe
  writeFileSync(tlens, toTransformerLens(readFileSync(path.join(site, 'models', 'char-2l.safetensors'))));
  const { context, page, problems, requests } = await openApp();
  try {
    assert.equal(await chooseFile(page, shipped), 'opened');
    await settle(page);
    assert.deepEqual([(await state(page)).view, (await state(page)).model], ['induction', 'local:char-2l']);
    // The same name again gets a suffix.
    assert.equal(await chooseFile(page, shipped), 'opened');
    await settle(page);
    assert.equal((await state(page)).model, 'local:char-2l-2');

    assert.equal(await chooseFile(page, tlens), 'opened');
    await settle(page);
    const s = await state(page);
    assert.equal(s.model, 'local:tl-char-2l');
    assert.match(await status(page), /TransformerLens state dict.*token ids separated by spaces/);
    assert.match(await page.textContent('cs-induction .ind-status'), /token-id vocabulary of 82 \(the file carries no tokenizer\)\. A TransformerLens state dict/);
    assert.match(await page.textContent('cs-induction label[for="ind-text"]'), /token ids separated by spaces/);
    const text = await page.inputValue('cs-induction textarea');
    assert.match(text, /^(\d+ )+\d+$/, `token-id sample text: ${text}`);
    // Typed ids run through the core's tokenizer.
    await page.fill('cs-induction textarea', '5 6 7 8 9 5 6 7 8 9');
    await page.waitForFunction(() => document.querySelector('cs-induction').lastResult?.T === 10);
    await visit(page, 'circuits', 'local:tl-char-2l');
    assert.deepEqual(uploads(requests), []);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

// torch.save of the state dict in a TransformerLens safetensors file (what the hub's .pth are).
function torchSave(safetensorsPath, pthPath) {
  const py = `
import json, sys, collections, numpy as np, torch
raw = open(sys.argv[1], 'rb').read()
n = int.from_bytes(raw[:8], 'little'); header = json.loads(raw[8:8 + n]); data = raw[8 + n:]
kinds = {'F32': np.float32, 'BOOL': np.bool_}
sd = collections.OrderedDict()
for name, e in header.items():
    if name == '__metadata__': continue
    b, end = e['data_offsets']
    a = np.frombuffer(data[b:end], dtype=kinds[e['dtype']]).reshape(e['shape'])
    sd[name] = torch.from_numpy(a.copy())
sd['unembed.W_U'] = sd['unembed.W_U'].t().contiguous().t()  # a strided view, as a transposed weight saves
torch.save(sd, sys.argv[2])`;
  const r = spawnSync('/usr/bin/python3', ['-c', py, safetensorsPath, pthPath], { encoding: 'utf8' });
  assert.equal(r.status, 0, `torch.save failed (npm test installs python3-torch): ${r.stderr}`);
}

test('(b2) a TransformerLens .pth opens with its config.json, and is refused in words without it', async () => {
  const st = path.join(tmp, 'tl-ioi.safetensors');
  writeFileSync(st, toTransformerLens(readFileSync(path.join(site, 'models', 'ioi-2l1h.safetensors')), { metadata: null }));
  const pth = path.join(tmp, 'model_final.pth');
  torchSave(st, pth);
  const config = path.join(tmp, 'config.json');
  writeFileSync(config, JSON.stringify({ n_layers: 2, d_model: 32, n_heads: 1, d_head: 16, n_ctx: 5, d_vocab: 8,
    normalization_type: null, positional_embedding_type: 'standard', attn_only: true, act_fn: null, eps: 1e-5, model_name: 'ioi' }));
  const { context, page, problems, requests } = await openApp();
  try {
    assert.equal(await chooseFile(page, pth), 'failed');
    assert.match(await status(page), /Could not open model_final\.pth: model file: the file holds no LayerNorm weights.*circuitscope will not guess which/);
    assert.equal(await chooseFile(page, config), 'failed');
    assert.match(await status(page), /Could not open config\.json alone: a config\.json describes a model/);
    assert.equal(await chooseFile(page, [pth, config]), 'opened');
    await settle(page);
    assert.equal((await state(page)).model, 'local:model_final');
    assert.match(await status(page), /TransformerLens state dict.*no normalization, as its metadata or config\.json says.*Read with config\.json\./);
    const wrong = path.join(tmp, 'wrong config.json');
    writeFileSync(wrong, JSON.stringify({ normalization_type: null, d_model: 64 }));
    assert.equal(await chooseFile(page, [pth, wrong]), 'failed');
    assert.match(await status(page), /config\.json says d_model is 64 but the tensors give 32: the config belongs to another model/);
    await settle(page);
    assert.deepEqual(uploads(requests), []);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('(b5) a TransformerLens file opens with its tokenizer.json and reads typed text with it', async () => {
  const model = path.join(tmp, 'tl-gpt2.safetensors');
  writeFileSync(model, tlVocabFixture(50257, 3));
  const tok = path.join(tmp, 'tokenizer.json');
  const json = JSON.stringify(gpt2TokenizerJson());
  writeFileSync(tok, json);
  const broken = path.join(tmp, 'broken', 'tokenizer.json');
  mkdirSync(path.dirname(broken), { recursive: true });
  writeFileSync(broken, json.slice(0, 5000));
  const { context, page, problems, requests } = await openApp();
  try {
    assert.equal(await chooseFile(page, tok), 'failed');
    assert.match(await status(page), /Could not open tokenizer\.json alone: a tokenizer\.json says how a model reads text/);
    assert.equal(await chooseFile(page, [model, broken]), 'failed');
    assert.match(await status(page), /Could not open tl-gpt2\.safetensors: tokenizer\.json: is not valid JSON/);
    assert.equal(await chooseFile(page, [model, tok]), 'opened');
    await settle(page);
    assert.equal((await state(page)).model, 'local:tl-gpt2');
    assert.match(await status(page), /Hugging Face tokenizer\.json vocabulary of 50257 tokens.*Read with tokenizer\.json\./);
    assert.match(await page.textContent('cs-induction label[for="ind-text"]'), /Hugging Face tokenizer/);
    await page.fill('cs-induction textarea', 'Hello world, hello world');
    await page.waitForFunction(() => document.querySelector('cs-induction').lastResult?.T === 6);
    const r = await page.evaluate(() => document.querySelector('cs-induction').lastResult);
    assert.deepEqual(r.ids, [50256, 15496, 995, 11, 23748, 995]);
    assert.match(await page.textContent('cs-induction .ind-tokens'), /␣world/);
    // Tokens holding part of a character's bytes are drawn as those bytes, not the character again.
    await page.fill('cs-induction textarea', 'a 🙂 東京');
    await page.waitForFunction(() => document.querySelector('cs-induction').lastResult?.T === 8);
    const strip = await page.textContent('cs-induction .ind-tokens');
    assert.match(strip, /<0xE6>/);
    assert.equal(strip.split('東').length - 1, 0, `東 is split into byte tokens: ${strip}`);
    // Each token's tooltip gives its id and the bytes it stands for: together, the text's UTF-8.
    const titles = await page.$$eval('cs-induction .ind-tokens .tok:not(.bos)', (ts) => ts.map((t) => t.getAttribute('title')));
    const ids = (await page.evaluate(() => document.querySelector('cs-induction').lastResult)).ids;
    const hex = [];
    titles.forEach((t, i) => {
      const m = t.match(/\(token (\d+)(?:, bytes? ([0-9A-F ]+))?\)/);
      assert.ok(m, `tooltip ${i}: ${t}`);
      assert.equal(Number(m[1]), ids[i + 1], `tooltip ${i}: ${t}`);
      if (m[2]) hex.push(...m[2].trim().split(' '));
    });
    assert.deepEqual(hex, [...new TextEncoder().encode('a 🙂 東京')].map((b) => b.toString(16).toUpperCase().padStart(2, '0')), titles.join(' | '));
    assert.deepEqual(uploads(requests), []);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('(b3) a TransformerLens model with LayerNorm and MLPs opens, and every view offering it settles', async () => {
  const file = path.join(tmp, 'gelu 2l.safetensors');
  const py = `
import sys; sys.path.insert(0, sys.argv[1])
import make_models
cfg = {"n_layers": 2, "d_model": 32, "n_heads": 4, "d_head": 8, "n_ctx": 64, "d_vocab": 50, "d_mlp": 128,
       "act_fn": "gelu", "normalization_type": "LN", "positional_embedding_type": "standard", "attn_only": False}
make_models.write_model(sys.argv[2], make_models.random_state_dict(cfg, 7), cfg)`;
  const r = spawnSync('/usr/bin/python3', ['-c', py, path.join(root, 'tests', 'reference'), file], { encoding: 'utf8' });
  assert.equal(r.status, 0, `make_models failed (npm test installs python3-torch): ${r.stderr}`);
  const { context, page, problems, requests } = await openApp();
  try {
    assert.equal(await chooseFile(page, file), 'opened');
    await settle(page);
    assert.equal((await state(page)).model, 'local:gelu-2l');
    assert.match(await status(page), /LayerNorm; MLPs of 128 \(gelu\).*processing was applied: fold_ln, center_writing_weights, center_unembed, fold_value_biases/);
    await page.fill('cs-induction textarea', '5 6 7 8 9 5 6 7 8 9');
    await page.waitForFunction(() => document.querySelector('cs-induction').lastResult?.T === 10);
    await settle(page);
    // Each layer's MLP output has its Ablate toggle; it goes into the link and changes the losses.
    const before = await page.evaluate(() => document.querySelector('cs-induction').lastResult.loss);
    assert.equal(await page.locator('cs-induction [data-mlp]').count(), 2);
    await page.click('cs-induction [data-mlp="L1MLP"] button');
    await page.waitForFunction(() => window.__cs.store.state.ablate.includes('L1MLP'));
    await settle(page);
    await page.waitForFunction((b) => JSON.stringify(document.querySelector('cs-induction').lastResult.loss) !== b, JSON.stringify(before));
    assert.equal(await page.getAttribute('cs-induction [data-mlp="L1MLP"] button', 'aria-pressed'), 'true');
    assert.match(await page.evaluate(() => window.__cs.encodeState(window.__cs.store.state)), /ablate=L1MLP/);
    // Activation patching lists each MLP beside the heads.
    await page.evaluate(() => window.__cs.store.dispatch({ type: 'set', values: { patch: 'denoise' } }));
    await page.waitForFunction(() => document.querySelectorAll('cs-induction .cs-patch-mlps li').length === 2, null, { timeout: 60_000 });
    assert.match(await page.textContent('cs-induction .cs-patch-mlps'), /MLP of layer 0, every position: effect -?\d/);
    await visit(page, 'circuits', 'local:gelu-2l');
    await visit(page, 'induction', 'local:gelu-2l');
    assert.deepEqual(uploads(requests), []);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('(b4) a large model file shows how much of it has been read before it opens, and closing it gives its memory back', async () => {
  const file = path.join(tmp, 'wide.safetensors');
  const py = `
import sys; sys.path.insert(0, sys.argv[1])
import make_models
cfg = {"n_layers": 1, "d_model": 512, "n_heads": 8, "d_head": 64, "n_ctx": 128, "d_vocab": 10000,
       "normalization_type": "LN", "positional_embedding_type": "standard", "attn_only": True,
       "std": {"W_E": 0.1, "W_pos": 0.1, "W_Q": 0.044, "W_K": 0.044, "W_V": 0.044, "W_O": 0.125, "W_U": 0.044}}
make_models.write_model(sys.argv[2], make_models.random_state_dict(cfg, 2), cfg)`;
  const r = spawnSync('/usr/bin/python3', ['-c', py, path.join(root, 'tests', 'reference'), file], { encoding: 'utf8' });
  assert.equal(r.status, 0, `make_models failed (npm test installs python3-torch): ${r.stderr}`);
  const { context, page, problems } = await openApp();
  try {
    await page.evaluate(() => {
      window.__statuses = [];
      new MutationObserver(() => window.__statuses.push(document.querySelector('#app-status').textContent))
        .observe(document.querySelector('#app-status'), { childList: true, characterData: true, subtree: true });
    });
    assert.equal(await chooseFile(page, file), 'opened');
    await settle(page);
    const seen = await page.evaluate(() => window.__statuses);
    assert.ok(seen.some((t) => /^Reading wide\.safetensors: \d+ of 43 MB \(\d+%\)…$/.test(t)), `no reading progress among: ${seen.slice(0, 5).join(' | ')}`);
    assert.ok(seen.some((t) => /^Opening wide\.safetensors \(43 MB\): the core is checking and loading it…$/.test(t)), 'no loading message');
    assert.match(await status(page), /^Opened wide\.safetensors as local:wide/);

    // Memory: the file lives in a WebAssembly instance of its own, so the page's instance does not
    // grow; closing it, or a refused file, leaves nothing behind once the browser collects garbage.
    const shared = () => page.evaluate(async () => (await (await import('/store.js')).getModule()).memory().heapSize);
    const alive = () => page.evaluate(async () => (await import('/store.js')).separateModulesAlive());
    const before = await shared();
    assert.equal(await alive(), 1, 'the opened file has its own instance');
    await visit(page, 'training', 'local:wide');
    await visit(page, 'induction', 'local:wide');
    assert.equal(await page.isHidden('#close-file'), false, 'a local model can be closed');
    await page.click('#close-file');
    await page.waitForFunction(() => window.__cs.store.state.model === null);
    await settle(page);
    assert.match(await status(page), /^Closed wide\.safetensors: its memory is given back/);
    assert.equal(await page.isHidden('#close-file'), true, 'a shipped model has no Close button');
    assert.ok(!(await page.$$eval('#model-switch option', (os) => os.map((o) => o.value))).includes('local:wide'), 'the picker no longer offers it');
    writeFileSync(path.join(tmp, 'cut.safetensors'), readFileSync(file).subarray(0, 30 * 1024 * 1024));
    assert.equal(await chooseFile(page, path.join(tmp, 'cut.safetensors')), 'failed');
    const cdp = await context.newCDPSession(page);
    let left = await alive();
    for (let i = 0; i < 50 && left > 0; i++) {
      await cdp.send('HeapProfiler.collectGarbage');
      await page.waitForTimeout(100);
      left = await alive();
    }
    assert.equal(left, 0, 'the closed and the refused file\'s instances were collected');
    assert.equal(await shared(), before, 'the page\'s own instance did not grow');
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('(c) a file dropped on the page opens; the drop hint shows while it is dragged', async () => {
  const bytes = [...readFileSync(path.join(site, 'models', 'ioi-1l2h.safetensors'))];
  const { context, page, problems, requests } = await openApp();
  try {
    const dt = await page.evaluateHandle((b) => {
      const d = new DataTransfer();
      d.items.add(new File([new Uint8Array(b)], 'my ioi.safetensors', { type: 'application/octet-stream' }));
      return d;
    }, bytes);
    await page.dispatchEvent('main', 'dragenter', { dataTransfer: dt });
    assert.ok(await page.isVisible('#drop-hint'), 'the drop hint shows while a file is dragged');
    await page.dispatchEvent('main', 'dragover', { dataTransfer: dt });
    await page.dispatchEvent('main', 'drop', { dataTransfer: dt });
    await page.waitForFunction(() => document.body.dataset.openFile === 'opened');
    assert.ok(await page.isHidden('#drop-hint'), 'the hint goes with the drop');
    await settle(page);
    const s = await state(page);
    assert.deepEqual([s.view, s.model], ['ioi', 'local:my-ioi'], 'a symbolic IOI model opens in the IOI view');
    await visit(page, 'circuits', 'local:my-ioi');
    await visit(page, 'ioi', 'local:my-ioi');
    await page.click('#tab-induction');
    await settle(page);
    assert.equal((await state(page)).model, null, 'the Induction view does not offer an IOI model: its default is shown');
    assert.deepEqual(uploads(requests), []);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('(d) corrupt and hostile files: the loader\'s sentence, no script runs, the view keeps working', async () => {
  const char2l = readFileSync(path.join(site, 'models', 'char-2l.safetensors'));
  const payload = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';
  const files = {
    truncated: [path.join(tmp, 'truncated.safetensors'), char2l.subarray(0, 1000)],
    config: [path.join(tmp, 'bad-config.safetensors'), withMetadata(char2l, (m) => ({ ...m, config: payload }))],
    tokenizer: [path.join(tmp, 'bad-tokenizer.safetensors'), withMetadata(char2l, (m) => ({ ...m, tokenizer: JSON.stringify({ kind: payload, vocab: [payload] }) }))],
    name: [path.join(tmp, `${'<img src=x onerror=window.__pwned=3>'.replace(/[/]/g, '')}.safetensors`), char2l.subarray(0, 64)],
  };
  for (const [file, bytes] of Object.values(files)) writeFileSync(file, bytes);
  const ioi = readFileSync(path.join(site, 'models', 'ioi-1l2h.safetensors'));
  const hostileVocab = path.join(tmp, 'hostile-vocab.safetensors');
  writeFileSync(hostileVocab, withMetadata(ioi, (m) => {
    const tok = JSON.parse(m.tokenizer);
    tok.vocab = tok.vocab.map((w) => (w === 'A' ? '<img src=x onerror=window.__pwned=4>' : w === 'B' ? '<script>window.__pwned=5</script>' : w));
    return { ...m, tokenizer: JSON.stringify(tok) };
  }));
  const { context, page, problems, requests } = await openApp();
  try {
    const before = await state(page);
    for (const [key, [file]] of Object.entries(files)) {
      assert.equal(await chooseFile(page, file), 'failed', key);
      const said = await status(page);
      assert.match(said, /^Could not open .*safetensors: model file: /, `${key}: the loader's sentence: ${said}`);
      assert.equal(await page.textContent('#app-error[role="alert"]:not([hidden])'), said, `${key}: the refusal is not in the alert box`);
      assert.equal(await page.evaluate(() => window.__pwned), undefined, `${key}: no script ran`);
      assert.equal(await page.$$eval('img[src="x"], #app-status *, #app-error *', (e) => e.length), 0, `${key}: the sentence is text`);
      assert.deepEqual(await state(page), before, `${key}: the view is unchanged`);
    }
    assert.match(await status(page), /^Could not open <img src=x onerror=window.__pwned=3>\.safetensors: model file: /);
    // A file over the size limit is refused before it is read (a File-like object: no 500 MB file needed).
    const big = await page.evaluate(async () => {
      const { openModelFile } = await import('/open-model.js');
      let read = false;
      try {
        await openModelFile({ name: 'big.safetensors', size: 500 * 1024 * 1024, arrayBuffer: async () => { read = true; return new ArrayBuffer(8); } });
        return { read, message: null };
      } catch (e) {
        return { read, message: e.message };
      }
    });
    assert.deepEqual(big, { read: false, message: 'Could not open big.safetensors: it is 500 MB, and the page opens model files of up to 448 MB (the core\'s limit is 96 M weights, 384 MB as float32).' });
    // The view keeps working.
    await page.fill('cs-induction textarea', 'hello hello');
    await page.waitForFunction(() => document.querySelector('cs-induction').lastResult?.T === 12);
    // A valid model whose vocabulary holds markup (in place of the names A and B, so it is not the
    // symbolic IOI task's model): it opens in the Induction view, and its tokens are text.
    assert.equal(await chooseFile(page, hostileVocab), 'opened');
    await settle(page);
    assert.equal((await state(page)).view, 'induction');
    await visit(page, 'circuits', 'local:hostile-vocab');
    await page.selectOption('cs-circuits select[id$="-top"]', 'all');
    await settle(page);
    assert.ok((await page.textContent('cs-circuits')).includes('onerror=window.__pwned'), 'the tokens show as text');
    await visit(page, 'induction', 'local:hostile-vocab');
    assert.equal(await page.evaluate(() => window.__pwned), undefined, 'no script ran from the vocabulary');
    assert.equal(await page.$$eval('img[src="x"], main script', (e) => e.length), 0, 'no element made from the vocabulary');
    assert.deepEqual(uploads(requests), []);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('(e) a link to a local model says the recipient needs the file, and opens once the file is opened', async () => {
  const file = path.join(tmp, 'char-1l.safetensors');
  writeFileSync(file, readFileSync(path.join(site, 'models', 'char-1l.safetensors')));
  // The author: opens the file, picks a head in Circuits, copies the link.
  const author = await openApp();
  let link;
  try {
    assert.equal(await chooseFile(author.page, file), 'opened');
    await settle(author.page);
    await author.page.click('#tab-circuits');
    await settle(author.page);
    await author.page.selectOption('cs-circuits select[id$="-head"]', 'L0H2');
    await settle(author.page);
    await author.page.click('#copy-link');
    link = await author.page.inputValue('#copy-text');
    assert.match(link, /model=local%3Achar-1l|model=local:char-1l/);
    // The sentence comes once the clipboard has answered.
    await author.page.waitForFunction(() => /whoever opens the link needs the same file too/.test(document.querySelector('#app-status')?.textContent ?? ''));
    assert.deepEqual(author.problems, []);
  } finally {
    await author.context.close();
  }
  const hash = link.slice(link.indexOf('#'));
  const fresh = await openApp(hash);
  try {
    const said = await status(fresh.page);
    assert.match(said, /^This link is to a model file opened in another page \(local:char-1l\): open the same file here \(Open a model file\) to see it/);
    const s = await state(fresh.page);
    assert.deepEqual([s.view, s.model], ['induction', null], 'the default view');
    assert.ok(await fresh.page.isVisible('cs-induction'), 'not a blank page');
    assert.equal(await chooseFile(fresh.page, file), 'opened');
    await fresh.page.waitForFunction(() => window.__cs.store.state.view === 'circuits');
    await settle(fresh.page);
    const got = await state(fresh.page);
    assert.deepEqual([got.view, got.model, got.head], ['circuits', 'local:char-1l', 'L0H2'], 'the linked view, with the file');
    assert.deepEqual(fresh.problems, []);
  } finally {
    await fresh.context.close();
  }
  // Hostile local names are refused by the link codec, with a sentence and the default view.
  const bad = await openApp('#v=2&model=local:..%2F..%2Fx');
  try {
    assert.match(await status(bad.page), /This link could not be read \(model: /);
    assert.deepEqual(bad.problems, []);
  } finally {
    await bad.context.close();
  }
});

test('(f) checkpoints of one run open together as its training, scored by the core', async () => {
  const snaps = [0, 1000, 1250, 1500, 3000, 5000];
  const files = snaps.map((n) => path.join(site, 'models', 'snapshots', 'char-2l', `step${n}.safetensors`));
  const text = path.join(tmp, 'held-out.txt');
  writeFileSync(text, readFileSync(path.join(root, 'models', 'corpus', 'valid.txt')));
  const { context, page, problems, requests } = await openApp();
  try {
    assert.equal(await chooseFile(page, [...files, text]), 'opened');
    assert.match(await status(page), /^Opened step5000\.safetensors as local:step5000 .*With 6 checkpoints of its training \(0 to 5000\), read one at a time.*scores them on held-out\.txt\./);
    await page.waitForFunction(() => window.__cs.store.state.view === 'training');
    await settle(page, 180_000);
    assert.equal((await state(page)).model, 'local:step5000');
    const view = await page.$eval('cs-training', (e) => ({ ...e.dataset, text: e.textContent }));
    assert.equal(view.charts, '4', 'loss, ICL, prefix matching and the trajectory');
    assert.equal(view.phaseChange, '1500', 'the first checkpoint at or after the run\'s own phase change (step 1350)');
    assert.equal(view.seriesScored, '6/6');
    assert.match(view.text, /Phase change at checkpoint 1500: .* over the 6 records of the 6 checkpoints opened, scored on held-out\.txt/);
    // The checkpoints are the snapshots every view uses: the header's picker lists them, the slider takes one.
    const listed = await page.$$eval('#snapshot-switch option', (os) => os.map((o) => o.value));
    for (const n of [0, 1000, 3000]) assert.ok(listed.includes(`step${n}`), `the snapshot picker lists step${n}: ${listed}`);
    assert.ok(!listed.includes('step5000'), 'the opened model is the final one, not a snapshot');
    await page.evaluate(() => window.__cs.store.dispatch({ type: 'snapshot', snapshot: 'step1000' }));
    await settle(page, 60_000);
    await page.waitForFunction(() => /Using checkpoint 1000 of local:step5000 \(train loss [\d.]+\): its strongest prefix-matching head is L\d+H\d+/.test(document.querySelector('cs-training')?.textContent ?? ''));
    await page.click('#tab-circuits');
    await settle(page, 60_000);
    assert.deepEqual([(await state(page)).view, (await state(page)).snapshot], ['circuits', 'step1000']);
    // One number twice: refused, and the opened series stays.
    const twin = path.join(tmp, 'other_1500.safetensors');
    writeFileSync(twin, readFileSync(files[3]));
    assert.equal(await chooseFile(page, [files[3], twin]), 'failed');
    assert.match(await status(page), /step1500\.safetensors and other_1500\.safetensors have the same number 1500; choose one checkpoint per number/);
    assert.deepEqual(uploads(requests), []);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
  // TransformerLens's files: checkpoints/NAME_N.pth with the config.json the hub ships, no tokenizer.
  const dir = path.join(tmp, 'checkpoints');
  mkdirSync(dir, { recursive: true });
  const pths = [0, 1500, 5000].map((n) => {
    const st = path.join(tmp, `tl-step${n}.safetensors`);
    writeFileSync(st, toTransformerLens(readFileSync(files[snaps.indexOf(n)]), { metadata: null }));
    const pth = path.join(dir, `Char_2L_checkpoint_${n}.pth`);
    torchSave(st, pth);
    return pth;
  });
  const config = path.join(tmp, 'config.json');
  writeFileSync(config, JSON.stringify({ n_layers: 2, d_model: 64, n_heads: 4, d_head: 16, n_ctx: 256, normalization_type: null,
    positional_embedding_type: 'shortformer', attn_only: true, act_fn: null, eps: 1e-5, model_name: 'char-2l' }));
  const tl = await openApp();
  try {
    assert.equal(await chooseFile(tl.page, [...pths, config]), 'opened', await status(tl.page));
    await tl.page.waitForFunction(() => window.__cs.store.state.view === 'training');
    await settle(tl.page, 180_000);
    const view = await tl.page.$eval('cs-training', (e) => ({ ...e.dataset, text: e.textContent }));
    // Where the native CLI puts it on the same files.
    const cli = spawnSync(path.join(root, 'build', 'native', 'circuitscope'), ['series', ...pths, '--config', config], { encoding: 'utf8' });
    assert.equal(cli.status, 0, cli.stderr);
    assert.equal(view.phaseChange, /phase change at checkpoint (\d+)/.exec(cli.stdout)?.[1]);
    assert.match(view.text, /head scores only: the model reads no typed text and no held-out text was chosen/);
    assert.match(view.text, /No per-token-loss trajectory: the checkpoints of local:Char_2L_checkpoint_5000 were scored without held-out text/);
    // The same run as a folder, as one downloads it from the hub: its checkpoints/ and config.json
    // beside files that are not the model's (left out, and said so).
    const run = path.join(tmp, 'char-2l-run');
    mkdirSync(path.join(run, 'checkpoints'), { recursive: true });
    for (const p of pths) writeFileSync(path.join(run, 'checkpoints', path.basename(p)), readFileSync(p));
    writeFileSync(path.join(run, 'config.json'), readFileSync(config));
    writeFileSync(path.join(run, 'README.md'), '# char-2l\n');
    writeFileSync(path.join(run, 'tokenizer_config.json'), '{}');
    await tl.page.evaluate(() => { delete document.body.dataset.openFile; });
    await tl.page.setInputFiles('#open-folder-input', run);
    await tl.page.waitForFunction(() => ['opened', 'failed'].includes(document.body.dataset.openFile));
    assert.match(await status(tl.page), /^Opened Char_2L_checkpoint_5000\.pth as local:Char_2L_checkpoint_5000-2 .*Read with config\.json\. \(2 other files of the folder left out: only model files, config\.json and tokenizer\.json are read\.\) With 3 checkpoints of its training \(0 to 5000\)/);
    await settle(tl.page, 180_000);
    assert.equal(await tl.page.$eval('cs-training', (e) => e.dataset.phaseChange), view.phaseChange, 'the folder gives the same run');
    assert.deepEqual(tl.problems, []);
  } finally {
    await tl.context.close();
  }
});
