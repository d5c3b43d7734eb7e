// The path expansion of one prediction (framework paper, "Path Expansion of Logits"; seed 000):
// model.attribution() of the last token of the state's text, its parts and largest virtual paths
// for one target token: the core's prediction, or any token the reader picks (state.target: a
// token id; the picker offers the core's top next tokens, topK(), and any token typed by name).
import { el } from '../../parts/dom.js';
import { definePanel } from '../panel.js';
import { showToken, defaultText } from './head.js';
import { fmt } from '../../parts/format.js';

const cache = new WeakMap();   // model -> {key, data}
const TOP = 10;                // next tokens the picker offers (the core's topK)
let uid = 0;

/** A diverging bar as a tiny SVG (blue negative, red positive). */
function barSvg(v, bound) {
  const W = 160, Hh = 12;
  const frac = Math.min(1, Math.abs(v) / bound);
  const x = v < 0 ? W / 2 - frac * W / 2 : W / 2;
  return el('svg', { class: 'cs-chart', viewBox: `0 0 ${W} ${Hh}`, width: W, height: Hh, role: 'img', 'aria-label': fmt(v) },
    el('svg:rect', { x, y: 1, width: Math.max(0.5, frac * W / 2), height: Hh - 2, fill: v < 0 ? '#2166ac' : '#b2182b' }),
    el('svg:line', { class: 'axis', x1: W / 2, x2: W / 2, y1: 0, y2: Hh }));
}

/** The target picker: the prediction, the core's top next tokens, the state's target, or a token typed by name. */
function picker({ a, vocab, top, picked }, dispatch) {
  const id = `cs-attr-target-${++uid}`;
  const set = (target) => dispatch({ type: 'set', values: { target } });
  const ids = Array.from(top.ids.data.subarray(top.ids.data.length - TOP));
  const probs = top.probs.data.subarray(top.probs.data.length - TOP);
  const select = el('select', { id, class: 'cs-attr-target', onchange: () => set(select.value === '' ? null : Number(select.value)) },
    el('option', { value: '' }, `the prediction (${showToken(vocab[a.predicted])})`),
    ids.map((t, i) => el('option', { value: String(t) }, `${showToken(vocab[t])} (p = ${fmt(probs[i], 3)})`)),
    picked === null || ids.includes(picked) ? [] : el('option', { value: String(picked) }, showToken(vocab[picked])));
  select.value = picked === null ? '' : String(picked);
  const note = el('span', { class: 'cs-note', role: 'status' });
  const typed = el('input', {
    type: 'text', id: `${id}-any`, class: 'cs-attr-token', size: 8, spellcheck: 'false', autocomplete: 'off', 'aria-label': 'Any token, by name',
    placeholder: 'any token',
    onchange: () => {
      const s = typed.value;
      let t = vocab.indexOf(s);
      if (t < 0) t = vocab.findIndex((v) => showToken(v) === s);
      note.textContent = t < 0 ? `"${s}" is not a token of this model.` : '';
      if (t >= 0) set(t);
    },
  });
  return el('div', { class: 'cs-controls controls-only' },
    el('div', { class: 'cs-field' }, el('label', { for: id }, 'Explain the logit of'), select),
    el('div', { class: 'cs-field' }, el('label', { for: `${id}-any` }, 'or of'), typed), note);
}

export default definePanel({
  name: 'circuits-attribution',
  title: 'Path expansion of one prediction',
  view: 'circuits',

  query({ model, state }) {
    const text = state.text ?? defaultText(model);   // an emptied box stays empty
    const target = state.target ?? null;
    const key = `${target}\u0000${text}`;
    const hit = cache.get(model);
    if (hit?.key === key) return hit.data;
    let data;
    try {
      if (!text) throw new Error('Type some text.');
      const a = model.attribution(-1, { tokens: text, ...(target === null ? {} : { target }) });
      data = { a, picked: target, top: model.topK(text, TOP), vocab: model.tokenizer.vocab, layers: model.config.n_layers };
    } catch (e) {
      data = { error: e.message, target };
    }
    cache.set(model, { key, data });
    return data;
  },

  render(data, { dispatch }) {
    const { a, vocab, layers, error } = data;
    if (error) {
      return el('div', {}, el('p', { class: 'cs-message', role: 'alert' }, `Cannot expand this text: ${error}`),
        data.target === null ? '' : el('button', { type: 'button', onclick: () => dispatch({ type: 'set', values: { target: null } }) }, 'Explain the prediction instead'));
    }
    const V = a.logits.shape[0];
    const t = a.target;   // the token explained (the core's prediction unless picked), its paths largest first (path_order)
    const partVals = a.names.map((n, i) => ({ name: n, value: a.parts.data[i * V + t] }));
    const pathVals = Array.from(a.path_order.subarray(0, 8), (i) => ({ name: a.path_names[i], value: a.paths.data[i * V + t] }));
    const bound = Math.max(1e-6, ...partVals.map((p) => Math.abs(p.value)), ...pathVals.map((p) => Math.abs(p.value)));
    const label = { embed: 'direct path (embedding → unembedding)', pos_embed: 'positional embedding', bias: 'biases' };
    const rows = (list, named) => list.map((p) => el('tr', {},
      el('th', { scope: 'row' }, named ? (label[p.name] ?? `head ${p.name}`) : p.name.replace('<-', ' ← ')),
      el('td', { class: 'num' }, fmt(p.value)),
      el('td', {}, barSvg(p.value, bound))));
    const predicted = el('strong', { class: 'mono' }, showToken(vocab[a.predicted]));
    return el('div', { dataset: { target: String(t) } },
      picker(data, dispatch),
      el('p', {}, `After the last token "${showToken(vocab[a.token])}" (position ${a.pos}) the model predicts `, predicted,
        ` (logit ${fmt(a.logits.data[a.predicted])}). `,
        t === a.predicted ? 'Its logit is the sum of:'
          : ['The logit of ', el('strong', { class: 'mono' }, showToken(vocab[t])), ` (${fmt(a.logits.data[t])}) is the sum of:`]),
      el('table', { class: 'cs-table', dataset: { part: 'parts' } }, el('tbody', {}, rows(partVals, true))),
      el('h3', {}, 'Largest virtual paths (one composition step deep)'),
      pathVals.length
        ? el('table', { class: 'cs-table' }, el('tbody', {}, rows(pathVals, false)))
        : el('p', { class: 'cs-note' }, layers === 0 ? 'No virtual paths: this model has no attention heads.'
          : 'No virtual paths: with one layer, every head reads only the embeddings, so no head reads another head\'s output.'));
  },
});
