// Browser benchmarks of the built page (build/site) in Debian's Chromium, headless, through the
// browser tests' harness (tests/browser/chromium.mjs). Builds nothing: run `npm run build` first.
//   keystroke   keystroke to rendered frame in the induction view, char-2l, 256 tokens: the time
//               from the textarea's input event to the paint of the first frame that shows the
//               update (see keystrokeTimes() in tests/browser/chromium.mjs), with the keystroke
//               arriving as a frame begins (the work itself) and at a random point of the frame
//               (the work plus the wait for the display's next frame, 8 ms on average at 60 Hz);
//   training    the Training view's "Train it yourself" with the induction-2l recipe, run to its
//               end in the page's Web Worker: steps per second as the view reports them, and the
//               seconds from clicking Start to the phase change, the first step whose head scores
//               (recorded every 10 steps) pass phaseChange()'s threshold in web/views/training.js:
//               the best head's prefix matching at half its final value (the view trains on one
//               Web Worker per core, at most 4);
//   workers     the reference model's training step in the page's training worker on 1 and on 2
//               Web Workers sharing each batch (data-parallel), ms per step (each sample the
//               mean over the 10 steps between two of the worker's reports) and the speed-up.
//   realshape   random weights of attn-only-2l's layers (2 x 8 x 64, d_model 512, n_ctx 1,024, LNPre)
//               with GPT-2's 50,257-token vocabulary (a 212 MB file) opened through the header's
//               Open file with GPT-2's tokenizer.json: the time from choosing the files to the
//               induction view rendered, keystroke to rendered frame (as above) with prose of
//               about 512 tokens in the view (also split: keystrokes that left the number of
//               tokens as it was, and those that changed it), and the view's run() call over 1,024 tokens in the
//               page's module (relaxed SIMD in Chromium);
//   arena       the same with ARENA's attn_only_2L_half layers (2 x 12 x 64, d_model 768, n_ctx
//               2,048, no normalization, shortformer positions) and GPT-2's vocabulary (a 319 MB file);
//   tokenize    a Hugging Face tokenizer.json (GPT-2's, tests/js/hf-tokenizer-files.mjs) encoding
//               prose in the page's WebAssembly core (model.tokenize of a TransformerLens file
//               opened with it: ids and UTF-16 spans) and in @huggingface/tokenizers, the same
//               text in the same page: ms per encode for a typed paragraph (1 KB) and a chapter
//               (100 KB), after a warm-up, and whether the ids agree.
// Nothing here asserts a time.
//   node tests/bench/bench_browser.mjs [--keystrokes N] [--worker-steps N] [--tokenize-reps N] [--only PART] [--json]
// CIRCUITSCOPE_SITE=dir serves another folder (default build/site); CHROMIUM=path another browser.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../scripts/serve.mjs';
import { tlVocabFixture } from '../js/tlens-fixture.mjs';
import { gpt2TokenizerJson } from '../js/hf-tokenizer-files.mjs';
import { SHAPES, shapeWithVocab } from './bench_series.mjs';
import { realShapeLines } from './common.mjs';
import { launchChromium, keystrokeTimes, summarize, waitForInduction, waitForText, trainInPage, KEYSTROKE_TEXT } from '../browser/chromium.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
const RECIPE = 'induction-2l';
const TARGET_KEYSTROKE_MS = 8;
const TARGET_PHASE_CHANGE_S = 60;

function intArg(name, def, min) {
  const i = process.argv.indexOf(name);
  if (i < 0) return def;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v < min) throw new Error(`${name} needs an integer of at least ${min}`);
  return v;
}

const round = (x, d = 2) => (Number.isFinite(x) ? Number(x.toFixed(d)) : null);
const stats = (times) => {
  const s = summarize(times);
  return { n: s.n, median_ms: round(s.median), min_ms: round(s.min), max_ms: round(s.max), times_ms: times.map((t) => round(t)) };
};

