// The relaxed-SIMD module (build/wasm/circuitscope-relaxed.wasm: the kernels' multiply-adds are
// f32x4.relaxed_madd, fused where the processor has FMA) against the SIMD128 module on every call
// tests/js/wasm_vs_native.test.mjs makes: the same tokens, logits, per-token losses and patterns
// within float32 rounding, and the same errors for corrupt files and over-long inputs. Also: the
// build really holds relaxed_madd in its standard encoding (and the SIMD128 module none), and
// the post-link rewrite (scripts/wasm-relaxed-opcodes.mjs) touches opcodes only, never bytes of
// an immediate that happen to look like one.
//
// Tolerances: a fused multiply-add rounds once where a multiply then an add round twice, so each
// product term differs by at most half an ulp; carried through the layers, the shipped models'
// logits differ by up to 1.6e-6 of the position's largest |logit| and their attention
// probabilities by up to 3.6e-6 (measured here; each run prints its largest differences). The
// test allows 1e-5 of max(1, max |logit| at that position) for logits, 1e-5 relative for losses
// and 1e-5 absolute for attention probabilities.
import v8 from 'node:v8';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { root, wrapper } from './module.mjs';
import { rewrite } from '../../scripts/wasm-relaxed-opcodes.mjs';

// node 20 ships relaxed SIMD behind a flag; it must be set before any module is compiled.
v8.setFlagsFromString('--experimental-wasm-relaxed-simd');

const modelsDir = path.join(root, 'models');
const models = existsSync(modelsDir)
  ? readdirSync(modelsDir).filter((f) => f.endsWith('.safetensors')).sort().map((f) => path.join(modelsDir, f))
  : [];
const relaxedWasm = path.join(root, 'build', 'wasm', 'circuitscope-relaxed.wasm');
const simd128Wasm = path.join(root, 'build', 'wasm', 'circuitscope.wasm');

let pair = null;
// Both modules, each its own instance: {relaxed, simd128}.
function modules() {
  if (!pair) {
    pair = (async () => {
      assert.ok(existsSync(wrapper), 'build/wasm/circuitscope.js is missing: run `npm run build` first');
      assert.ok(existsSync(relaxedWasm), 'build/wasm/circuitscope-relaxed.wasm is missing: run `npm run build` first');
      const m = await import(pathToFileURL(wrapper).href);
      assert.equal(m.hasRelaxedSimd(), true, 'node does not run relaxed SIMD even with --experimental-wasm-relaxed-simd');
      const [relaxed, simd128] = await Promise.all([m.init({ simd: 'relaxed' }), m.init({ simd: 'simd128' })]);
      return { relaxed, simd128, auto: await m.init() };
    })();
  }
  return pair;
}

function sampleText(model, maxTokens) {  // as in wasm_vs_native.test.mjs
  if (model.tokenizer.kind === 'word') {
    const words = model.tokenizer.vocab.filter((w) => !/^<.*>$/.test(w) && /^[\p{L}\p{N}_']+$/u.test(w));
    const picked = [];
    for (let i = 0; picked.length < Math.min(12, maxTokens - 1) && words.length; i++) picked.push(words[(i * 7) % words.length]);
    return picked.join(' ');
  }
  return 'The cat sat on the mat. The cat sat on the mat! 0123 xyz'.slice(0, Math.max(1, maxTokens - 1));
}

test('each module says which it is; by default (relaxed SIMD on, file present) the relaxed one', async () => {
  const { relaxed, simd128, auto } = await modules();
  assert.equal(relaxed.simd, 'relaxed');
  assert.equal(simd128.simd, 'simd128');
  assert.equal(auto.simd, 'relaxed');
  assert.equal(relaxed.version, simd128.version);
});

test('an engine without relaxed SIMD (node 20 without its flag) gets the SIMD128 module, and a clear Error if it asks for relaxed', () => {
  const script = `
    const m = await import(${JSON.stringify(pathToFileURL(wrapper).href)});
    const auto = await m.init();
    let refused = null;
    try { await m.init({ simd: 'relaxed' }); } catch (e) { refused = e.message; }
    console.log(JSON.stringify({ has: m.hasRelaxedSimd(), simd: auto.simd, refused }));`;
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }));
  assert.equal(out.has, false);
  assert.equal(out.simd, 'simd128');
  assert.match(out.refused ?? '', /^init: this engine does not run WebAssembly relaxed SIMD/);
});

