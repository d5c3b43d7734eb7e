// Native versus WASM: for every shipped model, the native CLI and the WebAssembly module must
// tokenize the same text the same way and give the same logits and per-token losses within
// float tolerance. Also: a corrupt model file must fail with a "model file:" Error.
// Needs `npm run build` (build/native/circuitscope and build/wasm/circuitscope.js).
// CIRCUITSCOPE_MODELS=dir runs it on another folder of models (default: models/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cs } from './module.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const modelsDir = path.resolve(root, process.env.CIRCUITSCOPE_MODELS ?? 'models');
const cli = path.join(root, 'build', 'native', 'circuitscope');

const models = existsSync(modelsDir)
  ? readdirSync(modelsDir).filter((f) => f.endsWith('.safetensors')).sort().map((f) => path.join(modelsDir, f))
  : [];


// A text the model can tokenize, at most maxTokens - 1 tokens long (room for <BOS>).
function sampleText(model, maxTokens) {
  if (model.tokenizer.kind === 'word') {
    const words = model.tokenizer.vocab.filter((w) => !/^<.*>$/.test(w) && /^[\p{L}\p{N}_']+$/u.test(w));
    const picked = [];
    for (let i = 0; picked.length < Math.min(12, maxTokens - 1) && words.length; i++) {
      picked.push(words[(i * 7) % words.length]);
    }
    return picked.join(' ');
  }
  const text = 'The cat sat on the mat. The cat sat on the mat! 0123 xyz';
  return text.slice(0, Math.max(1, maxTokens - 1));
}

function runCli(modelPath, text) {
  assert.ok(existsSync(cli), `${path.relative(root, cli)} is missing: run \`npm run build\` first`);
  const out = execFileSync(cli, ['run', modelPath, '--text', text, '--json'], {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  return JSON.parse(out);
}

test('models/ holds at least one model to compare', () => {
  if (!models.length) console.log(`no ${path.relative(root, modelsDir) || '.'}/*.safetensors: nothing to compare`);
  assert.ok(models.length > 0, `no *.safetensors in ${modelsDir}: native-versus-WASM comparison cannot run`);
});

for (const modelPath of models) {
  const name = modelPath.startsWith(root + path.sep) ? path.relative(root, modelPath) : modelPath;

  test(`${name}: native CLI and WASM agree`, async (t) => {
    const instance = await cs();
    const model = instance.load(readFileSync(modelPath));
    try {
      const text = sampleText(model, model.config.n_ctx);
      const native = runCli(modelPath, text);
      const V = model.config.d_vocab;

      await t.test('same tokens', () => {
        const toks = model.tokenize(text);
        assert.deepEqual(Array.from(toks.ids), native.tokens, `tokens of ${JSON.stringify(text)}`);
      });

      const ids = Int32Array.from(native.tokens);
      const T = ids.length;
      const result = model.run(ids);

      // Float32 sums in a different order (Eigen's SSE kernels natively, its scalar path in WASM)
      // differ in the last bits, and two layers of attention carry that along: the tolerance is
      // 1e-5 of the largest logit magnitude at that position.
      await t.test('same logits (|diff| <= 1e-5 * max(1, max |logit| at that position))', () => {
        assert.deepEqual(result.logits.shape, [T, V]);
        assert.deepEqual(result.logits.axes, ['pos', 'd_vocab']);
        assert.equal(native.logits.length, T);
        let worst = { excess: -Infinity };
        let worstRatio = 0;
        for (let p = 0; p < T; p++) {
          assert.equal(native.logits[p].length, V, `native logits row ${p}`);
          const scale = Math.max(1, ...native.logits[p].map(Math.abs));
          for (let v = 0; v < V; v++) {
            const a = native.logits[p][v];
            const b = result.logits.data[p * V + v];
            const tol = 1e-5 * scale;
            worstRatio = Math.max(worstRatio, Math.abs(a - b) / scale);
            const excess = Math.abs(a - b) - tol;
            if (excess > worst.excess) worst = { excess, p, v, a, b, tol };
          }
        }
        t.diagnostic(`largest |native - WASM| / scale: ${worstRatio.toExponential(2)}`);
        assert.ok(worst.excess <= 0,
          `logit [pos ${worst.p}, token ${worst.v}]: native ${worst.a}, WASM ${worst.b}, ` +
          `|diff| ${Math.abs(worst.a - worst.b)} > ${worst.tol}`);
      });

      await t.test('same per-token loss', () => {
        assert.deepEqual(result.loss.shape, [T]);
        assert.ok(Number.isNaN(result.loss.data[T - 1]), 'the last position has no target: NaN');
        if (!Array.isArray(native.loss)) return;  // older CLI without losses
        for (let p = 1; p < T; p++) {
          const a = native.loss[p];  // CLI: loss of predicting token p
          const b = result.loss.data[p - 1];  // WASM: loss at position p-1 of predicting token p
          assert.ok(Math.abs(a - b) <= 1e-5 * Math.max(1, Math.abs(a)), `loss of token ${p}: native ${a}, WASM ${b}`);
        }
      });

      await t.test('patterns are causal probability rows', () => {
        const { n_layers: L, n_heads: H } = model.config;
        assert.deepEqual(result.patterns.shape, [L, H, T, T]);
        assert.deepEqual(result.patterns.axes, ['layer', 'head', 'query_pos', 'key_pos']);
        const d = result.patterns.data;
        for (let row = 0; row < L * H * T; row++) {
          const q = row % T;
          let s = 0;
          for (let k = 0; k < T; k++) {
            const x = d[row * T + k];
            if (k > q) assert.equal(x, 0, `attention to a later position (row ${row}, key ${k})`);
            s += x;
          }
          assert.ok(Math.abs(s - 1) < 1e-4, `pattern row ${row} sums to ${s}`);
        }
      });
    } finally {
      model.delete();
    }
  });
}

// Seed 001's composition cuts under each ablation kind (the intervention's `ablation`): the page's
// ioiEvaluate equals the CLI's `circuitscope ioi --cut X --ablation KIND`, and one sequence analysed
// alone (the view's sequence) gets what it gets in the evaluation of all 60.
test('ioi-2l1h: every composition cut under every ablation kind, native CLI and WASM agree', async (t) => {
  const modelPath = path.join(modelsDir, 'ioi-2l1h.safetensors');
  assert.ok(existsSync(modelPath), `${modelPath} is missing`);
  const instance = await cs();
  const model = instance.load(readFileSync(modelPath));
  try {
    const seqs = model.ioiSequences();
    const seen = new Set();
    for (const input of ['q', 'k', 'v']) {
      for (const kind of ['zero', 'mean', 'mean-all', 'resample']) {
        const native = JSON.parse(execFileSync(cli, ['ioi', modelPath, '--cut', input, '--ablation', kind, '--json'], { encoding: 'utf8' }));
        const iv = { ...model.cutComposition(input), ablation: kind };
        const wasm = model.ioiEvaluate(iv);
        t.diagnostic(`${input} cut, ${kind}: native ${native.accuracy}, WASM ${wasm.accuracy}`);
        assert.equal(wasm.correct, native.correct, `${input} ${kind}: correct`);
        assert.ok(Math.abs(wasm.mean_logit_diff - native.mean_logit_diff) <= 1e-4 * Math.max(1, Math.abs(native.mean_logit_diff)), `${input} ${kind}: mean logit difference`);
        assert.ok(Math.abs(wasm.mean_prob_io - native.mean_prob_io) <= 1e-5, `${input} ${kind}: p(IO)`);
        seen.add(`${input}:${native.accuracy}:${native.mean_logit_diff.toFixed(4)}`);
        for (let i = 0; i < 60; i += 11) {
          const one = model.ioi(seqs.data.subarray(i * 5, i * 5 + 5), iv);
          assert.equal(one.predicted, wasm.predicted.data[i], `${input} ${kind}: sequence ${i} alone`);
          assert.ok(Math.abs(one.logit_diff - wasm.logit_diff.data[i]) <= 1e-4, `${input} ${kind}: sequence ${i} logit difference`);
        }
      }
    }
    assert.ok(seen.size >= 10, 'the kinds give different results');
    assert.throws(() => model.ioiEvaluate({ ...model.cutComposition('q'), ablation: 'median' }),
      (e) => e instanceof Error && /ablation must be 'zero', 'mean', 'mean-all' or 'resample', got "median"/.test(e.message));
  } finally {
    model.delete();
  }
  // A model without the IOI task averages over repeated random tokens as long as its context:
  // every kind answers, differently, and the same kind answers the same way twice.
  const char = instance.load(readFileSync(path.join(modelsDir, 'char-2l.safetensors')));
  try {
    const text = 'the cat sat on the mat. the cat sat on the mat.';
    const losses = ['zero', 'mean', 'mean-all', 'resample'].map((ablation) => char.run(text, { ablate: [{ layer: 1, head: 1 }], ...char.cutComposition('k'), ablation }).loss.data.join());
    assert.equal(new Set(losses).size, 4, 'four kinds, four results');
    assert.equal(char.run(text, { ...char.cutComposition('k'), ablation: 'resample' }).loss.data.join(),
      char.run(text, { ...char.cutComposition('k'), ablation: 'resample' }).loss.data.join());
    assert.throws(() => char.run(text, { ablateMlp: [{ layer: 0 }], ablation: 'mean' }), (e) => e instanceof Error && /MLP|attention-only|no MLP/i.test(e.message));
  } finally {
    char.delete();
  }
});

test('a corrupt model file throws an Error starting with "model file:"', async (t) => {
  assert.ok(models.length > 0, 'needs a real model file to corrupt');
  const instance = await cs();
  const bytes = readFileSync(models[0]);
  const header = Number(bytes.readBigUInt64LE(0));
  const cases = {
    'truncated to half': bytes.subarray(0, Math.floor(bytes.length / 2)),
    'truncated inside the header': bytes.subarray(0, Math.min(8 + Math.floor(header / 2), bytes.length - 1)),
    'only 5 bytes': bytes.subarray(0, 5),
    'empty': new Uint8Array(0),
    'last tensor cut short': bytes.subarray(0, bytes.length - 4),
    'garbage header': (() => {
      const b = Uint8Array.from(bytes);
      b.fill(0x7b, 8, 8 + Math.min(header, 64));  // '{{{{...'
      return b;
    })(),
  };
  for (const [what, data] of Object.entries(cases)) {
    await t.test(what, () => {
      assert.throws(() => instance.load(data), (e) => {
        assert.ok(e instanceof Error, `expected an Error, got ${typeof e}: ${String(e)}`);
        assert.match(e.message, /^model file:/, `message was: ${e.message}`);
        return true;
      });
    });
  }
  // The module still works after all those errors.
  const model = instance.load(bytes);
  assert.ok(model.run(model.tokenize(sampleText(model, model.config.n_ctx)).ids).logits.data.length > 0);
  model.delete();
});

test('run() rejects more tokens than the context with a clear Error', async () => {
  assert.ok(models.length > 0, 'needs a real model file');
  const instance = await cs();
  const model = instance.load(readFileSync(models[0]));
  try {
    const n = model.config.n_ctx + 1;
    assert.throws(() => model.run(new Int32Array(n)), (e) => e instanceof Error && /longer than the model's context/.test(e.message));
  } finally {
    model.delete();
  }
});
