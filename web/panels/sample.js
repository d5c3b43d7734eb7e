// Sample text for a model whose vocabulary is not characters (a word-level or token-id model,
// e.g. opened from a file or trained in the page): a segment of random tokens and its repeat,
// each a token the tokenizer reads back as itself, as the core writes it (model.sampleText,
// cs::repeated_sample_text). It is display text for the text boxes, not a measurement.
const cache = new WeakMap();   // model -> its seed-0 sample

/** "t4 t17 t9 t4 t17 t9" (word) or "12 7 3 12 7 3" (ids), from the core; '' when the context is too short. */
export function tokenSample(model, seed = 0) {
  if (seed === 0 && cache.has(model)) return cache.get(model);
  let text = '';
  try {
    text = model.sampleText({ seed }).text;
  } catch {
    text = '';
  }
  if (seed === 0) cache.set(model, text);
  return text;
}