test('the relaxed module holds f32x4.relaxed_madd in its standard encoding, the SIMD128 module none', () => {
  const r = rewrite(new Uint8Array(readFileSync(relaxedWasm)));
  assert.equal(r.rewritten, 0, 'a pre-standard relaxed_madd was left in circuitscope-relaxed.wasm');
  assert.ok(r.standard >= 8, `only ${r.standard} relaxed_madd in circuitscope-relaxed.wasm (the GEMM micro-kernel alone has 8)`);
  const s = rewrite(new Uint8Array(readFileSync(simd128Wasm)));
  assert.equal(s.rewritten + s.standard, 0, 'circuitscope.wasm holds relaxed SIMD');
});

test('the opcode rewrite changes instructions only, not immediates that hold the same bytes', () => {
  // (func (result v128)
  //   v128.const <fd af 01 fd af 01, then ten zeros> drop
  //   i32.const 22525 (its LEB128 bytes are fd af 01) drop
  //   v128.const 0 v128.const 0 v128.const 0 f32x4.relaxed_madd (pre-standard: fd af 01))
  const zero = [0xfd, 0x0c, ...new Array(16).fill(0)];
  const body = [0, 0xfd, 0x0c, 0xfd, 0xaf, 0x01, 0xfd, 0xaf, 0x01, ...new Array(10).fill(0), 0x1a,
    0x41, 0xfd, 0xaf, 0x01, 0x1a, ...zero, ...zero, ...zero, 0xfd, 0xaf, 0x01, 0x0b];
  const code = [1, body.length, ...body];
  const bytes = Uint8Array.of(0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 0x60, 0, 1, 0x7b, 3, 2, 1, 0, 10, code.length, ...code);
  const before = Uint8Array.from(bytes);
  const c = rewrite(bytes);
  assert.deepEqual(c, { functions: 1, rewritten: 1, standard: 0 });
  const changed = [];
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== before[i]) changed.push(i);
  const op = bytes.length - 3;  // fd <opcode>, then end
  assert.deepEqual(changed, [op, op + 1], 'only the instruction\'s opcode bytes change');
  assert.deepEqual(Array.from(bytes.subarray(op - 1, op + 2)), [0xfd, 0x85, 0x02]);
  assert.equal(WebAssembly.validate(bytes), true, 'the rewritten function validates');
  assert.equal(WebAssembly.validate(before), false, 'the pre-standard opcode does not validate in this engine');
});

test('models/ holds at least one model to compare', () => {
  assert.ok(models.length > 0, `no *.safetensors in ${modelsDir}`);
});

