// Sample text for a model whose vocabulary is not characters (a word-level or token-id model,
// e.g. opened from a file or trained in the page): a segment of random tokens and its repeat, as
// the core draws them for its head scores (headScores()'s repeated-token batch, seeded), written
// the way the model's tokenizer reads text back (words, or ids, separated by spaces). It is
// display text for the text boxes, not a measurement.
const cache = new WeakMap();   // model -> its seed-0 sample

/** "t4 t17 t9 t4 t17 t9" (word) or "0 12 7 3 12 7 3" (ids); '' when the model's context is too short. */
export function tokenSample(model, seed = 0) {
  if (seed === 0 && cache.has(model)) return cache.get(model);
  const c = model.config;
  const L = Math.min(12, Math.floor((c.n_ctx - 1) / 2));
  let text = '';
  if (L >= 1) {
    try {
      const ids = Array.from(model.headScores({ batch: 1, L, seed }).tokens.data);
      const words = model.tokenText(ids).filter((w) => w !== '<BOS>');   // tokenize() puts <BOS> back
      text = (model.tokenizer.kind === 'ids' ? words.map((w) => w.replace(/^#/, '')) : words).join(' ');
    } catch {
      text = '';
    }
  }
  if (seed === 0) cache.set(model, text);
  return text;
}
