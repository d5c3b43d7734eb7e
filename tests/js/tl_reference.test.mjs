// circuitscope's forward pass and TransformerLens weight processing against an independent
// float64 reference of TransformerLens's HookedTransformer (tests/reference/tl_reference.py, torch
// via Debian's python3-torch under /usr/bin/python3). The Python side runs once: it writes random
// TransformerLens state dicts (safetensors) and the reference outputs into a fresh temporary
// directory; each model is then loaded twice, with {processing: 'none'} (as
// HookedTransformer.from_pretrained_no_processing) and with the default processing (as
// from_pretrained: fold_ln, center_writing_weights, center_unembed, fold_value_biases where
// TransformerLens applies them), and each load is compared with the reference run on the
// unprocessed resp. processed weights: per-token losses, logits, attention patterns, the residual
// stream stages, every head's hook_result and the direct logit attribution; the two loads'
// log-probs must agree (the processing does not change them). Needs the WASM build and torch.
//
//   node --test tests/js/tl_reference.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root, cs } from './module.mjs';

const PYTHON = '/usr/bin/python3';  // Debian's python with python3-torch, not a pyenv one first on PATH
const SCRIPT = path.join(root, 'tests', 'reference', 'tl_reference.py');

// ---------------------------------------------------------------------------------- tolerances
// circuitscope computes in float32 and the reference in float64 on the same float32 weights, so
// every difference is float32 rounding: a relative error of a few units in 2^-24 (6e-8) per
// operation, growing with the length of each sum (d_model = 32, d_mlp = 128 here; 512 for the
// full-size model) and with the depth. The logits here stay below ~30 in magnitude, so their
// error is at most ~1e-5 and a log-softmax adds no more than its largest input's error: 2e-4
// absolute plus 1e-4 relative is several times the float32 error and far below what any mistake in
// the definitions moves (a bias, a missing centering or fold: 1e-2 and up). LayerNorm's eps is
// visible only where the residual stream is small: attn-2l-ln-small-resid (rms 0.01-0.03) moves
// its losses by 0.4 between eps 1e-5 and 1e-6 (the other LN models by 7e-5, below the tolerance).
const LOSS_ABS = 2e-4;
const LOSS_REL = 1e-4;
// A pattern entry is a softmax probability: float32 keeps ~1e-7 of it, the scores feeding it
// carry ~1e-6 relative error; 1e-5 absolute.
const PATTERN_ABS = 1e-5;
// Activations (resid stages, hook_result, logits, attribution rows): max |difference| within 1e-5
// of the tensor's root mean square (per stage / per layer / per attribution row set), i.e. ~100
// float32 ulps of a typical entry, or within F32_FACTOR times what the same forward pass computed
// in float32 by PyTorch deviates from float64 (the reference reports it per field), whichever is
// larger: deep LayerNorm models with sharp random attention carry more rounding than 1e-5
// (measured: hook_result of attn-4l-ln, 1.6e-5 for circuitscope, of the same order for PyTorch).
const RMS_REL = 1e-5;
const F32_FACTOR = 4;