for (const modelPath of models) {
  const name = path.relative(root, modelPath);
  test(`${name}: relaxed-SIMD and SIMD128 modules agree`, async (t) => {
    const { relaxed, simd128 } = await modules();
    const bytes = readFileSync(modelPath);
    const a = simd128.load(bytes), b = relaxed.load(bytes);
    try {
      const text = sampleText(a, a.config.n_ctx);
      const ids = a.tokenize(text).ids;
      await t.test('same tokens', () => {
        assert.deepEqual(Array.from(b.tokenize(text).ids), Array.from(ids));
      });
      const ra = a.run(ids), rb = b.run(ids);
      const T = ids.length, V = a.config.d_vocab;

      await t.test('same logits (|diff| <= 1e-5 * max(1, max |logit| at that position))', () => {
        assert.deepEqual(rb.logits.shape, ra.logits.shape);
        let worstRatio = 0, differing = 0;
        for (let p = 0; p < T; p++) {
          let scale = 1;
          for (let v = 0; v < V; v++) scale = Math.max(scale, Math.abs(ra.logits.data[p * V + v]));
          for (let v = 0; v < V; v++) {
            const x = ra.logits.data[p * V + v], y = rb.logits.data[p * V + v];
            if (x !== y) differing++;
            const ratio = Math.abs(x - y) / scale;
            worstRatio = Math.max(worstRatio, ratio);
            assert.ok(ratio <= 1e-5, `logit [pos ${p}, token ${v}]: SIMD128 ${x}, relaxed ${y}`);
          }
        }
        t.diagnostic(`largest |SIMD128 - relaxed| / scale: ${worstRatio.toExponential(2)}; ${differing} of ${T * V} logits differ`);
      });

      await t.test('same per-token loss (relative 1e-5)', () => {
        assert.deepEqual(rb.loss.shape, ra.loss.shape);
        assert.ok(Number.isNaN(rb.loss.data[T - 1]), 'the last position has no target: NaN');
        for (let p = 0; p < T - 1; p++) {
          const x = ra.loss.data[p], y = rb.loss.data[p];
          assert.ok(Math.abs(x - y) <= 1e-5 * Math.max(1, Math.abs(x)), `loss at ${p}: SIMD128 ${x}, relaxed ${y}`);
        }
      });

      await t.test('same patterns (|diff| <= 1e-5), zero above the diagonal in both', () => {
        assert.deepEqual(rb.patterns.shape, ra.patterns.shape);
        const da = ra.patterns.data, db = rb.patterns.data;
        let worst = 0;
        for (let i = 0; i < da.length; i++) {
          const q = Math.floor(i / T) % T, k = i % T;
          if (k > q) assert.equal(db[i], 0, `attention to a later position at ${i}`);
          worst = Math.max(worst, Math.abs(da[i] - db[i]));
          assert.ok(Math.abs(da[i] - db[i]) <= 1e-5, `pattern value ${i}: SIMD128 ${da[i]}, relaxed ${db[i]}`);
        }
        t.diagnostic(`largest |SIMD128 - relaxed| attention probability: ${worst.toExponential(2)}`);
      });
    } finally {
      a.delete();
      b.delete();
    }
  });
}

test('corrupt model files: the same "model file:" Error from both modules', async (t) => {
  assert.ok(models.length > 0, 'needs a real model file to corrupt');
  const { relaxed, simd128 } = await modules();
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
      b.fill(0x7b, 8, 8 + Math.min(header, 64));
      return b;
    })(),
  };
  const message = (instance, data) => {
    try {
      instance.load(data).delete();
    } catch (e) {
      assert.ok(e instanceof Error, `expected an Error, got ${typeof e}: ${String(e)}`);
      return e.message;
    }
    assert.fail('a corrupt file loaded');
  };
  for (const [what, data] of Object.entries(cases)) {
    await t.test(what, () => {
      const m = message(relaxed, data);
      assert.match(m, /^model file:/);
      assert.equal(m, message(simd128, data));
    });
  }
});

test('run() of more tokens than the context: the same Error from both modules', async () => {
  assert.ok(models.length > 0, 'needs a real model file');
  const { relaxed, simd128 } = await modules();
  const messages = [relaxed, simd128].map((instance) => {
    const model = instance.load(readFileSync(models[0]));
    try {
      model.run(new Int32Array(model.config.n_ctx + 1));
    } catch (e) {
      assert.ok(e instanceof Error);
      return e.message;
    } finally {
      model.delete();
    }
    return assert.fail('run() accepted too many tokens');
  });
  assert.match(messages[0], /longer than the model's context/);
  assert.equal(messages[0], messages[1]);
});
