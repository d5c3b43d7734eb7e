// A TransformerLens state dict (which carries no tokenizer) opened in the WASM module with a
// Hugging Face tokenizer.json beside it: typed text is tokenized as @huggingface/tokenizers does
// (with TransformerLens's <|endoftext|> first), the tokenizer is saved with the model, and a wrong
// or broken tokenizer.json is refused in a sentence without harming the module.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { root, cs } from './module.mjs';
import { tlVocabFixture as tlFile } from './tlens-fixture.mjs';
import { gpt2TokenizerJson, GPT2_EOT } from './hf-tokenizer-files.mjs';

const gpt2 = gpt2TokenizerJson();
const gpt2Text = JSON.stringify(gpt2);
const peer = new HfTokenizer(gpt2, {});
// GPT-NeoX pads its embedding past the tokenizer's ids; the extra rows are unused tokens.
const file = tlFile(GPT2_EOT + 1 + 3);

test('a TransformerLens file opened with tokenizer.json reads typed text as Hugging Face tokenizes it', async () => {
  const m = (await cs()).load(file, { tokenizer: gpt2Text });
  try {
    const tok = m.tokenizer;
    assert.equal(tok.kind, 'hf');
    assert.equal(tok.reads_text, true);
    assert.match(tok.description, /tokenizer\.json vocabulary of 50260 tokens \(BPE \(50257 tokens, 50000 merges\)\)/);
    assert.equal(tok.vocab.length, 50260);
    assert.equal(tok.vocab[262], '␣the');
    assert.equal(tok.vocab[50259], '<unused 50259>');
    assert.equal(tok.summary?.pre_tokenizer, 'ByteLevel');
    for (const text of ['Hello world, hello world', "I'm  here\n\n\tok 2024 ½", 'naïve café – 東京 🙂 <|endoftext|>x']) {
      const t = m.tokenize(text);
      const want = [GPT2_EOT, ...peer.encode(text, { add_special_tokens: false }).ids];
      assert.deepEqual([...t.ids], want, JSON.stringify(text));
      // Spans: the <BOS> is empty; the others cover the text in order.
      assert.equal(t.begins[0], 0);
      assert.equal(t.ends[0], 0);
      assert.equal(t.begins[1], 0);
      assert.equal(t.ends[t.ends.length - 1], text.length);
      for (let i = 2; i < t.ids.length; i++) assert.ok(t.begins[i] >= t.begins[i - 1] && t.begins[i] <= t.ends[i - 1]);
    }
    // The tokenizer travels with a saved file: it reopens reading text, without the option.
    const again = (await cs()).load(m.save());
    try {
      assert.equal(again.tokenizer.kind, 'hf');
      assert.deepEqual([...again.tokenize('Hello world').ids], [GPT2_EOT, 15496, 995]);
    } finally {
      again.delete();
    }
  } finally {
    m.delete();
  }
});

test('bosToken names the token put first, and an unknown one is refused', async () => {
  const c = await cs();
  const m = c.load(file, { tokenizer: gpt2Text, bosToken: 'Hello' });
  try {
    assert.equal(m.tokenize('x').ids[0], 15496);
  } finally {
    m.delete();
  }
  assert.throws(() => c.load(file, { tokenizer: gpt2Text, bosToken: '<s>' }), /the bos_token <s> is not one of its tokens/);
});

test('a wrong or broken tokenizer.json is refused in a sentence and the module keeps working', async () => {
  const c = await cs();
  assert.throws(() => c.load(tlFile(1000), { tokenizer: gpt2Text }),
    /it has 50257 tokens but the model's embedding has 1000 rows; it is not this model's tokenizer/);
  assert.throws(() => c.load(file, { tokenizer: gpt2Text.slice(0, 1000) }), /tokenizer\.json: is not valid JSON/);
  const unigram = structuredClone(gpt2);
  unigram.model.type = 'Unigram';
  assert.throws(() => c.load(file, { tokenizer: JSON.stringify(unigram) }), /the model is "Unigram"; circuitscope reads byte-pair \(BPE\) tokenizers only/);
  assert.throws(() => c.load(file, { tokenizer: 12 }), /options\.tokenizer must be a Hugging Face tokenizer\.json's text/);
  // A tokenizer.json over the core's 64 MB is refused before it is copied into the module.
  const heap = c.memory().heapSize;
  assert.throws(() => c.load(file, { tokenizer: ' '.repeat(65 * 2 ** 20) }), /circuitscope reads tokenizer files of up to 64 MB/);
  assert.equal(c.memory().heapSize, heap, 'the refused tokenizer grew the WebAssembly memory');
  // A circuitscope model carries its own tokenizer.
  const own = readFileSync(path.join(root, 'models', 'char-2l.safetensors'));
  assert.throws(() => c.load(own, { tokenizer: gpt2Text }), /the model file carries its own tokenizer \(char/);
  const m = c.load(file, { tokenizer: gpt2Text });
  try {
    assert.deepEqual([...m.tokenize(' the').ids], [GPT2_EOT, 262]);
  } finally {
    m.delete();
  }
});

test("tokenBytes: a text's tokens stand for its UTF-8, byte for byte, also where a token ends inside a character", async () => {
  const c = await cs();
  const m = c.load(file, { tokenizer: gpt2Text });
  const char = c.load(readFileSync(path.join(root, 'models', 'char-2l.safetensors')));
  try {
    const utf8 = new TextEncoder();
    for (const text of ['Hello world, hello world', 'a 🙂 東京', "I'm  here\n\n\tok 2024 ½", 'naïve café – ﷽ 👩‍👩‍👧']) {
      const ids = m.tokenize(text).ids.subarray(1);   // without the <|endoftext|> put first
      const { bytes, offsets } = m.tokenBytes(ids);
      assert.equal(offsets.length, ids.length + 1);
      assert.equal(offsets[0], 0);
      assert.deepEqual([...bytes], [...utf8.encode(text)], JSON.stringify(text));
      // Each token's bytes are the decoder's for that token alone (tokenizers.js decodes the same).
      for (let i = 0; i < ids.length; i++) {
        const mine = bytes.subarray(offsets[i], offsets[i + 1]);
        const whole = new TextDecoder('utf-8', { fatal: true });
        let text1 = null;
        try { text1 = whole.decode(mine); } catch { /* part of a character */ }
        if (text1 !== null) assert.equal(text1, peer.decode([ids[i]]), `token ${ids[i]} of ${JSON.stringify(text)}`);
      }
    }
    const added = m.tokenBytes([GPT2_EOT, GPT2_EOT + 2]);
    assert.deepEqual([...added.offsets], [0, 13, 13], '<|endoftext|> is its content; an <unused N> row stands for nothing');
    // A character model: <BOS> and <UNK> (é is not among char-2l's characters) stand for no
    // bytes, a character for its UTF-8.
    const t = char.tokenize('aé!');
    assert.equal(char.tokenizer.vocab[t.ids[2]], '<UNK>');
    const cb = char.tokenBytes(t.ids);
    assert.deepEqual([...cb.offsets], [0, 0, 1, 1, 2]);
    assert.deepEqual([...cb.bytes], [0x61, 0x21]);
    assert.throws(() => char.tokenBytes([9999]), /token id 9999 is outside the vocabulary of \d+ tokens/);
  } finally {
    m.delete();
    char.delete();
  }
});
