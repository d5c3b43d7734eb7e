// The training snapshots of the shipped run (models/snapshots/<name>/step<N>.safetensors): a
// slider that puts one in the state ({snapshot: "step<N>"}, used by every view and marked on the
// curves) and what that snapshot's heads do (the core's headScores()).
import { el } from '../../parts/dom.js';
import { getModel, encodeState, DEFAULT_STATE } from '../../store.js';
import { definePanel } from '../panel.js';
import { shippedRun, strongestHead } from './shipped.js';
import { fmt } from '../../parts/format.js';

let uid = 0;
const infos = new Map();   // "name/snapshot" -> Promise of {text, link} for that snapshot

/** What the snapshot's heads do, as a sentence (and a link to its circuits). */
async function snapshotInfo(name, snapshot, series) {
  try {
    const m = await getModel(name, { snapshot });
    const hs = m.headScores({ batch: 4 });
    const loss = Number.isFinite(m.info?.train_loss) ? ` (train loss ${fmt(m.info.train_loss)})` : '';
    const what = `${series ? `checkpoint ${snapshot.replace(/^step/, '')}` : snapshot} of ${name}${loss}`;
    return { loaded: true, text: `Using ${what}: its strongest prefix-matching head is ${strongestHead(hs)}. `,
      link: `#${encodeState({ ...DEFAULT_STATE, view: 'circuits', model: name, snapshot })}` };
  } catch (e) {
    return { text: `${snapshot} of ${name} is not available: ${e.message}` };
  }
}

const label = (run, i) => (i < run.snaps.length ? `${run.stepWord} ${run.snaps[i]}` : 'final model');

/** Shows data (the slider's position unless the user holds it, its label and the note) in the panel's node. */
function fill(node, { run, snapshot, info }) {
  const { slider, output, note } = node.csRefs;
  const snaps = run.snaps;
  slider.disabled = !snaps.length;
  slider.max = String(snaps.length);   // the last position is the final model
  const step = /^step(\d+)$/.exec(String(snapshot ?? ''));
  const idx = step ? snaps.indexOf(Number(step[1])) : -1;
  const at = idx >= 0 ? idx : snaps.length;
  if (document.activeElement !== slider) slider.value = String(at);
  output.textContent = snaps.length ? label(run, at) : '';
  slider.setAttribute('aria-valuetext', output.textContent);
  if (!snaps.length) note.textContent = run.local ? `${run.name} is a model file opened in this page: it has no training snapshots (open several checkpoints of its run together to have them).` : run.hasModel ? `${run.name} lists no training snapshots.` : `${run.name} is not trained yet: no snapshots to show.`;
  else if (!info) note.textContent = 'Move the slider to use a training snapshot instead of the final model (the choice is kept in the link and used by the other views).';
  else note.replaceChildren(info.text, ...(info.link ? [el('a', { href: info.link }, 'See its circuits'), '.'] : []));
}

export default definePanel({
  name: 'training-snapshots',
  title: 'Snapshots',
  view: 'training',
  needsModel: false,

  async query({ modelName, state }) {
    const run = await shippedRun(modelName);
    const snapshot = /^step\d+$/.test(String(state.snapshot ?? '')) && run.snaps.length ? state.snapshot : null;
    const key = `${modelName}/${snapshot}`;
    if (!infos.has(key)) {
      infos.set(key, (snapshot ? snapshotInfo(modelName, snapshot, run.series) : Promise.resolve(null)).then((info) => ({ run, snapshot, info })));
    }
    return infos.get(key);
  },

  render(data, { dispatch }) {
    const id = `cs-training-snap-${++uid}`;
    const slider = el('input', { type: 'range', id, min: 0, max: 0, step: 1, disabled: true });
    const output = el('output', { for: id });
    const note = el('p', { class: 'cs-note', role: 'status', 'aria-live': 'polite' });
    const node = el('div', {},
      el('div', { class: 'cs-controls' }, el('div', { class: 'cs-field' }, el('label', { for: id }, data.run.series ? 'Checkpoint to use' : 'Training step of the snapshot to use'), slider), output),
      note);
    node.csRefs = { slider, output, note };
    node.csData = data;
    slider.addEventListener('input', () => { output.textContent = label(node.csData.run, +slider.value); });
    slider.addEventListener('change', () => {
      const snaps = node.csData.run.snaps;
      if (snaps.length) dispatch({ type: 'snapshot', snapshot: +slider.value < snaps.length ? `step${snaps[+slider.value]}` : null });
    });
    fill(node, data);
    return node;
  },

  update(node, data) {
    if (node.csData?.run !== data.run) return false;
    node.csData = data;
    fill(node, data);
    return true;
  },
});
