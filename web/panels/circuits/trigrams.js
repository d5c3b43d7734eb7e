// Skip-trigrams of the chosen head and the "bugs" its factorisation forces (framework paper,
// one-layer section; seed 000): model.skipTrigrams(), for 1-layer models.
import { el } from '../../parts/dom.js';
import { definePanel } from '../panel.js';
import { NONE, showToken, chosenHead, trigramsOf, entryTable } from './head.js';
import { fmt } from '../../parts/format.js';

const cache = new WeakMap();   // skipTrigrams() result -> panel data

export default definePanel({
  name: 'circuits-trigrams',
  title: 'Skip-trigrams',
  view: 'circuits',

  query({ model, state }) {
    if (model.config.n_layers !== 1) return NONE;
    const [l, h] = chosenHead(model, state.head);
    const t = trigramsOf(model, l, h);
    if (!cache.has(t)) cache.set(t, { t, vocab: model.tokenizer.vocab });
    return cache.get(t);
  },

  render({ none, t, vocab }) {
    if (none) {
      return el('p', { class: 'cs-note' }, 'Skip-trigrams read a head as "source … destination → output" directly from its QK and OV tables: that reading is exact for 1-layer models only. Choose char-1l, char-1l-smeared or an IOI 1-layer model.');
    }
    const tok = (i) => showToken(vocab[i]);
    return el('div', {},
      el('p', { class: 'cs-explain' }, 'The strongest "source … destination → output" triples of this head (score in nats: centred QK / √d_head + centred OV). A "bug": two triples sharing a source force a crossed triple the head cannot avoid, because it is a product of two tables.'),
      entryTable('Top skip-trigrams', ['source …', 'destination →', 'output', 'score'], t.top.map((x) => [tok(x.source), tok(x.dest), tok(x.out), fmt(x.score)])),
      t.bugs.length
        ? entryTable('Bugs (crossed triples)', ['source …', 'destination →', 'leaked output', 'instead of', 'p(own)', 'p(leak)', 'p(leak) without source', 'score'],
          t.bugs.map((b) => [tok(b.source), tok(b.dest), tok(b.out), tok(b.own_out), fmt(b.p_own, 3), fmt(b.p_crossed, 3), fmt(b.p_crossed_without_source, 3), fmt(b.score)]))
        : el('p', { class: 'cs-note' }, 'No crossed triples among the top skip-trigrams of this head.'));
  },
});