async function keystrokes(browser, url, count) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  try {
    const page = await context.newPage();
    await page.goto(`${url}#v=1&model=char-2l`);
    await waitForInduction(page);
    await page.fill('cs-induction textarea', KEYSTROKE_TEXT);
    await waitForText(page, KEYSTROKE_TEXT);
    await keystrokeTimes(page, { count: 5, phase: 'frame' });   // warm-up: compiled code, caches
    const frame = await keystrokeTimes(page, { count, phase: 'frame' });
    const random = await keystrokeTimes(page, { count, phase: 'random' });
    return { model: 'char-2l', tokens: frame.T, viewport: '1280x720', frame_aligned: stats(frame.times), random_phase: stats(random.times) };
  } finally {
    await context.close();
  }
}

// A real shape (bench_series.mjs SHAPES: attn-only-2l, arena) with GPT-2's vocabulary in the
// page: open, render, type (see the header).
async function realShape(browser, url, count, shape = 'attn-only-2l') {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cs-realshape-'));
  const model = path.join(dir, `${shape}-shape.safetensors`), tok = path.join(dir, 'tokenizer.json');
  const bytes = shapeWithVocab(shape, 50257);
  writeFileSync(model, bytes);
  writeFileSync(tok, JSON.stringify(gpt2TokenizerJson()));
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  try {
    const page = await context.newPage();
    await page.goto(`${url}#v=1&model=char-2l`);
    await waitForInduction(page);
    await page.evaluate(() => { delete document.body.dataset.openFile; });
    const t0 = Date.now();
    await page.setInputFiles('#open-file-input', [model, tok]);
    await page.waitForFunction(() => ['opened', 'failed'].includes(document.body.dataset.openFile), null, { timeout: 120_000 });
    if (await page.evaluate(() => document.body.dataset.openFile) !== 'opened') throw new Error(`the file did not open: ${await page.textContent('#app-status')}`);
    await page.waitForFunction(() => {
      const v = document.querySelector('cs-induction');
      return v?.dataset.ready === 'true' && window.__cs.store.state.model.startsWith('local:') && v.lastResult;
    }, null, { timeout: 120_000 });
    const openMs = Date.now() - t0;
    const prose = readFileSync(path.join(root, 'models', 'corpus', 'gutenberg-valid.txt'), 'utf8').slice(20_000, 22_200);
    await page.fill('cs-induction textarea', prose);
    await page.waitForFunction((t) => {
      const v = document.querySelector('cs-induction');
      return v.dataset.ready === 'true' && v.state.text === t && v.lastResult && v.lastResult.T > 400;
    }, prose, { timeout: 120_000 });
    const before = await keystrokeTimes(page, { count: 3, phase: 'frame' });   // warm-up
    const frame = await keystrokeTimes(page, { count, phase: 'frame' });
    // A full pass over 1,024 tokens on the model the page opened, in the page's module (the
    // relaxed-SIMD one where Chromium runs it), with the induction view's options; the view's
    // kept pass is of no use after this.
    const full = await page.evaluate(async () => {
      const { localModels } = await import('./local-models.js');
      const model = localModels().at(-1).model;
      const c = model.config, C = 1024, times = [];
      const opts = { into: { patterns: new Float32Array(c.n_layers * c.n_heads * C * C), loss: new Float32Array(C) }, logits: false, textScores: true, topk: 5 };
      const ids = Int32Array.from({ length: C }, (_, i) => (i * 7919) % c.d_vocab);
      for (let i = 0; i < 4; i++) {
        ids[0] = i;   // the first token differs: every position is computed
        const t0 = performance.now();
        const r = model.run(ids, undefined, opts);
        if (i > 0) times.push(performance.now() - t0);
        if (r.changed_from !== 0) throw new Error(`the pass began at ${r.changed_from}`);
      }
      return { simd: document.documentElement.dataset.wasm, times };
    });
    // The keystrokes that left the number of tokens as it was (a keystroke replaces the last
    // character) and those that changed it (every head's kept data moves to the new length).
    const kind = (same) => frame.times.filter((_, i) => (frame.tokens[i] === (i ? frame.tokens[i - 1] : before.T)) === same);
    return { shape: SHAPES[shape].label, file_mb: round(bytes.length / 2 ** 20, 1), open_to_rendered_ms: openMs, tokens: frame.T, frame_aligned: stats(frame.times),
      same_count: stats(kind(true)), count_changed: stats(kind(false)),
      forward_1024: { simd: full.simd, ...stats(full.times) } };
  } finally {
    await context.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// The files the tokenize bench needs, served to the page from memory under /__bench/.
async function tokenizing(browser, url, reps) {
  const files = {
    'model.safetensors': { body: Buffer.from(tlVocabFixture(50257)), contentType: 'application/octet-stream' },
    'tokenizer.json': { body: JSON.stringify(gpt2TokenizerJson()), contentType: 'application/json' },
    'tokenizers.mjs': { body: readFileSync(path.join(root, 'node_modules', '@huggingface', 'tokenizers', 'dist', 'tokenizers.min.mjs')), contentType: 'text/javascript' },
    'text.txt': { body: readFileSync(path.join(root, 'models', 'corpus', 'gutenberg-valid.txt'), 'utf8').slice(0, 310_000), contentType: 'text/plain' },
  };
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.route('**/__bench/*', (route) => route.fulfill({ status: 200, ...files[new URL(route.request().url()).pathname.split('/').pop()] }));
    await page.goto(`${url}#v=1&view=training`);
    return await page.evaluate(async (reps) => {
      const [{ init }, { Tokenizer }] = await Promise.all([import('./wasm/circuitscope.js'), import('./__bench/tokenizers.mjs')]);
      const get = (name) => fetch(`./__bench/${name}`);
      const [cs, bytes, json, all] = await Promise.all([init(), get('model.safetensors').then((r) => r.arrayBuffer()), get('tokenizer.json').then((r) => r.text()), get('text.txt').then((r) => r.text())]);
      let t0 = performance.now();
      const model = cs.load(new Uint8Array(bytes), { tokenizer: json });
      const loadOurs = performance.now() - t0;
      t0 = performance.now();
      const hf = new Tokenizer(JSON.parse(json), {});
      const loadTheirs = performance.now() - t0;
      const time = (fn) => {
        for (let i = 0; i < 3; i++) fn();
        const ts = [];
        for (let i = 0; i < reps; i++) {
          const t = performance.now();
          fn();
          ts.push(performance.now() - t);
        }
        return ts.sort((a, b) => a - b)[Math.floor(ts.length / 2)];
      };
      const out = { load_ms: { wasm: loadOurs, tokenizers_js: loadTheirs }, texts: [] };
      const once = (fn) => {
        const t = performance.now();
        fn();
        return performance.now() - t;
      };
      for (const size of [1000, 100_000]) {
        const text = all.slice(size === 1000 ? 200_000 : 0, (size === 1000 ? 200_000 : 0) + size);
        // The first encoding merges every piece; later ones find the text's pieces already merged.
        const firstOurs = once(() => model.tokenize(text));
        const firstTheirs = once(() => hf.encode(text, { add_special_tokens: false }));
        const ours = Array.from(model.tokenize(text).ids).slice(1);   // without the <BOS> put first
        const theirs = hf.encode(text, { add_special_tokens: false }).ids;
        out.texts.push({ chars: text.length, tokens: theirs.length, same_ids: JSON.stringify(ours) === JSON.stringify(theirs),
          first_wasm_ms: firstOurs, first_tokenizers_js_ms: firstTheirs,
          wasm_ms: time(() => model.tokenize(text)), tokenizers_js_ms: time(() => hf.encode(text, { add_special_tokens: false })) });
      }
      // Typing: a 4,000-character text grows by one character of the next text at each keystroke,
      // and the whole text is encoded again, as the page does.
      const start = 300_000;
      let typed = all.slice(start, start + 4000);
      const keys = { wasm: [], tokenizers_js: [] };
      for (let i = 0; i < reps * 4; i++) {
        typed += all[start + 4000 + i];
        keys.wasm.push(once(() => model.tokenize(typed)));
        keys.tokenizers_js.push(once(() => hf.encode(typed, { add_special_tokens: false })));
      }
      const median = (ts) => ts.sort((a, b) => a - b)[Math.floor(ts.length / 2)];
      out.typing = { chars: 4000, keystrokes: keys.wasm.length, wasm_ms: median(keys.wasm), tokenizers_js_ms: median(keys.tokenizers_js),
        same_ids: JSON.stringify(Array.from(model.tokenize(typed).ids).slice(1)) === JSON.stringify(hf.encode(typed, { add_special_tokens: false }).ids) };
      model.delete();
      return out;
    }, reps);
  } finally {
    await context.close();
  }
}

async function training(browser, url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  try {
    const page = await context.newPage();
    await page.goto(`${url}#v=1&view=training`);
    await page.waitForSelector('cs-training[data-ready="true"]', { timeout: 60_000 });
    const r = await trainInPage(page, RECIPE);   // the recipe's own number of steps
    return {
      recipe: RECIPE,
      steps: r.steps,
      steps_per_second: round(r.stepsPerSecond, 1),
      train_seconds: round(r.trainSeconds),
      phase_change_step: r.phaseChangeStep,
      phase_change_seconds: round(r.phaseChangeSeconds),
    };
  } finally {
    await context.close();
  }
}

// The reference model's training step (tests/bench/reference_recipe.json: batch 16 of 256
// tokens, d_model 128) in the page's training worker, on 1 and on 2 Web Workers sharing each
// step's batch: ms per step over `steps` steps after a warm-up of EVERY steps. The worker reports
// every EVERY steps, as the Training view asks it to (web/panels/training/run.js): each report's
// time since the one before, over the steps it covers, is one sample. (A report after every step
// made the training worker's own share of each step about 10 ms slower than the helper's, so it
// measured the reports, not the training.)
const EVERY = 10;
async function workerScaling(browser, url, steps) {
  const recipe = JSON.parse(readFileSync(path.join(root, 'tests', 'bench', 'reference_recipe.json'), 'utf8'));
  delete recipe.description;
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${url}#v=1&view=training`);
    await page.waitForSelector('cs-training[data-ready="true"]', { timeout: 60_000 });
    const out = {};
    for (const workers of [1, 2]) {
      out[workers] = await page.evaluate(async ({ recipe, workers, steps, every }) => {
        const { TrainerClient } = await import('./worker-client.js');
        const reports = [];
        const client = new TrainerClient({ onMetrics: (m) => reports.push({ t: performance.now(), n: m.history.length }) });
        await client.start({ ...recipe, steps: every + steps }, { metricsEvery: every, workers });
        await client.done;
        client.terminate();
        const per = [];
        for (let i = 1; i < reports.length; i++) if (reports[i].n > 0) per.push((reports[i].t - reports[i - 1].t) / reports[i].n);
        return per;
      }, { recipe, workers, steps: Math.ceil(steps / EVERY) * EVERY, every: EVERY });
    }
    return { recipe: recipe.name, steps: Math.ceil(steps / EVERY) * EVERY, steps_per_sample: EVERY, one_worker: stats(out[1]), two_workers: stats(out[2]),
      speedup: round(summarize(out[1]).median / summarize(out[2]).median) };
  } finally {
    await context.close();
  }
}