// ---------------------------------------------------------------------------------- the models
const SMALL = { d_model: 32, n_heads: 4, d_head: 8, n_ctx: 64, d_vocab: 50 };
const T = 40;
const ALL = ['losses', 'logprobs', 'logits', 'patterns', 'resid', 'result', 'attribution'];
const small = (name, seed, config, extra = {}) => ({
  name, seed, config: { ...SMALL, ...config }, n_tokens: T, outputs: ALL,
  attribution_pos: [T / 2 - 1, T - 1], variants: ['none', 'processed'], buffers: 'full', ...extra,
});
const LN = { normalization_type: 'LN' };
const MLP = (act_fn) => ({ ...LN, attn_only: false, d_mlp: 4 * SMALL.d_model, act_fn });
const NONE = { normalization_type: 'None' };
const CASES = [
  small('attn-1l-ln', 11, { n_layers: 1, ...LN }),
  small('attn-2l-ln', 12, { n_layers: 2, ...LN }),
  small('attn-3l-ln', 13, { n_layers: 3, ...LN }),
  small('attn-4l-ln', 14, { n_layers: 4, ...LN }),
  // A residual stream of rms ~0.01-0.03, where eps = 1e-5 inside the square root matters.
  small('attn-2l-ln-small-resid', 25, { n_layers: 2, ...LN, std: { W_E: 0.01, W_pos: 0.006, W_O: 0.002, bias: 0.002 } }),
  // A processed file, as one saves a from_pretrained model's state dict: no LayerNorm tensors,
  // normalization_type LNPre in the metadata (the tensors cannot tell LNPre from None).
  small('attn-2l-lnpre-processed', 15, { n_layers: 2, ...LN }, { file_kind: 'processed' }),
  // LNPre with unprocessed weights (uncentred writing weights, value biases): processing centres
  // them and folds b_V, but has no LayerNorm to fold.
  small('attn-1l-lnpre-raw', 16, { n_layers: 1, normalization_type: 'LNPre' }),
  small('gelu-2l-ln', 17, { n_layers: 2, ...MLP('gelu') }),
  small('gelu_new-1l-ln', 18, { n_layers: 1, ...MLP('gelu_new') }),
  small('relu-1l-ln', 19, { n_layers: 1, ...MLP('relu') }),
  // Shortformer with LayerNorm: from_pretrained folds nothing but the value biases (no fold_ln,
  // no centering, no center_unembed for shortformer models).
  small('shortformer-1l-ln', 20, { n_layers: 1, ...LN, positional_embedding_type: 'shortformer' }),
  small('shortformer-2l-none', 21, { n_layers: 2, ...NONE, positional_embedding_type: 'shortformer' }, { buffers: 'none' }),
  small('standard-2l-none', 22, { n_layers: 2, ...NONE }),
  // A state dict saved by TransformerLens >= 3.5, whose attn.mask buffer is an empty [0, 0] tensor
  // (the causal mask is built at forward time, components/abstract_attention.py).
  small('standard-1l-none-tl35-buffers', 23, { n_layers: 1, ...NONE }, { buffers: 'empty' }),
];
// attn-only-2l's full shape, LayerNorm, processed on load; weights scaled by 1/sqrt(fan-in).
const FULL = {
  name: 'attn-only-2l-full-size', seed: 24, n_tokens: 300, outputs: ['losses'], variants: ['processed'], buffers: 'full',
  config: {
    n_layers: 2, d_model: 512, n_heads: 8, d_head: 64, n_ctx: 1024, d_vocab: 48262, ...LN,
    std: { W_E: 0.5, W_pos: 0.2, W_Q: 0.066, W_K: 0.066, W_V: 0.044, W_O: 0.044, W_U: 0.09 },
  },
};
// ARENA's attn_only_2L_half's shape (83.5 M weights, over what circuitscope trains but within what it
// opens): no LayerNorm, shortformer positions, processed on load as from_pretrained would
// (center_unembed and fold_value_biases only); weights scaled by 1/sqrt(fan-in).
const ARENA = {
  name: 'attn-only-2l-half-arena-size', seed: 26, n_tokens: 300, outputs: ['losses'], variants: ['processed'], buffers: 'full',
  config: {
    n_layers: 2, d_model: 768, n_heads: 12, d_head: 64, n_ctx: 2048, d_vocab: 50278, ...NONE, positional_embedding_type: 'shortformer',
    std: { W_E: 0.5, W_pos: 0.2, W_Q: 0.05, W_K: 0.05, W_V: 0.036, W_O: 0.036, W_U: 0.07 },
  },
};
const FULL_SIZE = [FULL, ARENA];

// ---------------------------------------------------------------------------------- the reference
let ref = null;  // {dir, index, seconds} or {error}
let api;

