// "Train it yourself": a recipe trained in a Web Worker in this page (web/trainer-worker.js),
// with a live loss curve, pause / resume / stop, "Download model" (a .safetensors file the
// page and the CLI load) and, in the app, "Open it in the explorer" (the model as it stands,
// opened like a file the user opens: open-model.js). For the induction recipes the worker also scores every head's prefix
// matching every 10 steps; when the run ends its phase change is marked as the core's
// phaseChange() defines it. The run itself is transient (run.js, live.js), not in the store.
import { el } from '../../parts/dom.js';
import { definePanel } from '../panel.js';
import { browserRecipes } from './recipes.js';
import { startRun, pauseRun, resumeRun, stopRun, downloadModel, openInExplorer } from './run.js';

let uid = 0;
let data = null;

export default definePanel({
  name: 'training-train',
  title: 'Train it yourself',
  view: 'training',
  needsModel: false,

  query() {
    // nothing of the state: the panel is drawn once and the run lives in it
    data ??= browserRecipes().then((recipes) => Object.freeze({ recipes }));
    return data;
  },

  render({ recipes }) {
    const id = `cs-training-train-${++uid}`;
    const field = (text, control) => el('div', { class: 'cs-field' }, el('label', { for: control.id }, text), control);
    const run = { refs: {}, recipes };
    const r = run.refs;
    const button = (text, fn, disabled = true) => el('button', { type: 'button', disabled, onclick: () => fn(run) }, text);
    r.recipe = el('select', { id: `${id}-recipe` }, Object.keys(recipes).map((k) => el('option', { value: k }, k)));
    r.steps = el('input', { type: 'number', id: `${id}-steps`, min: 1, max: 100000, step: 1 });
    r.about = el('p', { class: 'cs-note cs-recipe-about' });
    const chosen = () => {
      const { recipe, steps } = recipes[r.recipe.value] ?? {};
      r.steps.value = String(steps ?? 1);
      r.about.textContent = recipe ? `${recipe.description ?? ''} The recipe is models/recipes/${r.recipe.value}.json, the one the CLI trains` +
        (steps !== recipe.steps ? `, here in ${steps.toLocaleString('en')} steps instead of its ${recipe.steps.toLocaleString('en')}.` : '.') : 'This site has no recipes to train.';
    };
    r.recipe.addEventListener('change', chosen);
    chosen();
    r.start = button('Start', startRun, false);
    r.pause = button('Pause', pauseRun);
    r.resume = button('Resume', resumeRun);
    r.stop = button('Stop', stopRun);
    r.download = button('Download model', downloadModel);
    r.open = button('Open it in the explorer', openInExplorer);
    r.open.hidden = true;   // shown in the app (setButtons)
    r.status = el('p', { class: 'cs-train-status', role: 'status', 'aria-live': 'polite' }, 'Not started.');
    r.chart = el('div', { class: 'cs-train-chart cs-grid2' });
    r.result = el('p', { class: 'cs-note', role: 'status' });
    r.root = el('div', {},
      el('p', { class: 'cs-explain' }, 'Trains in a Web Worker in this page; nothing leaves your machine. The character model downloads its corpus from this site and trains on it here.'),
      el('div', { class: 'cs-controls' }, field('Recipe', r.recipe), field('Steps', r.steps)),
      r.about,
      el('div', { class: 'cs-buttons' }, r.start, r.pause, r.resume, r.stop, r.download, r.open),
      r.status, r.chart, r.result);
    return r.root;
  },
});
