// Q/K/V composition between layers (framework paper, seed 003; ARENA's definitions): for every
// pair of heads from an earlier layer into a later one, ||L R||_F / (||L||_F ||R||_F) against the
// score of random matrices of the same shapes, with the scores that stand out marked (the core's
// composition(): scores, baseline, above_baseline, max_score).
import { el } from '../../parts/dom.js';
import { definePanel } from '../panel.js';
import { fmt } from '../../parts/format.js';
import { downloadCSV } from '../../parts/download.js';

const computed = new WeakMap();   // model -> its composition() (100 baseline samples)

export default definePanel({
  name: 'circuits-composition',
  title: 'Composition between layers',
  view: 'circuits',

  query({ model, modelName }) {
    if (!computed.has(model)) {
      const cfg = model.config;
      computed.set(model, {
        name: modelName, layers: cfg.n_layers, heads: cfg.n_heads,
        c: cfg.n_layers < 2 ? null : model.composition({ samples: 100 }),
      });
    }
    return computed.get(model);
  },

  render({ name, layers: L, heads: H, c }) {
    if (!c) {
      return el('p', { class: 'cs-note' }, `${name} has ${L} layer${L === 1 ? '' : 's'}: no head reads another head's output, so there is no composition. Choose a 2-layer model (char-2l, ioi-2l1h).`);
    }
    const index = (k, l1, h1, l2, h2) => (((k * L + l1) * H + h1) * L + l2) * H + h2;
    const dst = [];
    for (let l2 = 1; l2 < L; l2++) for (let h2 = 0; h2 < H; h2++) dst.push([l2, h2]);
    const tables = ['Q', 'K', 'V'].map((kn, k) => el('table', { class: 'cs-table' },
      el('caption', {}, `${kn}-composition: the row head's output read by the column head's ${kn.toLowerCase()} input`),
      el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'from \\ to'), dst.map(([l2, h2]) => el('th', { scope: 'col' }, `L${l2}H${h2}`)))),
      el('tbody', {}, Array.from({ length: (L - 1) * H }, (_, i) => {
        const l1 = Math.floor(i / H), h1 = i % H;
        return el('tr', {}, el('th', { scope: 'row' }, `L${l1}H${h1}`), dst.map(([l2, h2]) => {
          if (l1 >= l2) return el('td', { class: 'num' }, '');
          const v = c.scores.data[index(k, l1, h1, l2, h2)];
          const strong = c.above_baseline.data[index(k, l1, h1, l2, h2)] === 1;
          return el('td', { class: 'num', style: strong ? { fontWeight: '700' } : {} }, `${fmt(v, 3)} (${fmt(v / c.baseline, 1)}×)${strong ? ' ▲' : ''}`);
        }));
      }))));
    const csv = () => {
      const rows = [['kind', 'src_head', 'dst_head', 'src_layer', 'src_head_index', 'dst_layer', 'dst_head_index', 'score', 'above_baseline', 'baseline', 'baseline_std', 'baseline_samples']];
      ['Q', 'K', 'V'].forEach((kn, k) => {
        for (let l1 = 0; l1 < L; l1++) for (let h1 = 0; h1 < H; h1++) for (const [l2, h2] of dst) {
          if (l1 < l2) rows.push([kn, `L${l1}H${h1}`, `L${l2}H${h2}`, l1, h1, l2, h2, c.scores.data[index(k, l1, h1, l2, h2)], c.above_baseline.data[index(k, l1, h1, l2, h2)], c.baseline, c.baseline_std, c.baseline_samples]);
        }
      });
      downloadCSV('circuitscope-composition.csv', rows);
    };
    return el('div', {},
      el('p', { class: 'cs-explain' }, `Composition score ||L R||_F / (||L||_F ||R||_F) for every pair of heads; random matrices of the same shapes score ${fmt(c.baseline, 3)} ± ${fmt(c.baseline_std, 3)} (${c.baseline_samples} samples). ▲ marks scores above the baseline by more than ${c.sigmas} standard deviations; the factor is the score over the baseline. Largest score: ${fmt(c.max_score, 3)}.`),
      el('div', { class: 'cs-figures' }, tables),
      el('div', { class: 'button-row cs-png-skip controls-only' }, el('button', { type: 'button', class: 'cs-composition-csv', onclick: csv }, 'Download composition scores (CSV)')));
  },
});