function runReference() {
  const probe = spawnSync(PYTHON, ['-c', 'import torch, numpy'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    const why = probe.error ? probe.error.message : (probe.stderr || '').trim().split('\n').pop();
    return {
      error: `the TransformerLens reference needs torch under ${PYTHON}, but \`${PYTHON} -c 'import torch'\` failed ` +
        `(${why}): install Debian's python3-torch (apt-get install python3-torch; scripts/ensure-deps.sh installs it)`,
    };
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'circuitscope-tl-reference-'));
  const t0 = Date.now();
  const r = spawnSync(PYTHON, [SCRIPT, dir], {
    input: JSON.stringify({ cases: [...CASES, ...FULL_SIZE] }), encoding: 'utf8', maxBuffer: 1 << 26, timeout: 300_000,
  });
  if (r.error || r.status !== 0) {
    const tail = (r.stderr || '').trim().split('\n').slice(-6).join(' | ');
    return { dir, error: `tests/reference/tl_reference.py failed (${r.error ? r.error.message : `exit ${r.status}`}): ${tail}` };
  }
  const index = JSON.parse(readFileSync(path.join(dir, 'index.json'), 'utf8'));
  return { dir, index, seconds: (Date.now() - t0) / 1000 };
}

before(async () => {
  ref = runReference();
  if (!ref.error) {
    console.log(`# reference: ${ref.seconds.toFixed(1)} s (python: ${ref.index.seconds.total} s, of which ` +
      `${FULL_SIZE.map((c) => `${c.name} ${ref.index.seconds[c.name]} s`).join(', ')}), torch ${ref.index.torch}`);
  }
  api = await cs();
});
after(() => { if (ref?.dir) rmSync(ref.dir, { recursive: true, force: true }); });

function need() {
  if (ref.error) throw new Error(ref.error);
  return ref.index;
}
const f64 = (file) => {
  const b = readFileSync(path.join(ref.dir, file));
  return new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
};
const fileBytes = (c) => new Uint8Array(readFileSync(path.join(ref.dir, c.file)));

// A model loaded as the variant asks ('none': {processing: 'none'}; 'processed': the default).
function load(c, variant) {
  const bytes = fileBytes(c);
  return variant === 'none' ? api.load(bytes, { processing: 'none' }) : api.load(bytes);
}
function withModel(c, variant, fn) {
  let m;
  try {
    m = load(c, variant);
  } catch (e) {
    throw new Error(`${variant === 'none' ? "load(bytes, {processing: 'none'})" : 'load(bytes)'} refused the file: ${e.message}`);
  }
  try {
    return fn(m);
  } finally {
    m.delete();
  }
}

// ---------------------------------------------------------------------------------- comparisons
const fmt = (x) => (Number.isFinite(x) ? Number(x.toPrecision(7)).toString() : String(x));
const rms = (a, from = 0, to = a.length) => {
  let s = 0;
  for (let i = from; i < to; i++) s += a[i] * a[i];
  return Math.sqrt(s / Math.max(1, to - from));
};
// Row-major index -> [i, j, ...] for shape.
const unravel = (i, shape) => {
  const out = new Array(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    out[d] = i % shape[d];
    i = Math.floor(i / shape[d]);
  }
  return out;
};

function checkShape(problems, what, got, shape) {
  const n = shape.reduce((a, b) => a * b, 1);
  if (!got || got.length !== n) {
    problems.push(`${what}: got ${got ? got.length : 'nothing'} values, the reference has shape [${shape}] (${n})`);
    return false;
  }
  return true;
}

// Elementwise |got - want| <= abs + rel |want|; reports the worst element and how many fail.
function compareAbs(problems, what, got, want, shape, abs, rel, where) {
  if (!checkShape(problems, what, got, shape)) return;
  let bad = 0, worst = -1, worstExcess = 0;
  for (let i = 0; i < want.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    const tol = abs + rel * Math.abs(want[i]);
    if (!(d <= tol)) {
      bad++;
      const excess = Number.isNaN(d) ? Infinity : d / tol;
      if (excess > worstExcess || worst < 0) { worst = i; worstExcess = excess; }
    }
  }
  if (bad) {
    const d = Math.abs(got[worst] - want[worst]);
    problems.push(`${what}: ${bad} of ${want.length} values off; worst at ${where(unravel(worst, shape))}: got ${fmt(got[worst])}, ` +
      `want ${fmt(want[worst])} (|diff| ${fmt(d)} > ${fmt(abs + rel * Math.abs(want[worst]))})`);
  }
}

