// Activation patching on the IOI sequence or sentence (the core's model.patch()): the core's
// standard corruption swaps the names (the second mention of S becomes IO, so the corrupted
// answer is S), and each head's output — at every position, and at each position alone — is
// taken from one run into the other (store key `patch`: denoise | noise; off when absent), under
// the state's intervention. One core call per model, sentence, intervention and direction.
import { interventionOf } from '../../store.js';
import { patchFigure, showPatch } from '../../parts/patch-map.js';
import { definePanel } from '../panel.js';
import { ioiInput } from './analysis.js';

let uid = 0;
const memo = new WeakMap();   // model -> {input, key, data}: the last patching of each model
const OFF = Object.freeze({ direction: null });

/** The data patch-map.js draws, from the core's result (r) and the IOI input (d). */
function shown(model, d, r) {
  const word = (t) => (d.kind === 'symbolic' && d.letters.includes(t) ? d.names[d.letters.indexOf(t)] : t);
  const words = (ids) => model.tokenText(ids).map(word);
  const c = r.corruption;
  const changed = new Set(c.changed);
  const line = (ids) => words(ids).map((text, i) => ({ text, changed: changed.has(i) }));
  const [correct, wrong] = words([c.correct, c.wrong]);
  const [L, H] = r.head.shape;
  return {
    direction: r.direction, clean: line(r.tokens), corrupted: line(c.tokens), sep: ' ', description: c.description,
    what: `logit(${correct}) − logit(${wrong}) at the last position`,
    cleanDiff: r.clean_logit_diff, corruptedDiff: r.corrupted_logit_diff, normalised: r.normalised, passes: r.passes, note: r.note,
    L, H, T: r.tokens.length, pos: c.pos, head: r.head.data, headEffect: r.head_effect.data,
    headPos: r.head_pos?.data ?? null, headPosEffect: r.head_pos_effect?.data ?? null,
    mlp: r.mlp?.data ?? null, mlpEffect: r.mlp_effect?.data ?? null,
    labels: d.result.labelsX, names: words(r.tokens), cell: d.result.cell,
  };
}

export default definePanel({
  name: 'ioi-patching',
  title: 'Activation patching',
  view: 'ioi',

  query(args) {
    const { model, state } = args;
    const direction = state.patch;
    if (!direction) return OFF;
    const d = ioiInput(args);
    const intervention = interventionOf(state, model.config);
    const key = JSON.stringify([direction, intervention]);
    const hit = memo.get(model);
    if (hit?.input === d && hit.key === key) return hit.data;
    let data;
    if (!d.result) data = { direction, error: d.problems?.join(' ') || 'There is no sentence to patch.' };
    else {
      try {
        data = shown(model, d, model.patch(d.tokens, { direction, intervention, positions: 'auto' }));
      } catch (e) {
        data = { direction, error: e.message };
      }
    }
    memo.set(model, { input: d, key, data });
    return data;
  },

  render(data, { dispatch }) {
    const node = patchFigure({ id: `cs-ioi-patch-${++uid}`, onDirection: (patch) => dispatch({ type: 'set', values: { patch } }) });
    showPatch(node, data);
    return node;
  },

  update(node, data) {
    showPatch(node, data);
    return true;
  },
});
