// Training in a Web Worker, in Debian's Chromium: web/worker-client.js drives web/trainer-worker.js
// (a module worker with its own WASM instance) on the symbolic IOI recipe. Metrics arrive, pause
// stops progress, resume continues it, stop ends the run, the saved bytes load in the page's own
// module, a run ends by itself after its steps, and a bad recipe rejects with the C++ sentence.
// Every response carries the page's content security policy as a header too, so the worker runs
// under `script-src 'self' 'wasm-unsafe-eval'` (no unsafe-eval); no console errors are allowed.
// Needs `npm run build` (build/site). CIRCUITSCOPE_SITE=dir and CHROMIUM=path as in page.test.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, startCspProxy } from './chromium.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const site = path.resolve(root, process.env.CIRCUITSCOPE_SITE ?? 'build/site');
// The page's own policy, read from its meta tag, is also sent as a header so the worker runs under it.
const CSP = (() => {
  const html = readFileSync(path.join(root, 'web', 'index.html'), 'utf8');
  const m = html.match(/http-equiv="Content-Security-Policy"\s+content="([^"]+)"/);
  if (!m) throw new Error('web/index.html has no Content-Security-Policy meta tag');
  return m[1].replace(/\s+/g, ' ').trim();
})();

// The shipped IOI recipe, inlined (no files in the browser) and shortened to 300 steps.
const recipe = (() => {
  const r = JSON.parse(readFileSync(path.join(root, 'models', 'recipes', 'ioi-1l2h.json'), 'utf8'));
  delete r.output;
  return { ...r, steps: 300 };
})();

// A small induction recipe (2 layers of 2 heads on repeated random segments); tests set its
// steps, batch size and seed.
const INDUCTION = {
  name: 'induction', model: { n_layers: 2, n_heads: 2, d_model: 32, d_head: 16, n_ctx: 48, pos_embed: 'shortformer' },
  tokenizer: { kind: 'synthetic', size: 48 }, data: { kind: 'repeated_segment', seq_len: 48, min_len: 8, max_len: 23 },
  optimizer: { lr: 0.01 }, schedule: { kind: 'constant', warmup_steps: 5 },
};

let server;    // build/site behind a proxy that adds the page's Content-Security-Policy header
let origin;
let browser;

before(async () => {
  assert.ok(existsSync(path.join(site, 'trainer-worker.js')), `${site}/trainer-worker.js is missing: run \`npm run build\` first`);
  server = await startCspProxy(site, CSP);
  origin = `${server.origin}/`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function openPage() {
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('requestfailed', (req) => problems.push(`request failed: ${req.url()} ${req.failure()?.errorText ?? ''}`));
  page.on('worker', (w) => w.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`worker console error: ${msg.text()}`);
  }));
  await page.goto(origin);
  await page.waitForSelector('body[data-model-loaded="true"]', { timeout: 60_000 });
  // Any CSP violation in the page (the worker's own show up as console errors).
  await page.evaluate(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  return { context, page, problems };
}