// Blocks of `block` values (the leading axes of shape name them): max |got - want| <= RMS_REL *
// rms(want's block).
function compareRms(problems, what, got, want, shape, blockAxes, where, f32dev = 0) {
  if (!checkShape(problems, what, got, shape)) return;
  const RMS_TOL = Math.max(RMS_REL, F32_FACTOR * f32dev);
  const block = shape.slice(blockAxes).reduce((a, b) => a * b, 1);
  for (let b0 = 0; b0 < want.length; b0 += block) {
    const scale = rms(want, b0, b0 + block);
    let worst = b0, wd = -1;
    for (let i = b0; i < b0 + block; i++) {
      const d = Math.abs(got[i] - want[i]);
      if (!(d <= wd)) { wd = Number.isNaN(d) ? Infinity : d; worst = i; }
    }
    if (!(wd <= RMS_TOL * scale)) {
      problems.push(`${what}: at ${where(unravel(worst, shape))}: got ${fmt(got[worst])}, want ${fmt(want[worst])} ` +
        `(|diff| ${fmt(wd)} = ${fmt(wd / scale)} x the block's RMS ${fmt(scale)}, tolerance ${fmt(RMS_TOL)}; ` +
        `float32 PyTorch's own deviation ${fmt(f32dev)})`);
    }
  }
}

const MLP_NAME = /^(?:L(\d+)[ ._]?MLP|MLP[ _]?(\d+)|blocks\.(\d+)\.mlp)$/i;
const canonical = (name) => {
  const m = MLP_NAME.exec(name);
  return m ? `MLP${m[1] ?? m[2] ?? m[3]}` : name;
};

