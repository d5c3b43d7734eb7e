// Activation patching on the typed text (the core's model.patch()): the core's standard
// corruption breaks the repeat (the first copy of the longest repeated block becomes characters
// that occur nowhere in the text, so the second copy has nothing to match), and each head's
// output — at every position, and at each position alone — is taken from one run into the other
// (store key `patch`: denoise | noise; off when absent), under the state's ablations and cuts.
// One core call per model, tokens, intervention and direction; the tokens are the view's (its
// shared analysis: the same truncation to the context). The view shows this panel once typing
// pauses (a long text takes a second or more); alone it is shown at once.
import { patchFigure, showPatch } from '../../parts/patch-map.js';
import { definePanel } from '../panel.js';
import { analyse, showTok, tokenText } from './analysis.js';

let uid = 0;
const memo = new WeakMap();   // model -> {key, text, data}: the last patching of each model
const OFF = Object.freeze({ direction: null });

/** The data patch-map.js draws, from the core's result (r) and the view's analysis (a). */
function shown(model, a, r) {
  const c = r.corruption;
  const changed = new Set(c.changed);
  const vocab = model.tokenText(c.tokens);
  const clean = Array.from({ length: a.T }, (_, i) => ({ text: tokenText(a, i), changed: changed.has(i) }));
  const corrupted = vocab.map((t, i) => ({ text: i < a.bos ? 'BOS' : showTok(t), changed: changed.has(i) }));
  const [correct, wrong] = model.tokenText([c.correct, c.wrong]).map(showTok);
  const [L, H] = r.head.shape;
  const names = clean.map((x) => x.text);
  return {
    direction: r.direction, clean, corrupted, sep: '', description: c.description,
    what: `logit(${correct}) − logit(${wrong}) at position ${c.pos} (${names[c.pos]}, the second copy's last token but one)`,
    cleanDiff: r.clean_logit_diff, corruptedDiff: r.corrupted_logit_diff, normalised: r.normalised, passes: r.passes, note: r.note,
    L, H, T: a.T, pos: c.pos, head: r.head.data, headEffect: r.head_effect.data,
    headPos: r.head_pos?.data ?? null, headPosEffect: r.head_pos_effect?.data ?? null,
    mlp: r.mlp?.data ?? null, mlpEffect: r.mlp_effect?.data ?? null,
    labels: names.map((t) => (t === 'BOS' ? 'B' : t)), names, cell: 12,
  };
}

export default definePanel({
  name: 'induction-patching',
  title: 'Activation patching',
  view: 'induction',

  query({ model, state }) {
    const direction = state.patch;
    if (!direction) return OFF;
    const a = analyse(model, state);
    const key = `${a.ikey}|${direction}`;   // with the text: the tokens and the intervention patched
    const hit = memo.get(model);
    if (hit?.key === key && hit.text === a.text) return hit.data;   // the text too: it labels the tokens
    let data;
    if (!a.T) data = { direction, error: 'Type some text with a repeated stretch in it to patch.' };
    else {
      try {
        data = shown(model, a, model.patch(a.ids, { direction, intervention: a.intervention, positions: 'auto' }));
      } catch (e) {
        data = { direction, error: e.message };
      }
    }
    memo.set(model, { key, text: a.text, data });
    return data;
  },

  render(data, { dispatch }) {
    const node = patchFigure({ id: `ind-patch-${++uid}`, onDirection: (patch) => dispatch({ type: 'set', values: { patch } }) });
    showPatch(node, data);
    return node;
  },

  update(node, data) {
    showPatch(node, data);
    return true;
  },
});
