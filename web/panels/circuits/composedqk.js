// The composed QK circuit of a later head through an earlier one (framework paper, "Two-Layer
// Attention-Only Transformers": the K- and Q-composition terms of the QK circuit): model.composedQk()
// of the chosen head through state.through (default: the previous layer's head 0), input
// state.compose (k: K-composition, the induction head's term through a previous-token head; q:
// Q-composition), as a heatmap in the core's display order (sort, top) with its top entries and
// its table as CSV.
import { el } from '../../parts/dom.js';
import { definePanel } from '../panel.js';
import { parseHead, headName } from '../../store.js';
import { NONE, showToken, chosenHead, tableOrder, entryTable } from './head.js';
import { circuitHeat, tableButton, searchNotes } from './heat.js';
import { fmt } from '../../parts/format.js';

const computed = new WeakMap();   // model -> Map(key -> composedQk result)
let last = null;                  // the last data (the same object while nothing changed)
let uid = 0;

/** The earlier head the state names, or the previous layer's head 0. */
function throughHead(cfg, l, through) {
  const t = parseHead(through);
  return t && t[0] < cfg.n_layers && t[1] < cfg.n_heads ? t : [Math.max(0, l - 1), 0];
}

/** The pickers: the earlier head (every head of an earlier layer) and the input (K or Q). */
function pickers(d, dispatch) {
  const id = `cs-cqk-${++uid}`;
  const set = (values) => dispatch({ type: 'set', values });
  const heads = [];
  for (let l = 0; l < d.l; l++) for (let h = 0; h < d.heads; h++) heads.push(headName(l, h));
  const through = el('select', { id: `${id}-through`, class: 'cs-cqk-through', onchange: () => set({ through: through.value }) },
    heads.map((n) => el('option', { value: n }, n)));
  through.value = headName(...d.through);
  const input = el('select', { id: `${id}-input`, class: 'cs-cqk-input', onchange: () => set({ compose: input.value }) },
    el('option', { value: 'k' }, 'its key (K-composition)'), el('option', { value: 'q' }, 'its query (Q-composition)'));
  input.value = d.input;
  return el('div', { class: 'cs-controls controls-only' },
    el('div', { class: 'cs-field' }, el('label', { for: through.id }, `The output of`), through),
    el('div', { class: 'cs-field' }, el('label', { for: input.id }, `read by ${headName(d.l, d.h)} through`), input));
}

export default definePanel({
  name: 'circuits-composedqk',
  title: 'Composed QK circuit (through an earlier head)',
  view: 'circuits',

  query({ model, state }) {
    const cfg = model.config;
    if (!cfg.n_layers) return NONE;
    const [l, h] = chosenHead(model, state.head);
    const through = throughHead(cfg, l, state.through);
    const input = state.compose === 'q' ? 'q' : 'k';
    const zoom = Number(state.zoom ?? 12);
    const base = { l, h, through, input, heads: cfg.n_heads, zoom, vocab: model.tokenizer.vocab, key: `${l}/${h}/${through}/${input}/${zoom}` };
    let circuit = null;
    if (l > 0 && through[0] < l) {
      const order = tableOrder(state);
      if (!computed.has(model)) computed.set(model, new Map());
      const m = computed.get(model);
      const key = `${l}/${h}/${through}/${input}/${order.sort}/${order.top}`;
      if (!m.has(key)) {
        if (m.size > 32) m.clear();
        m.set(key, model.composedQk(l, h, { through, input, k: 12, table: false, ...order }));
      }
      circuit = m.get(key);
    }
    if (last && last.circuit === circuit && last.key === base.key && last.vocab === base.vocab) return last;
    if (!circuit) return (last = { ...base, circuit: null });
    const rows = Array.from(circuit.rows), cols = Array.from(circuit.cols);
    const [rowName, colName] = input === 'k' ? ['dest', `src read by ${headName(...through)}`] : [`dest read by ${headName(...through)}`, 'src'];
    return (last = { ...base, circuit, rows, cols, sub: circuit.shown.data, rowName, colName, shape: circuit.shape });
  },

  render(d, { dispatch }) {
    if (d.none) return el('p', { class: 'cs-note' }, 'This model has no attention heads.');
    if (d.l === 0) {
      return el('p', { class: 'cs-note' }, `${headName(d.l, d.h)} is in layer 0: it reads only the embeddings, so no earlier head composes with it. Choose a head of layer 1 or later (the induction head of char-2l is L1H1).`);
    }
    if (!d.circuit) return el('div', {}, pickers(d, dispatch), el('p', { class: 'cs-note' }, `${headName(...d.through)} is not in an earlier layer than ${headName(d.l, d.h)}.`));
    const h1 = headName(...d.through), h2 = headName(d.l, d.h);
    const explain = d.input === 'k'
      ? `K-composition term of ${h2}'s QK circuit: W_E W_Q (W_E W_OV^${h1} W_K)ᵀ. Rows are the destination (query) token; columns the token ${h1} attends to from the key position, whose OV output ${h2}'s key reads (for a previous-token head: the token before the key). An induction head matches the current token here: a red diagonal. Unscaled, attention patterns and positions left out.`
      : `Q-composition term of ${h2}'s QK circuit: (W_E W_OV^${h1} W_Q) (W_E W_K)ᵀ. Rows are the token ${h1} attends to from the query position, whose OV output ${h2}'s query reads; columns the source (key) token. Unscaled, attention patterns and positions left out.`;
    const [figure, hover, limited] = circuitHeat(d, (g) => `${d.input.toUpperCase()}-composition term of ${h2}'s QK circuit through ${h1}: ${d.rows.length} × ${d.cols.length} tokens, values ${fmt(g.min)} to ${fmt(g.max)}; the largest entries are in the table below.`);
    const tok = (i) => showToken(d.vocab[i]);
    const heads = [d.rowName, d.colName, 'score'];
    return el('div', {}, pickers(d, dispatch), el('p', { class: 'cs-explain' }, explain), figure, hover, limited,
      tableButton('Download the table shown (CSV)', `circuitscope-composed-qk-${h2}-through-${h1}-${d.input}.csv`, d.circuit, d.vocab),
      searchNotes(d.circuit), el('div', { class: 'cs-scroll' },
        entryTable('Largest entries', heads, d.circuit.top.map((e) => [tok(e.dest), tok(e.src), fmt(e.value)])),
        entryTable('Smallest entries', heads, d.circuit.bottom.slice(0, 6).map((e) => [tok(e.dest), tok(e.src), fmt(e.value)]))));
  },
});