// circuitscope's attribution at a.pos against the reference rows: embed, pos_embed, every head
// and MLP by name; every other row of circuitscope's (the biases, however it splits them) summed
// against the reference's "bias" row (every b_O through the frozen final LN, ln_final.b @ W_U, b_U).
function compareAttribution(problems, m, ids, a, V) {
  const want = f64(a.file);
  const P = a.names.length;
  const rowsWant = new Map(a.names.map((n, i) => [n, want.subarray(i * V, (i + 1) * V)]));
  let scale = 0;
  for (const r of rowsWant.values()) scale = Math.max(scale, rms(r));
  const tol = RMS_REL * scale;
  let got;
  try {
    got = m.attribution(a.pos, { tokens: ids });
  } catch (e) {
    problems.push(`attribution at pos ${a.pos}: ${e.message}`);
    return;
  }
  const gotRows = new Map();
  const rest = new Float64Array(V);
  const restNames = [];
  got.names.forEach((n, i) => {
    const row = got.parts.data.subarray(i * V, (i + 1) * V);
    const key = canonical(n);
    if (key !== 'bias' && rowsWant.has(key)) gotRows.set(key, row);
    else {
      restNames.push(n);
      for (let v = 0; v < V; v++) rest[v] += row[v];
    }
  });
  const maxDiff = (x, y) => {
    let worst = 0, at = 0;
    for (let v = 0; v < V; v++) {
      const d = Math.abs(x[v] - y[v]);
      if (!(d <= worst)) { worst = Number.isNaN(d) ? Infinity : d; at = v; }
    }
    return [worst, at];
  };
  const extra = a.extra_file ? f64(a.extra_file) : null;
  for (const [name, w] of rowsWant) {
    if (name === 'bias') continue;
    const g = gotRows.get(name);
    if (!g) {
      problems.push(`attribution at pos ${a.pos}: no row for ${name} (circuitscope's rows: ${got.names.join(', ')})`);
      continue;
    }
    const [d, at] = maxDiff(g, w);
    if (d > tol) {
      let hint = '';
      if (extra && name.startsWith('MLP')) {
        const l = Number(name.slice(3));
        const bOut = extra.subarray(l * V, (l + 1) * V);
        const [d2] = maxDiff(g, w.map((x, v) => x - bOut[v]));
        if (d2 <= tol) hint = ' (it matches the MLP output without b_out: TransformerLens\'s hook_mlp_out includes b_out)';
      }
      problems.push(`attribution at pos ${a.pos}, row ${name}, logit ${at}: got ${fmt(g[at])}, want ${fmt(w[at])} ` +
        `(|diff| ${fmt(d)} > ${fmt(tol)})${hint}`);
    }
  }
  const [d, at] = maxDiff(rest, rowsWant.get('bias'));
  if (d > tol) {
    problems.push(`attribution at pos ${a.pos}: the rows ${restNames.join(' + ') || '(none)'} sum to ${fmt(rest[at])} at logit ${at}, ` +
      `the reference's biases (b_O through the final LN, ln_final.b @ W_U, b_U) to ${fmt(rowsWant.get('bias')[at])} (|diff| ${fmt(d)} > ${fmt(tol)})`);
  }
  if (P !== rowsWant.size) problems.push('internal: duplicate reference row names');
  // Virtual-head paths (every head of layer >= 1 split by its value input's sources, ln1's scale
  // frozen at each source position): each of the reference's by name, within the same tolerance.
  if (a.paths_file) {
    const wantPaths = f64(a.paths_file);
    const index = new Map(got.path_names.map((n, i) => [n, i]));
    if (got.path_names.length !== a.path_names.length) {
      problems.push(`attribution at pos ${a.pos}: ${got.path_names.length} virtual-head paths, the reference has ${a.path_names.length}`);
    }
    a.path_names.forEach((n, q) => {
      const i = index.get(n);
      if (i === undefined) { problems.push(`attribution at pos ${a.pos}: no path ${n}`); return; }
      const [dp, atp] = maxDiff(got.paths.data.subarray(i * V, (i + 1) * V), wantPaths.subarray(q * V, (q + 1) * V));
      if (dp > tol) problems.push(`attribution at pos ${a.pos}, path ${n}, logit ${atp}: |diff| ${fmt(dp)} > ${fmt(tol)}`);
    });
  }
}

const POS_EMBED = { standard: 'standard', shortformer: 'shortformer' };

