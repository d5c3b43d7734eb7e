// The path expansion of one prediction (framework paper, "Path Expansion of Logits"; seed 000):
// model.attribution() of the last token of the state's text, its parts and largest virtual paths
// for the token the core predicts.
import { el } from '../../parts/dom.js';
import { definePanel } from '../panel.js';
import { showToken, defaultText } from './head.js';
import { fmt } from '../../parts/format.js';

const cache = new WeakMap();   // model -> {text, data}

/** A diverging bar as a tiny SVG (blue negative, red positive). */
function barSvg(v, bound) {
  const W = 160, Hh = 12;
  const frac = Math.min(1, Math.abs(v) / bound);
  const x = v < 0 ? W / 2 - frac * W / 2 : W / 2;
  return el('svg', { class: 'cs-chart', viewBox: `0 0 ${W} ${Hh}`, width: W, height: Hh, role: 'img', 'aria-label': fmt(v) },
    el('svg:rect', { x, y: 1, width: Math.max(0.5, frac * W / 2), height: Hh - 2, fill: v < 0 ? '#2166ac' : '#b2182b' }),
    el('svg:line', { class: 'axis', x1: W / 2, x2: W / 2, y1: 0, y2: Hh }));
}

export default definePanel({
  name: 'circuits-attribution',
  title: 'Path expansion of one prediction',
  view: 'circuits',

  query({ model, state }) {
    const text = state.text || defaultText(model);
    const hit = cache.get(model);
    if (hit?.text === text) return hit.data;
    let data;
    try {
      if (!text) throw new Error('Type some text.');
      data = { a: model.attribution(-1, { tokens: text }), vocab: model.tokenizer.vocab, layers: model.config.n_layers };
    } catch (e) {
      data = { error: e.message };
    }
    cache.set(model, { text, data });
    return data;
  },

  render({ a, vocab, layers, error }) {
    if (error) return el('p', { class: 'cs-message', role: 'alert' }, `Cannot expand this text: ${error}`);
    const V = a.logits.shape[0];
    const best = a.predicted;   // the core's prediction, and its paths largest first (path_order)
    const partVals = a.names.map((n, i) => ({ name: n, value: a.parts.data[i * V + best] }));
    const pathVals = Array.from(a.path_order.subarray(0, 8), (i) => ({ name: a.path_names[i], value: a.paths.data[i * V + best] }));
    const bound = Math.max(1e-6, ...partVals.map((p) => Math.abs(p.value)), ...pathVals.map((p) => Math.abs(p.value)));
    const label = { embed: 'direct path (embedding → unembedding)', pos_embed: 'positional embedding', bias: 'biases' };
    const rows = (list, named) => list.map((p) => el('tr', {},
      el('th', { scope: 'row' }, named ? (label[p.name] ?? `head ${p.name}`) : p.name.replace('<-', ' ← ')),
      el('td', { class: 'num' }, fmt(p.value)),
      el('td', {}, barSvg(p.value, bound))));
    return el('div', {},
      el('p', {}, `After the last token "${showToken(vocab[a.token])}" (position ${a.pos}) the model predicts `,
        el('strong', { class: 'mono' }, showToken(vocab[best])), ` (logit ${fmt(a.logits.data[best])}). Its logit is the sum of:`),
      el('table', { class: 'cs-table', dataset: { part: 'parts' } }, el('tbody', {}, rows(partVals, true))),
      el('h3', {}, 'Largest virtual paths (one composition step deep)'),
      pathVals.length
        ? el('table', { class: 'cs-table' }, el('tbody', {}, rows(pathVals, false)))
        : el('p', { class: 'cs-note' }, layers === 0 ? 'No virtual paths: this model has no attention heads.'
          : 'No virtual paths: with one layer, every head reads only the embeddings, so no head reads another head\'s output.'));
  },
});