test('a worker trains the IOI recipe: metrics, pause, resume, stop, save; the bytes load in the page', async () => {
  const { context, page, problems } = await openPage();
  try {
    assert.equal((await page.evaluate(() => document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.content)), CSP);
    const out = await page.evaluate(async (recipe) => {
      const { TrainerClient } = await import('./worker-client.js');
      const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
      const log = { metrics: [], stopped: [] };
      let pauseAt = null;
      const reachedStep = (n) => new Promise((resolve) => {
        const check = () => (client.latest && client.latest.step >= n ? resolve() : setTimeout(check, 1));
        check();
      });
      const client = new TrainerClient({
        onMetrics: (m) => {
          log.metrics.push(m);
          // Pause from inside the page as soon as step 20 is reported (no round trip to node).
          if (!pauseAt && m.step >= 20) pauseAt = client.pause();
        },
        onStopped: (s) => log.stopped.push(s),
        onError: (e) => { log.error = e.message; },
      });
      const started = await client.start(recipe, { metricsEvery: 10 });
      await reachedStep(20);
      const paused = await pauseAt;
      const stateWhilePaused = client.state;
      await sleep(300);
      const pausedAgain = await client.pause();  // still where it stopped
      const metricsWhilePaused = log.metrics.filter((m) => m.step > paused.step).length;
      const resumed = await client.resume();
      await reachedStep(paused.step + 30);
      const stopped = await client.stop();
      const done = await client.done;
      await sleep(200);
      const afterStop = client.latest.step;
      let resumeError = null;
      try { await client.resume(); } catch (e) { resumeError = e.message; }
      const bytes = await client.save();
      client.terminate();

      // The page's module opens the saved bytes.
      const { init } = await import('./wasm/circuitscope.js');
      const cs = await init();
      const model = cs.load(bytes);
      const evaluation = model.ioiEvaluate();
      const result = {
        started, paused, pausedAgain, stateWhilePaused, metricsWhilePaused, resumed, stopped, done, afterStop, resumeError,
        bytesLength: bytes.length, isUint8: bytes instanceof Uint8Array,
        infoStep: model.info.step, config: model.config,
        accuracy: evaluation.accuracy, loss: evaluation.mean_loss,
        history: log.metrics.flatMap((m) => m.history.map((h) => h.step)),
        firstLoss: log.metrics[0].history[0].loss, lastLoss: log.metrics.at(-1).latest.loss,
        finite: log.metrics.every((m) => m.history.every((h) => Number.isFinite(h.loss) && Number.isFinite(h.grad_norm))),
        stoppedEvents: log.stopped, error: log.error ?? null,
      };
      model.delete();
      return result;
    }, recipe);

    assert.equal(out.error, null);
    assert.equal(out.started.steps, 300);
    assert.equal(out.started.config.n_heads, 2);
    assert.equal(out.started.config.d_vocab, 8);
    // Metrics: every step reported exactly once, in order, up to where the run stopped.
    assert.deepEqual(out.history, Array.from({ length: out.stopped.step }, (_, i) => i + 1), 'every step once, in order');
    assert.ok(out.finite, 'finite metrics');
    // Pause: no step runs while paused.
    assert.ok(out.paused.step >= 20 && out.paused.step < 300, `paused at step ${out.paused.step}`);
    assert.equal(out.stateWhilePaused, 'paused');
    assert.equal(out.pausedAgain.step, out.paused.step, 'no progress during 300 ms of pause');
    assert.equal(out.metricsWhilePaused, 0);
    // Resume continues from there; stop ends the run before its 300 steps.
    assert.equal(out.resumed.step, out.paused.step);
    assert.ok(out.stopped.step >= out.paused.step + 30 && out.stopped.step < 300, `stopped at ${out.stopped.step}`);
    assert.equal(out.stopped.reason, 'stopped');
    assert.deepEqual(out.done, { step: out.stopped.step, reason: 'stopped' });
    assert.deepEqual(out.stoppedEvents, [{ step: out.stopped.step, reason: 'stopped' }]);
    assert.equal(out.afterStop, out.stopped.step, 'no step after stop');
    assert.match(out.resumeError, /resume: the run has already stopped/);
    // The saved model.
    assert.ok(out.isUint8 && out.bytesLength > 1000);
    assert.equal(out.infoStep, out.stopped.step);
    assert.equal(out.config.n_layers, 1);
    assert.ok(out.lastLoss < out.firstLoss, `loss ${out.firstLoss} -> ${out.lastLoss}`);
    assert.ok(out.accuracy >= 0 && out.accuracy <= 1);
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('a run ends by itself after its steps; a bad recipe rejects with the C++ sentence', async () => {
  const { context, page, problems } = await openPage();
  try {
    const out = await page.evaluate(async (recipe) => {
      const { TrainerClient } = await import('./worker-client.js');
      const steps = [];
      const client = new TrainerClient({ onMetrics: (m) => steps.push(...m.history.map((h) => h.step)) });
      const t0 = performance.now();
      await client.start(recipe, { metricsEvery: 7, steps: 40 });
      const done = await client.done;
      const ms = performance.now() - t0;
      client.terminate();

      const bad = new TrainerClient();
      let message = null;
      try {
        await bad.start({ ...recipe, model: { ...recipe.model, n_heads: 0 } });
      } catch (e) {
        message = e.message;
      }
      const badState = bad.state;
      bad.terminate();
      return { done, steps, message, badState, ms };
    }, recipe);
    assert.deepEqual(out.done, { step: 40, reason: 'finished' });
    assert.deepEqual(out.steps, Array.from({ length: 40 }, (_, i) => i + 1), 'the last partial batch of metrics is flushed');
    assert.match(out.message, /n_heads/);
    assert.equal(out.badState, 'failed');
    console.log(`# 40 IOI steps in the worker, one per task: ${out.ms.toFixed(0)} ms`);
    assert.deepEqual(await page.evaluate(() => window.__violations), []);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('with scoresEvery the worker records head scores every N steps, stamped with the time of the step', async () => {
  const { context, page, problems } = await openPage();
  try {
    const out = await page.evaluate(async (induction) => {
      const { TrainerClient } = await import('./worker-client.js');
      const scores = [];
      const messages = [];
      const t0 = performance.timeOrigin + performance.now();
      const client = new TrainerClient({ onMetrics: (m) => { messages.push(m.history.length); scores.push(...m.scores); } });
      await client.start(induction, { metricsEvery: 10, scoresEvery: 5 });
      await client.done;
      client.terminate();
      const t1 = performance.timeOrigin + performance.now();
      return { scores, messages, t0, t1 };
    }, { ...INDUCTION, steps: 23, batch_size: 8, seed: 0 });
    assert.deepEqual(out.scores.map((s) => s.step), [0, 5, 10, 15, 20, 23], 'before the first step, every 5 steps and after the last');
    for (const s of out.scores) {
      assert.equal(s.prefix_matching.length, 4);
      assert.equal(s.previous_token.length, 4);
      assert.ok(s.prefix_matching.every((x) => x >= 0 && x <= 1), 'scores are mean attention weights');
      assert.ok(s.time >= out.t0 && s.time <= out.t1, 'stamped on the page\'s clock');
    }
    assert.ok(out.scores.every((s, i) => i === 0 || s.time >= out.scores[i - 1].time), 'in order');
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('two and three workers share each step (data-parallel) and follow the one-worker run; stop and pause work mid-step', async () => {
  const { context, page, problems } = await openPage();
  try {
    const out = await page.evaluate(async (induction) => {
      const { TrainerClient } = await import('./worker-client.js');
      async function run(workers) {
        const history = [];
        const client = new TrainerClient({ onMetrics: (m) => history.push(...m.history) });
        const started = await client.start(induction, { metricsEvery: 5, workers });
        const done = await client.done;
        const bytes = await client.save();
        client.terminate();
        return { started: started.workers, done, history, bytes };
      }
      const one = await run(1), two = await run(2), three = await run(3);
      const { init } = await import('./wasm/circuitscope.js');
      const cs = await init();
      const scoresOf = (bytes) => {
        const m = cs.load(bytes);
        const scores = m.headScores({ batch: 4, seed: 5 });
        m.delete();
        return Array.from(scores.prefix_matching.data);
      };
      // A stop while helpers are computing ends the run quietly; a pause waits for the step.
      const log = { errors: [] };
      const c = new TrainerClient({ onError: (e) => log.errors.push(e.message) });
      await c.start({ ...induction, steps: 100000 }, { metricsEvery: 1, workers: 2 });
      await new Promise((r) => setTimeout(r, 150));
      const paused = await c.pause();
      const resumed = await c.resume();
      await new Promise((r) => setTimeout(r, 100));
      const stopped = await c.stop();
      await new Promise((r) => setTimeout(r, 200));
      c.terminate();
      // More workers than rows: capped at the batch size.
      const capped = new TrainerClient();
      const cappedStart = await capped.start({ ...induction, batch_size: 2, steps: 3 }, { workers: 8 });
      await capped.done;
      capped.terminate();
      return {
        one: { started: one.started, done: one.done, loss: one.history.map((h) => h.loss), scores: scoresOf(one.bytes) },
        two: { started: two.started, done: two.done, loss: two.history.map((h) => h.loss), scores: scoresOf(two.bytes) },
        three: { started: three.started, loss: three.history.map((h) => h.loss), scores: scoresOf(three.bytes) },
        paused, resumed, stopped, errors: log.errors, cappedWorkers: cappedStart.workers,
      };
    }, { ...INDUCTION, steps: 25, batch_size: 16, seed: 2 });
    assert.equal(out.one.started, 1);
    assert.equal(out.two.started, 2);
    assert.equal(out.three.started, 3);
    assert.equal(out.cappedWorkers, 2, 'at most one worker per row of the batch');
    assert.equal(out.two.done.step, 25);
    for (const run of [out.two, out.three]) {
      assert.equal(run.loss.length, 25);
      for (let i = 0; i < 25; i++)
        assert.ok(Math.abs(run.loss[i] - out.one.loss[i]) <= 1e-4 * out.one.loss[i], `step ${i + 1}: ${run.loss[i]} vs ${out.one.loss[i]}`);
      for (let i = 0; i < run.scores.length; i++)
        assert.ok(Math.abs(run.scores[i] - out.one.scores[i]) <= 1e-3, `head ${i}: prefix matching ${run.scores[i]} vs ${out.one.scores[i]}`);
    }
    assert.ok(out.two.loss.some((x, i) => x !== out.one.loss[i]) || out.three.loss.some((x, i) => x !== out.one.loss[i]),
      'the shards\' sums differ in rounding somewhere (else the batch was not split)');
    assert.ok(out.resumed.step >= out.paused.step);
    assert.ok(out.stopped.step >= out.resumed.step);
    assert.deepEqual(out.errors, [], 'stopping mid-step is not an error');
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});
