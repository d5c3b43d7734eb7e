// The recipes "Train it yourself" offers (web/panels/training/train.js), and how one is made
// ready for the trainer: what a recipe fetches from the site is fetched here and passed inline.
import { getModel, siteUrl } from '../../store.js';

// Recipes the browser can train: the shipped IOI recipes, inlined, a small induction model on
// repeated random segments, and the one-layer smeared-key character model, whose corpus text and
// vocabulary are fetched from the site and passed inline (the trainer reads no files here).
const IOI_BASE = {
  tokenizer: { kind: 'ioi_symbolic' }, data: { kind: 'ioi_symbolic' },
  optimizer: { lr: 0.01, weight_decay: 1.0, grad_clip: 1.0 }, schedule: { kind: 'onecycle', pct_start: 0.3 },
  steps: 2000, batch_size: 60, seed: 0,
};
const ioiModel = (n_layers, n_heads, pos_embed = 'standard') => ({ n_layers, n_heads, d_model: 32, d_head: 16, n_ctx: 5, pos_embed });
export const BROWSER_RECIPES = {
  'ioi-1l2h': { name: 'ioi-1l2h', description: 'Symbolic IOI, one layer of two heads (solves it).', model: ioiModel(1, 2), ...IOI_BASE },
  'ioi-1l1h': { name: 'ioi-1l1h', description: 'Symbolic IOI, one layer of one head (fails).', model: ioiModel(1, 1), ...IOI_BASE },
  'ioi-2l1h': { name: 'ioi-2l1h', description: 'Symbolic IOI, two layers of one head (composition).', model: ioiModel(2, 1), ...IOI_BASE },
  'ioi-1l2h-nopos': { name: 'ioi-1l2h-nopos', description: 'Symbolic IOI, one layer of two heads, no positional embedding.', model: ioiModel(1, 2, 'none'), ...IOI_BASE },
  'induction-2l': {
    name: 'induction-2l',
    description: 'Induction on random tokens, a segment of 8 to 23 repeated later: 2 layers of 2 heads (phase change near step 250).',
    model: { n_layers: 2, n_heads: 2, d_model: 32, d_head: 16, n_ctx: 48, pos_embed: 'shortformer' },
    tokenizer: { kind: 'synthetic', size: 48 },
    // The segment lengths of the core's behaviour test (tests/cpp/test_train.cpp). With the
    // default 4 to 12, seed 0 formed no induction head in 4,000 steps (prefix matching stayed
    // below 0.05); with these it forms at step 240 (0.03 -> 0.85).
    data: { kind: 'repeated_segment', seq_len: 48, min_len: 8, max_len: 23 },
    optimizer: { lr: 0.01, weight_decay: 0.01, grad_clip: 1.0 },
    schedule: { kind: 'constant', warmup_steps: 50 },
    steps: 600, batch_size: 64, seed: 0,
    scoresEvery: 10,                     // head scores every 10 steps (not part of the recipe)
  },
  'char-1l-smeared': {
    name: 'char-1l-smeared',
    description: 'The shipped one-layer character model with smeared keys, on the corpus (fetches 1.3 MB of text): its induction head forms near step 850.',
    model: { n_layers: 1, n_heads: 4, d_model: 64, d_head: 16, n_ctx: 256, pos_embed: 'shortformer', smeared_keys: true },
    corpus: 'models/corpus/train.txt',   // fetched and passed inline as data.text
    vocabFrom: 'char-1l-smeared',        // the tokenizer of this shipped model, passed inline
    data: { kind: 'text', seq_len: 256, repeat_fraction: 0.5, random_fraction: 0.2 },
    optimizer: { lr: 0.01, weight_decay: 0.01, grad_clip: 1.0 },
    schedule: { kind: 'onecycle', pct_start: 0.15, div_factor: 10, final_div_factor: 100 },
    steps: 1500, batch_size: 16, seed: 0,
    scoresEvery: 10,
  },
};

// Fills in what a recipe fetches from the site: the corpus text and the shipped model's vocabulary.
export async function resolveRecipe(recipe) {
  const r = structuredClone(recipe);
  delete r.scoresEvery;
  if (r.corpus) {
    const res = await fetch(siteUrl(r.corpus));
    if (!res.ok) throw new Error(`could not download the corpus (${r.corpus}: HTTP ${res.status})`);
    r.data.text = await res.text();
    delete r.corpus;
  }
  if (r.vocabFrom) {
    const m = await getModel(r.vocabFrom);
    r.tokenizer = { kind: 'char', vocab: m.tokenizer.vocab };
    delete r.vocabFrom;
  }
  return r;
}

