// A list of top-k next-token predictions as the core returns them (run(ids, iv, {topk: k}) gives
// top_ids and top_probs, each [T, k], most probable first): an <ol>, one item per token with its
// probability as a bar and a percentage, the actual next token marked, and optionally each
// token's probability in another run (e.g. without an ablation) beside it.
//
//   topAt(run, pos, k?)  -> {ids, probs}: the row of run.top_ids / run.top_probs at pos (first k)
//   topkList({ids, probs, label(id), title(id), actual, compare(id) -> number | null, compareLabel, className})
//     label(id): the token as shown; title(id) (optional): its tooltip, e.g. the token's real text
import { el } from './dom.js';

export function topAt(run, pos, k = Infinity) {
  const K = run.top_ids.shape[1];
  const n = Math.min(K, k);
  return {
    ids: run.top_ids.data.subarray(pos * K, pos * K + n),
    probs: run.top_probs.data.subarray(pos * K, pos * K + n),
  };
}

const pct = (p) => `${(p * 100).toFixed(1)}%`;

export function topkList({ ids, probs, label = (id) => `#${id}`, title = null, actual = null, compare = null, compareLabel = 'other', className = 'cs-topk' }) {
  return el('ol', { class: className }, Array.from(ids, (id, j) => {
    const p = probs[j];
    const bar = el('span', { class: 'bar' });
    bar.style.width = `${Math.round(p * 100)}%`;
    const other = compare ? compare(id) : null;
    return el('li', { class: id === actual ? 'actual' : null },
      el('code', title ? { title: title(id) } : {}, label(id)), ' ', el('span', { class: 'bar-track' }, bar), ` ${pct(p)}`,
      other !== null && other !== undefined ? el('span', { class: 'muted' }, ` (${compareLabel} ${pct(other)})`) : null,
      id === actual ? el('span', { class: 'muted' }, ' ← actual') : null);
  }));
}