async function main() {
  const count = intArg('--keystrokes', 30, 20);
  const json = process.argv.includes('--json');
  const o = process.argv.indexOf('--only');
  const only = o < 0 ? null : process.argv[o + 1];
  if (only !== null && !['keystroke', 'realshape', 'arena', 'tokenize', 'training', 'workers'].includes(only)) throw new Error('--only takes keystroke, realshape, arena, tokenize, training or workers');
  const want = (part) => only === null || only === part;
  if (!existsSync(path.join(site, 'index.html'))) throw new Error(`${path.relative(root, site) || site}/index.html is missing: run \`npm run build\` first`);
  const server = await startServer({ root: site, port: 0 });
  const browser = await launchChromium();
  try {
    const loadBefore = os.loadavg()[0];
    const result = {
      chromium: browser.version(),
      site: path.relative(root, site) || site,
      machine: { cpus: os.cpus().length, load_average_1min: { before: round(loadBefore), after: null } },
      keystroke: want('keystroke') ? await keystrokes(browser, server.url, count) : null,
      realshape: want('realshape') ? await realShape(browser, server.url, count) : null,
      arena: want('arena') ? await realShape(browser, server.url, count, 'arena') : null,
      tokenize: want('tokenize') ? await tokenizing(browser, server.url, intArg('--tokenize-reps', 15, 3)) : null,
      training: want('training') ? await training(browser, server.url) : null,
      workers: want('workers') ? await workerScaling(browser, server.url, intArg('--worker-steps', 60, EVERY)) : null,
      targets: { keystroke_median_ms: TARGET_KEYSTROKE_MS, phase_change_seconds: TARGET_PHASE_CHANGE_S },
    };
    // Other work on the machine lengthens every time here: say how busy it was.
    result.machine.load_average_1min.after = round(os.loadavg()[0]);
    if (json) {
      process.stdout.write(JSON.stringify(result, null, 2) + '\n');
      return;
    }
    const k = result.keystroke;
    const line = (s) => (s.n ? `median ${s.median_ms.toFixed(1)} ms, min ${s.min_ms.toFixed(1)}, max ${s.max_ms.toFixed(1)} over ${s.n}` : 'none');
    const t = result.training;
    const m = result.machine;
    console.log(`circuitscope in the browser (Chromium ${result.chromium}, ${result.site}; ${m.cpus} CPUs, load average ${m.load_average_1min.before} before, ${m.load_average_1min.after} after)`);
    if (k) {
      console.log(`keystroke to rendered, induction view, ${k.model}, ${k.tokens} tokens, ${k.viewport}:`);
      console.log(`  keystroke as a frame begins:          ${line(k.frame_aligned)} (target: median <= ${TARGET_KEYSTROKE_MS} ms)`);
      console.log(`  keystroke at a random point of frame: ${line(k.random_phase)} (includes the wait for the display's next frame)`);
    }
    for (const r of [result.realshape, result.arena]) if (r) for (const text of realShapeLines(r, line)) console.log(text);
    if (result.tokenize) {
      const z = result.tokenize;
      console.log(`tokenizer.json (GPT-2's) encoding prose, WebAssembly core vs @huggingface/tokenizers, same page (opening it: ${z.load_ms.wasm.toFixed(0)} ms with the model vs ${z.load_ms.tokenizers_js.toFixed(0)} ms):`);
      for (const x of z.texts) {
        console.log(`  ${x.chars} characters (${x.tokens} tokens): first ${x.first_wasm_ms.toFixed(2)} ms vs ${x.first_tokenizers_js_ms.toFixed(2)} ms; again ${x.wasm_ms.toFixed(2)} ms vs ${x.tokenizers_js_ms.toFixed(2)} ms (medians); ids ${x.same_ids ? 'identical' : 'DIFFER'}`);
      }
      const y = z.typing;
      console.log(`  typing at the end of ${y.chars} characters, the whole text encoded at each of ${y.keystrokes} keystrokes: ${y.wasm_ms.toFixed(2)} ms vs ${y.tokenizers_js_ms.toFixed(2)} ms (medians); ids ${y.same_ids ? 'identical' : 'DIFFER'}`);
    }
    if (t) {
      console.log(`in-browser training, ${t.recipe} (${t.steps} steps, Web Worker):`);
      console.log(`  ${t.steps_per_second} steps/s; the run took ${t.train_seconds} s from Start`);
    }
    const w = result.workers;
    if (w) {
      console.log(`training step of the reference model in the page's worker: 1 worker ${line(w.one_worker)}; ` +
        `2 workers ${line(w.two_workers)}; speed-up ${w.speedup}x`);
    }
    if (t) {
      console.log(t.phase_change_step === null
        ? '  no phase change recorded'
        : `  phase change at step ${t.phase_change_step}, ${t.phase_change_seconds} s after Start (target: <= ${TARGET_PHASE_CHANGE_S} s)`);
    }
  } finally {
    await browser.close();
    await server.close();
  }
}

main().catch((e) => {
  console.error(`bench_browser: ${e.message}`);
  process.exitCode = 1;
});