// One load of one case (variant: 'none' or 'processed') against the reference variant refVariant
// (by default the same); returns the list of problems.
function compareVariant(c, variant, refVariant = variant) {
  const v = c.variants[refVariant];
  const cfg = v.config;
  const { n_layers: L, n_heads: H, d_model: D, d_vocab: V } = cfg;
  const ids = Int32Array.from(c.tokens);
  const n = ids.length;
  const problems = [];
  withModel(c, variant, (m) => {
    for (const k of ['n_layers', 'n_heads', 'd_model', 'd_head', 'n_ctx', 'd_vocab']) {
      if (m.config[k] !== cfg[k]) problems.push(`config.${k} is ${m.config[k]}, the file's is ${cfg[k]}`);
    }
    if (m.config.pos_embed !== POS_EMBED[cfg.positional_embedding_type]) {
      problems.push(`config.pos_embed is ${m.config.pos_embed}, the file's metadata says ${cfg.positional_embedding_type}`);
    }
    const out = v.outputs;
    const full = 'resid' in out || 'result' in out;
    const r = m.run(ids, undefined, full ? { resid: true, result: true } : { patterns: false, logits: false });
    {
      const loss = r.loss.data;
      if (!(loss.length === n && Number.isNaN(loss[n - 1]))) problems.push(`loss: expected ${n} values with NaN last, got ${loss.length}, last ${loss[loss.length - 1]}`);
      compareAbs(problems, 'per-token loss', loss.subarray(0, n - 1), f64(out.losses.file), [n - 1], LOSS_ABS, LOSS_REL, ([t]) => `pos ${t} (predicting token ${t + 1})`);
    }
    const dev = v.f32_deviation ?? {};
    if (out.logits) compareRms(problems, 'logits', r.logits?.data, f64(out.logits.file), [n, V], 0, ([t, x]) => `pos ${t}, logit ${x}`, dev.logits);
    if (out.patterns) {
      compareAbs(problems, 'patterns', r.patterns?.data, f64(out.patterns.file), [L, H, n, n], PATTERN_ABS, 0,
        ([l, h, q, k]) => `blocks.${l}.attn.hook_pattern head ${h}, query ${q}, key ${k}`);
    }
    if (out.resid) {
      compareRms(problems, 'resid', r.resid?.data, f64(out.resid.file), [L + 1, n, D], 1,
        ([s, t, d]) => `${s === 0 ? 'blocks.0.hook_resid_pre' : `blocks.${s - 1}.hook_resid_post`} pos ${t}, dim ${d}`, dev.resid);
    }
    if (out.result) {
      compareRms(problems, 'hook_result', r.result?.data, f64(out.result.file), [L, H, n, D], 1,
        ([l, h, t, d]) => `blocks.${l}.attn.hook_result head ${h}, pos ${t}, dim ${d}`, dev.result);
    }
    for (const a of v.attribution) compareAttribution(problems, m, ids, a, V);
  });
  return problems;
}

// Fails with every problem (the first 12, then how many more) on its own line.
function report(what, problems) {
  const shown = problems.length > 12 ? [...problems.slice(0, 11), `... and ${problems.length - 11} more`] : problems;
  assert.ok(problems.length === 0, `${what}:\n  ${shown.join('\n  ')}`);
}

// A load that disagrees with its reference but agrees with the other variant's reference did not
// apply (or applied) the processing: say so.
function crossCheck(c, variant, problems) {
  if (problems.length === 0 || c.variants.none === undefined || c.variants.processed === undefined) return problems;
  const other = variant === 'none' ? 'processed' : 'none';
  let again = null;
  try {
    again = compareVariant(c, variant, other);
  } catch {
    return problems;
  }
  if (again.length === 0) {
    problems.push(variant === 'none'
      ? "every number matches the reference on the PROCESSED weights: {processing: 'none'} still processed the weights"
      : 'every number matches the reference on the UNPROCESSED weights: load(bytes) did not apply TransformerLens\'s processing');
  }
  return problems;
}

// ---------------------------------------------------------------------------------- the tests
test('the TransformerLens reference runs (/usr/bin/python3 with torch)', () => {
  const index = need();
  for (const c of [...CASES, ...FULL_SIZE]) assert.ok(index.cases[c.name], `no reference for ${c.name}`);
});

