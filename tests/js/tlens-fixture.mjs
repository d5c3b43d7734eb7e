// Writes a circuitscope model file in the layout of a TransformerLens state dict, as
// safetensors.torch.save_file(model.state_dict(), path) gives for a HookedTransformer
// (attn_only=True, normalization_type=None): TransformerLens's key names, zero biases where the
// model has none (TransformerLens always has b_Q, b_K, b_V, b_O and b_U), the attn.mask (BOOL,
// causal) and attn.IGNORE (F32 scalar, -inf) buffers of every layer, {"format": "pt"} metadata
// and no circuitscope config or tokenizer. Written without python or torch (none on these
// machines), from the format's description and TransformerLens's source.
//
//   node tests/js/tlens-fixture.mjs models/ioi-2l1h.safetensors out.safetensors [--dtype BF16]
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readSafetensors } from './safetensors.mjs';

// float32 -> bfloat16 bits, rounding to nearest even; -> float16 bits, rounding to nearest even.
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
function bf16Bits(x) {
  f32[0] = x;
  const b = u32[0];
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}
function f16Bits(x) {
  f32[0] = x;
  const b = u32[0];
  const sign = (b >>> 16) & 0x8000;
  const a = Math.abs(f32[0]);
  if (a >= 65520) return sign | 0x7c00;  // weights are bounded by +-1e4, so never for a valid model
  if (a < 2 ** -14) {  // subnormal: a whole number of 2^-24, half to even
    const v = a / 2 ** -24;
    let r = Math.round(v);
    if (r - v === 0.5 && r % 2) r -= 1;
    return sign | r;
  }
  const m = b & 0x7fffff;
  let h = ((((b >>> 23) & 0xff) - 112) << 10) | (m >>> 13);
  const rest = m & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h += 1;  // a carry into the exponent is right
  return sign | h;
}

function encode(values, dtype) {
  const n = values.length;
  if (dtype === 'F32') return Buffer.from(new Float32Array(values).buffer);
  const out = Buffer.alloc(2 * n);
  for (let i = 0; i < n; i++) out.writeUInt16LE(dtype === 'BF16' ? bf16Bits(values[i]) : f16Bits(values[i]), 2 * i);
  return out;
}

// The value a float32 becomes once stored in dtype and read back.
export function roundTo(x, dtype) {
  if (dtype === 'F32') return Math.fround(x);
  const b = encode([x], dtype).readUInt16LE(0);
  if (dtype === 'BF16') {
    u32[0] = b << 16;
    return f32[0];
  }
  const s = b & 0x8000 ? -1 : 1;
  const e = (b >> 10) & 0x1f;
  const m = b & 0x3ff;
  return e === 0 ? s * m * 2 ** -24 : s * (1 + m / 1024) * 2 ** (e - 15);
}

// A safetensors file from [{name, dtype, shape, bytes}] and metadata (null: no __metadata__).
export function writeSafetensors(tensors, metadata) {
  const header = {};
  if (metadata) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.bytes.length] };
    offset += t.bytes.length;
  }
  let text = JSON.stringify(header);
  while (text.length % 8) text += ' ';
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(text)));
  return new Uint8Array(Buffer.concat([len, Buffer.from(text), ...tensors.map((t) => t.bytes)]));
}

// A one-layer attention-only TransformerLens state dict with a vocabulary of `vocab` tokens (GPT-2's
// 50,257, say) and small widths (d_model 16, 2 heads of 8, n_ctx 64), random weights from `seed`:
// a stand-in for a hub model that needs its tokenizer.json, small enough for every test.
export function tlVocabFixture(vocab, seed = 7) {
  const [D, H, Dh, C] = [16, 2, 8, 64];
  let s = seed;
  const t = (name, shape) => {
    const f = new Float32Array(shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < f.length; i++) f[i] = ((s = (s * 16807) % 2147483647) / 2147483647 - 0.5) * 0.2;
    return { name, dtype: 'F32', shape, bytes: new Uint8Array(f.buffer) };
  };
  return writeSafetensors([t('embed.W_E', [vocab, D]), t('pos_embed.W_pos', [C, D]), t('blocks.0.attn.W_Q', [H, D, Dh]),
    t('blocks.0.attn.W_K', [H, D, Dh]), t('blocks.0.attn.W_V', [H, D, Dh]), t('blocks.0.attn.W_O', [H, Dh, D]),
    t('unembed.W_U', [D, vocab])], { format: 'pt', normalization_type: 'None' });
}