for (const spec of CASES) {
  test(`${spec.name}: processing 'none' matches TransformerLens (from_pretrained_no_processing)`, () => {
    const c = need().cases[spec.name];
    report(`${spec.name}, load(bytes, {processing: 'none'})`, crossCheck(c, 'none', compareVariant(c, 'none')));
  });

  test(`${spec.name}: default processing matches TransformerLens's from_pretrained`, () => {
    const c = need().cases[spec.name];
    const applied = Object.entries(c.variants.processed.processing).filter(([, on]) => on).map(([k]) => k);
    report(`${spec.name}, load(bytes) (TransformerLens applies ${applied.join(', ') || 'nothing'})`, crossCheck(c, 'processed', compareVariant(c, 'processed')));
  });

  test(`${spec.name}: processing leaves the log-probs unchanged`, () => {
    const c = need().cases[spec.name];
    const ids = Int32Array.from(c.tokens);
    const n = ids.length, V = c.config.d_vocab;
    const logprobs = (variant) => withModel(c, variant, (m) => {
      const z = m.run(ids).logits.data;
      const out = new Float64Array(n * V);
      for (let t = 0; t < n; t++) {
        let mx = -Infinity, s = 0;
        for (let x = 0; x < V; x++) mx = Math.max(mx, z[t * V + x]);
        for (let x = 0; x < V; x++) s += Math.exp(z[t * V + x] - mx);
        const lse = mx + Math.log(s);
        for (let x = 0; x < V; x++) out[t * V + x] = z[t * V + x] - lse;
      }
      return out;
    });
    const none = logprobs('none');
    const processed = logprobs('processed');
    const problems = [];
    const where = ([t, x]) => `pos ${t}, token ${x}`;
    compareAbs(problems, 'log-probs, processed load vs unprocessed load', processed, none, [n, V], LOSS_ABS, LOSS_REL, where);
    const want = f64(c.variants.none.outputs.logprobs.file);
    compareAbs(problems, 'log-probs of the unprocessed load vs the reference', none, want, [n, V], LOSS_ABS, LOSS_REL, where);
    compareAbs(problems, 'log-probs of the processed load vs the reference', processed, want, [n, V], LOSS_ABS, LOSS_REL, where);
    report(spec.name, problems);
  });
}

test('config: normalization_type, d_mlp and act_fn of every TransformerLens file, as loaded and as processed', () => {
  const index = need();
  const problems = [];
  // TransformerLens's None is circuitscope's 'none' (as pos_embed spells it).
  const norm = (t) => (t === null || t === 'None' ? 'none' : t);
  for (const spec of CASES) {
    const c = index.cases[spec.name];
    for (const variant of ['none', 'processed']) {
      const cfg = c.variants[variant].config;
      try {
        withModel(c, variant, (m) => {
          const want = { normalization_type: norm(cfg.normalization_type), d_mlp: cfg.attn_only ? 0 : cfg.d_mlp, act_fn: cfg.attn_only ? null : cfg.act_fn };
          const got = { normalization_type: norm(m.config.normalization_type), d_mlp: m.config.d_mlp ?? 0, act_fn: m.config.act_fn ?? null };
          if (m.config.normalization_type === undefined) got.normalization_type = undefined;
          if (m.config.d_mlp === undefined) got.d_mlp = undefined;
          for (const k of Object.keys(want)) {
            if (got[k] !== want[k]) problems.push(`${spec.name} (${variant}): config.${k} is ${got[k]}, want ${want[k]}`);
          }
        });
      } catch (e) {
        problems.push(`${spec.name} (${variant}): ${e.message}`);
      }
    }
  }
  report('config fields', problems);
});

for (const [full, shape] of [[FULL, "attn-only-2l's shape (d_model 512, 8 heads of 64, n_ctx 1024, d_vocab 48262, LayerNorm)"],
  [ARENA, "ARENA's attn_only_2L_half's shape (d_model 768, 12 heads of 64, n_ctx 2048, d_vocab 50278, shortformer, no LayerNorm: 83.5 M weights)"]]) {
  test(`${full.name}: ${shape}, processed on load, 300 tokens: per-token losses`, () => {
    const c = need().cases[full.name];
    const problems = [];
    const t0 = Date.now();
    withModel(c, 'processed', (m) => {
      const ids = Int32Array.from(c.tokens);
      const loss = m.run(ids, undefined, { patterns: false, logits: false }).loss.data;
      compareAbs(problems, 'per-token loss', loss.subarray(0, ids.length - 1), f64(c.variants.processed.outputs.losses.file),
        [ids.length - 1], LOSS_ABS, LOSS_REL, ([t]) => `pos ${t}`);
    });
    const mem = api.memory();
    console.log(`# ${full.name}: load and run ${((Date.now() - t0) / 1000).toFixed(1)} s; the module's memory ` +
      `${(mem.heapSize / 2 ** 20).toFixed(0)} MB (the float32 file: ${(statSync(path.join(ref.dir, c.file)).size / 2 ** 20).toFixed(0)} MB)`);
    report(full.name, problems);
  });
}