// The tensors of a circuitscope file (bytes) in TransformerLens's layout. Options: dtype ('F32',
// 'F16', 'BF16'), metadata (default {format: 'pt'}; null for none), biases and buffers (default
// true), positionalEmbeddingType (written to the metadata when given).
export function transformerLensTensors(bytes, options = {}) {
  const { dtype = 'F32', biases = true, buffers = true } = options;
  const { tensors, metadata } = readSafetensors(bytes);
  const cfg = JSON.parse(metadata.config);
  const out = [];
  const add = (name, shape, values) => out.push({ name, dtype, shape, bytes: encode(values, dtype) });
  for (const [name, t] of Object.entries(tensors)) add(name, t.shape, t.data);
  if (biases && !cfg.use_bias) {
    for (let l = 0; l < cfg.n_layers; l++) {
      for (const b of ['b_Q', 'b_K', 'b_V']) add(`blocks.${l}.attn.${b}`, [cfg.n_heads, cfg.d_head], new Float64Array(cfg.n_heads * cfg.d_head));
      add(`blocks.${l}.attn.b_O`, [cfg.d_model], new Float64Array(cfg.d_model));
    }
    add('unembed.b_U', [cfg.d_vocab], new Float64Array(cfg.d_vocab));
  }
  if (buffers) {
    for (let l = 0; l < cfg.n_layers; l++) {
      const mask = Buffer.alloc(cfg.n_ctx * cfg.n_ctx);
      for (let q = 0; q < cfg.n_ctx; q++) for (let k = 0; k <= q; k++) mask[q * cfg.n_ctx + k] = 1;
      out.push({ name: `blocks.${l}.attn.mask`, dtype: 'BOOL', shape: [cfg.n_ctx, cfg.n_ctx], bytes: mask });
      out.push({ name: `blocks.${l}.attn.IGNORE`, dtype: 'F32', shape: [], bytes: encode([-Infinity], 'F32') });
    }
  }
  // safetensors' writer orders tensors by dtype size, then name: the loader must not care.
  const size = { F32: 4, F16: 2, BF16: 2, BOOL: 1 };
  out.sort((a, b) => size[b.dtype] - size[a.dtype] || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { tensors: out, config: cfg };
}

// The same circuitscope file with every weight rounded as dtype would store it (still F32): the
// model a TransformerLens file in dtype must match exactly.
export function roundedCopy(bytes, dtype) {
  const { tensors, metadata } = readSafetensors(bytes);
  const list = Object.entries(tensors).map(([name, t]) => ({
    name, dtype: 'F32', shape: t.shape, bytes: encode(Array.from(t.data, (x) => roundTo(x, dtype)), 'F32'),
  }));
  return writeSafetensors(list, metadata);
}

export function toTransformerLens(bytes, options = {}) {
  // A state dict cannot show that the model has no normalization (LNPre looks the same): say so.
  const meta = options.metadata === undefined ? { format: 'pt', normalization_type: 'None' } : options.metadata;
  const metadata = meta && options.positionalEmbeddingType ? { ...meta, positional_embedding_type: options.positionalEmbeddingType } : meta;
  return writeSafetensors(transformerLensTensors(bytes, options).tensors, metadata);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [src, dst, ...rest] = process.argv.slice(2);
  if (!src || !dst) {
    console.error('usage: node tests/js/tlens-fixture.mjs IN.safetensors OUT.safetensors [--dtype F32|F16|BF16] [--shortformer]');
    process.exit(2);
  }
  const at = rest.indexOf('--dtype');
  const dtype = at >= 0 ? rest[at + 1] : 'F32';
  const bytes = toTransformerLens(readFileSync(src), { dtype, positionalEmbeddingType: rest.includes('--shortformer') ? 'shortformer' : undefined });
  writeFileSync(dst, bytes);
  console.log(`${dst}: ${bytes.length} bytes, TransformerLens layout, ${dtype}`);
}
