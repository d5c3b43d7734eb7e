// <cs-ioi>: indirect-object identification. Two kinds of task:
//  - the symbolic task of seed 001: build a sequence "<BOS> IO S S <MID>" or "<BOS> S IO S <MID>"
//    from six names (tokens A-F that can be given display names);
//  - the sentence-template models (model.ioiTask() not null): a template builder. Pick a template
//    (those held out of training are marked), the order, two of the model's names, a place and an
//    object: "When Mary and John went to the store, John gave a drink to" -> Mary.
// Either way: which name the model predicts and its probability for each name (right or wrong),
// how each head splits the logit difference into the additive (sum) and contrastive (difference)
// directions, the attention patterns and a logit lens; switch between the shipped architectures
// with their accuracy (symbolic: over all 60 sequences, with the seeds' spread; templates: on the
// training split and the three held-out splits), and remove the positional embedding or cut
// Q/K/V composition (2-layer models), live.
//
// Embed it on any page of the site (paths resolve from the module's URL):
//   <link rel="stylesheet" href="views/views.css">
//   <script type="module" src="views/ioi.js"></script>
//   <cs-ioi model="ioi-1l2h"></cs-ioi>
// Attributes (standalone) or state keys (set by the app as `element.state = {...}`):
//   model (ioi-1l1h | ioi-1l2h | ioi-2l1h | ioi-1l2h-nopos | ioi-templates-1l2h | ioi-templates-2l),
//   order (IOSS | SIOS), io, s (symbolic: A..F or a display name; templates: one of the model's
//   names, in any case; unset: the first two names), names (symbolic: six display names,
//   comma-separated), tpl (templates: the template's index, from 0), place, object (templates: a
//   place and an object of the task), removePos ("1"), cut (Q | K | V).
// Changes the user makes are reported with a bubbling `cs-state` event (detail: the changed keys).
// All user text reaches the page through textContent (el() never parses HTML).
import { el } from '../parts/dom.js';
import { heatmap } from '../parts/heatmap.js';
import { divergingColor } from '../parts/colour.js';
import { getModel, getJSON } from '../store.js';
import { downloadCSV, downloadJSON } from '../parts/download.js';
import { CsView } from './common.js';
import { interventionOf, modelsFor } from '../store.js';

export const TAG = 'cs-ioi';

/**
 * The IOI models of the site (models/index.json), each with its label (its title after the
 * name) and whether it is a sentence-template model (its ioiTask() says so): [{name, label,
 * templates, model | error}].
 */
let zooPromise = null;
function ioiModels() {
  zooPromise ??= modelsFor('ioi').then((list) => Promise.all(list.map(async (m) => {
    const label = String(m.title || m.name).replace(/^[^:]*:\s*/, '');
    try {
      const model = await getModel(m.name);
      return { name: m.name, label, templates: !!model.ioiTask(), model };
    } catch (e) {
      return { name: m.name, label, templates: false, error: e.message };
    }
  })));
  return zooPromise;
}
const LETTERS = ['A', 'B', 'C', 'D', 'E', 'F'];
const DEFAULT_NAMES = ['Mary', 'John', 'Alice', 'Bob', 'Eve', 'Dan'];
const TOP_NAMES = 5;   // probability rows of a template model: the most probable names, plus IO and S
const pct = (x) => `${(100 * x).toFixed(x === 1 || x === 0 ? 0 : 1)}%`;
const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');
const unset = (v) => v === null || v === undefined || v === '';
let uid = 0;

/** names state (array or comma-separated string) -> six display names. */
function parseNames(v) {
  const list = Array.isArray(v) ? v : typeof v === 'string' && v ? v.split(',') : [];
  return LETTERS.map((_, i) => (list[i] ?? '').trim() || DEFAULT_NAMES[i]);
}

/** A typed name -> its letter (A..F), by letter or display name (case-insensitive); null if unknown. */
function resolveName(text, names) {
  const t = String(text ?? '').trim().toLowerCase();
  if (!t) return null;
  const byLetter = LETTERS.findIndex((l) => l.toLowerCase() === t);
  if (byLetter >= 0) return LETTERS[byLetter];
  const byName = names.findIndex((n) => n.toLowerCase() === t);
  return byName >= 0 ? LETTERS[byName] : null;
}

/** The index of a typed word in a list (case-insensitive, trimmed); -1 if it is not there. */
function findWord(text, list) {
  const t = String(text ?? '').trim().toLowerCase();
  return t ? list.findIndex((w) => w.toLowerCase() === t) : -1;
}

// Accuracy of a template model on its four splits, once per (model, intervention): a promise, and
// the value once it is there (so a cached result shows without a "computing" flash).
const splitCache = new Map();   // `${model}|${intervention}` -> {promise, value}
function splitAccuracy(model, name, iv, ivKey) {
  const key = `${name}|${ivKey}`;
  let entry = splitCache.get(key);
  if (!entry) {
    entry = { value: null };
    entry.promise = (async () => {
      const out = {};
      for (const { split } of model.ioiTask().splits) {
        await new Promise((resolve) => setTimeout(resolve, 0));   // the page stays responsive between splits
        try {
          const e = model.ioiEvaluate(iv, split);
          out[split] = { n: e.n, correct: e.correct, accuracy: e.accuracy, mean_prob_io: e.mean_prob_io, mean_prob_s: e.mean_prob_s, mean_logit_diff: e.mean_logit_diff };
        } catch (err) {
          out[split] = { error: err.message };
        }
      }
      entry.value = out;
      return out;
    })();
    entry.promise.catch(() => splitCache.delete(key));
    splitCache.set(key, entry);
  }
  return entry;
}

/** A horizontal bar for a value in [-bound, bound] (diverging) or [0, bound]. */
export function bar(value, bound, { diverging = true, label = '' } = {}) {
  const v = Number.isFinite(value) ? value : 0;
  const frac = Math.min(1, Math.abs(v) / (bound || 1));
  const fill = el('span', {
    class: ['cs-bar-fill', v < 0 ? 'neg' : 'pos'],
    style: diverging
      ? { width: `${50 * frac}%`, left: v < 0 ? `${50 - 50 * frac}%` : '50%', background: divergingColor(v < 0 ? -0.35 - 0.65 * frac : 0.35 + 0.65 * frac) }
      : { width: `${100 * frac}%`, left: '0' },
  });
  return el('span', { class: ['cs-bar', diverging ? 'diverging' : 'plain'], role: 'img', 'aria-label': label || fmt(v) },
    diverging ? el('span', { class: 'cs-bar-axis' }) : null, fill);
}

export class CsIoi extends CsView {
  static view = 'ioi';
  static attributes = ['model', 'order', 'io', 's', 'names', 'tpl', 'place', 'object'];

  /** The composition the state cuts whole ("*>*.q" -> 'q'), or ''. */
  static cutInput(state) {
    const c = (state.cut || []).find((x) => /^\*>\*\.[qkv]$/.test(x));
    return c ? c.slice(-1) : '';
  }

  /** The intervention of the state, for `model`. */
  intervention(model) {
    return interventionOf(this.state, model.config);
  }

  build() {
    const id = `cs-ioi-${++uid}`;
    this.classList.add('cs-view');
    this.refs = {};
    const r = this.refs;
    r.removePos = el('input', { type: 'checkbox', id: `${id}-nopos`, onchange: () => this.update({ nopos: r.removePos.checked }) });
    r.cut = el('select', { id: `${id}-cut`, onchange: () => this.update({ cut: r.cut.value ? [`*>*.${r.cut.value}`] : [] }) },
      el('option', { value: '' }, 'nothing'),
      el('option', { value: 'q' }, 'Q-composition (layer 0 → query of layer 1)'),
      el('option', { value: 'k' }, 'K-composition (layer 0 → key of layer 1)'),
      el('option', { value: 'v' }, 'V-composition (layer 0 → value of layer 1)'));
    r.cutNote = el('span', { class: 'cs-note' });
    r.archExplain = el('p', { class: 'cs-explain' });
    r.accuracy = el('p', { class: 'cs-accuracy', role: 'status', 'aria-live': 'polite' });
    r.zoo = el('tbody');
    r.splits = el('tbody');
    r.tplZoo = el('tbody');

    r.order = el('select', { id: `${id}-order`, onchange: () => this.update({ order: r.order.value }) },
      el('option', { value: 'IOSS' }, 'IO S S  (e.g. "Mary John John")'),
      el('option', { value: 'SIOS' }, 'S IO S  (e.g. "John Mary John")'));
    r.datalist = el('datalist', { id: `${id}-known` });
    // A name is used as soon as it is one the model knows (typing or picking from the list);
    // anything else when the field is committed (Enter or leaving it), so that no message
    // flickers while a name is half typed.
    const nameInput = (key) => {
      const input = el('input', {
        type: 'text', id: `${id}-${key}`, list: `${id}-known`, autocomplete: 'off', spellcheck: 'false', maxlength: 64,
        oninput: () => { if (this._knows?.(input.value)) this.setName(key, input.value); },
        onchange: () => this.setName(key, input.value),
        onblur: () => this.renderNow(),   // the field shows the name as the model spells it
      });
      return input;
    };
    r.io = nameInput('io');
    r.s = nameInput('s');
    r.nameInputs = LETTERS.map((L, i) => el('input', {
      type: 'text', id: `${id}-name-${L}`, size: 8, autocomplete: 'off', spellcheck: 'false', maxlength: 24,
      onblur: () => this.renderNow(),
      onchange: () => {
        const names = parseNames(this.state.names);
        names[i] = r.nameInputs[i].value.replace(/,/g, ' ').trim() || DEFAULT_NAMES[i];
        this.update({ names: names.join(',') });
      },
    }));
    r.tpl = el('select', { id: `${id}-tpl`, class: 'cs-tpl-select', onchange: () => this.update({ tpl: Number(r.tpl.value) }) });
    r.place = el('select', { id: `${id}-place`, onchange: () => this.update({ place: r.place.value }) });
    r.object = el('select', { id: `${id}-object`, onchange: () => this.update({ object: r.object.value }) });
    r.tplNote = el('p', { class: 'cs-note' });
    r.notice = el('p', { class: 'cs-notice', role: 'status', hidden: true });
    r.message = el('p', { class: 'cs-message', role: 'alert', hidden: true });
    r.sentenceLine = el('p', { class: 'cs-sentence', 'aria-label': 'The sentence the model sees' });
    r.sequence = el('p', { class: 'cs-sequence', 'aria-label': 'The tokens the model sees' });
    r.split = el('p', { class: 'cs-note cs-split' });
    r.verdict = el('p', { class: 'cs-verdict', role: 'status', 'aria-live': 'polite' });
    r.probs = el('div', { class: 'cs-bars', role: 'list', 'aria-label': "The model's probability for each name" });
    r.probsNote = el('p', { class: 'cs-note' });
    r.heads = el('tbody', { class: 'cs-heads' });
    r.headsNote = el('p', { class: 'cs-note' });
    r.patterns = el('div', { class: 'cs-patterns' });
    r.lensExplain = el('p', { class: 'cs-explain' });
    r.lens = el('tbody', { class: 'cs-lens' });
    r.results = el('div', { class: 'cs-results' });
    r.seqHeading = el('h2', { id: `${id}-h-seq` });

    const field = (labelText, control, extra) => el('div', { class: 'cs-field' }, el('label', { for: control.id }, labelText), control, extra);
    // Shown for one kind of model only (toggled in render()).
    r.symOnly = [
      r.symZoo = el('table', { class: 'cs-table' },
        el('caption', {}, 'Accuracy over all 60 sequences (the shipped model, no intervention) and the spread over the training seeds'),
        el('thead', {}, el('tr', {}, ['model', 'architecture', 'shipped model', 'seeds solved (100%)', 'mean accuracy of seeds', 'range'].map((h) => el('th', { scope: 'col' }, h)))),
        r.zoo),
      r.namesFieldset = el('fieldset', { class: 'cs-names' },
        el('legend', {}, 'Display names (the model still sees the tokens A–F)'),
        LETTERS.map((L, i) => el('span', { class: 'cs-field cs-inline' }, el('label', { for: r.nameInputs[i].id }, `${L} =`), r.nameInputs[i]))),
    ];
    r.tplOnly = [
      r.splitTable = el('table', { class: 'cs-table cs-split-table' },
        el('caption', {}, 'Accuracy of this model on each split (up to 2,000 sentences each, both orders), with the intervention above'),
        r.splitHead = el('thead'),
        r.splits),
      r.tplZooTable = el('table', { class: 'cs-table' },
        el('caption', {}, 'The sentence-template models compared (the shipped models, no intervention)'),
        r.tplZooHead = el('thead'),
        r.tplZoo),
      r.tplControls = el('div', { class: 'cs-controls' },
        field('Template', r.tpl),
        field('Place', r.place),
        field('Object', r.object)),
      r.tplNote,
      r.sentenceLine,
      r.split,
    ];

    this.replaceChildren(
      el('section', { class: 'cs-panel', 'aria-labelledby': `${id}-h-arch` },
        el('h2', { id: `${id}-h-arch` }, 'Indirect object identification: architecture'),
        r.archExplain,
        el('div', { class: 'cs-controls' },
          el('div', { class: 'cs-field cs-check' }, r.removePos, el('label', { for: r.removePos.id }, 'Remove the positional embedding')),
          field('Cut composition', r.cut, r.cutNote)),
        r.accuracy,
        r.symZoo,
        r.splitTable,
        r.tplZooTable),
      el('section', { class: 'cs-panel', 'aria-labelledby': `${id}-h-seq` },
        r.seqHeading,
        r.tplControls,
        r.tplNote,
        el('div', { class: 'cs-controls' },
          field('Order', r.order),
          field('Indirect object (said once)', r.io),
          field('Subject (said twice)', r.s),
          r.datalist),
        r.namesFieldset,
        r.notice,
        r.message,
        r.sentenceLine,
        r.sequence,
        r.split),
      el('section', { class: 'cs-panel', 'aria-labelledby': `${id}-h-res` },
        el('h2', { id: `${id}-h-res` }, 'What the model predicts'),
        r.results,
        r.verdict,
        r.probs,
        r.probsNote,
        el('h3', {}, 'Each head\'s direct effect on the logits'),
        el('p', { class: 'cs-explain' }, 'Projected on logit(IO) − logit(S) (the contrastive, difference direction: it separates the two names) and on logit(IO) + logit(S) (the additive, sum direction: it raises both names over the rest).'),
        el('table', { class: 'cs-table' },
          el('thead', {}, el('tr', {}, ['part', 'difference: logit(IO) − logit(S)', '', 'sum: logit(IO) + logit(S)', '', 'cos with difference', 'cos with sum'].map((h) => el('th', { scope: 'col' }, h)))),
          r.heads),
        r.headsNote,
        el('div', { class: 'button-row controls-only' },
          el('button', { type: 'button', onclick: () => this._numbers && downloadJSON('circuitscope-ioi.json', this._numbers) }, 'Download the numbers (JSON)'),
          el('button', { type: 'button', onclick: () => this.downloadHeadsCSV() }, 'Per-head contributions (CSV)')),
        el('h3', {}, 'Attention patterns'),
        el('p', { class: 'cs-explain' }, 'Rows are the query (the position attending), columns the key. Darker means more attention.'),
        r.patterns,
        el('h3', {}, 'Logit lens'),
        r.lensExplain,
        el('table', { class: 'cs-table' },
          el('thead', {}, el('tr', {}, ['stage', 'logit IO', 'logit S', 'p(IO)', 'p(S)', ''].map((h) => el('th', { scope: 'col' }, h)))),
          r.lens)),
    );
  }

  /** A name typed in the IO or S field (only a change is reported). */
  setName(key, value) {
    const v = String(value).trim();
    if (v !== this.state[key]) this.update({ [key]: v });
  }

  downloadHeadsCSV() {
    const n = this._numbers;
    if (!n) return;
    // With a template sentence, every row carries it (one table, no comment lines).
    const sentence = typeof n.sentence === 'string' ? [n.sentence] : [];
    downloadCSV('circuitscope-ioi-heads.csv', [
      ['part', 'difference', 'sum', 'cos_difference', 'cos_sum', ...(sentence.length ? ['sentence'] : [])],
      ...n.heads.map((x) => [x.part, x.diff, x.sum, x.cd ?? '', x.cs ?? '', ...sentence])]);
  }

  /**
   * The message about the two typed names, for either kind of model: each unknown one (in the
   * words of `unknown(text, role)`) followed by `knownLine`, or else the same name twice. True when
   * there is a problem (the results are then not ready).
   */
  nameProblems({ ioText, sText, ioKnown, sKnown, same, unknown, knownLine }) {
    const r = this.refs;
    const problems = [];
    if (!ioKnown) problems.push(unknown(ioText, 'indirect object'));
    if (!sKnown) problems.push(unknown(sText, 'subject'));
    if (problems.length) problems.push(knownLine);
    else if (same) problems.push('The indirect object and the subject must be different names: one is said once, the other twice.');
    r.message.textContent = problems.join(' ');
    r.message.hidden = problems.length === 0;
    r.results.dataset.ready = 'false';
    return problems.length > 0;
  }

  /** Empties what the analysis shows (when there is no sequence to run). */
  clearResults() {
    const r = this.refs;
    r.results.dataset.ready = 'false';
    r.sequence.replaceChildren();
    r.verdict.textContent = '';
    r.probs.replaceChildren();
    r.probsNote.textContent = '';
    r.heads.replaceChildren();
    r.headsNote.textContent = '';
    r.patterns.replaceChildren();
    r.lens.replaceChildren();
    r.lensExplain.textContent = '';
    this._numbers = null;
  }

  async render() {
    if (!this.refs) this.build();
    const r = this.refs;
    const st = this.state;
    const modelName = this.modelName;

    // Controls mirror the state (never rebuilt, so focus stays where it was).
    r.order.value = st.order === 'SIOS' ? 'SIOS' : 'IOSS';
    r.removePos.checked = st.nopos;
    r.cut.value = CsIoi.cutInput(st);
    this.dataset.ready = 'false';

    const seq = ++this._seq || (this._seq = 1);
    let model;
    try {
      model = await getModel(modelName);
    } catch (e) {
      r.accuracy.textContent = `${modelName} is not available: ${e.message}`;
      return;
    }
    if (seq !== this._seq) return;
    this.clearError();
    const twoLayer = model.config.n_layers > 1;
    r.cut.disabled = !twoLayer;
    r.cutNote.textContent = twoLayer ? '' : 'only for models with two or more layers';
    r.removePos.disabled = model.config.pos_embed === 'none';
    const task = model.ioiTask();
    this.dataset.kind = task ? 'templates' : 'symbolic';
    for (const e of r.symOnly) e.hidden = !!task;
    for (const e of r.tplOnly) e.hidden = !task;
    const iv = this.intervention(model);
    if (task) return this.renderTemplates(model, modelName, task, iv, seq);
    return this.renderSymbolic(model, modelName, iv, seq);
  }

  // ----------------------------------------------------------------------------------------------
  // The symbolic task

  async renderSymbolic(model, modelName, iv, seq) {
    const r = this.refs;
    const st = this.state;
    const names = parseNames(st.names);
    const ioText = unset(st.io) && st.io !== '' ? 'A' : st.io;
    const sText = unset(st.s) && st.s !== '' ? 'B' : st.s;
    r.archExplain.textContent = 'The symbolic task of the IOI seed: in "<BOS> IO S S <MID>" or "<BOS> S IO S <MID>" the model must name the one said once (IO). One head alone cannot; two heads in one layer can; two layers of one head solve it through composition. The sentence-template models do the same on sentences.';
    r.seqHeading.textContent = 'Build a sequence';
    r.notice.hidden = true;
    r.sentenceLine.replaceChildren();
    r.split.replaceChildren();
    const showName = (L) => `${names[LETTERS.indexOf(L)]} (${L})`;
    this._knows = (text) => resolveName(text, names) !== null;
    if (document.activeElement !== r.io) r.io.value = resolveName(ioText, names) ? names[LETTERS.indexOf(resolveName(ioText, names))] : String(ioText ?? '');
    if (document.activeElement !== r.s) r.s.value = resolveName(sText, names) ? names[LETTERS.indexOf(resolveName(sText, names))] : String(sText ?? '');
    r.nameInputs.forEach((inp, i) => { if (document.activeElement !== inp) inp.value = names[i]; });
    r.datalist.replaceChildren(...names.map((n) => el('option', { value: n })));
    this._datalistFor = null;

    // Accuracy, live under the toggles.
    const clean = model.ioiEvaluate();
    const ev = model.ioiEvaluate(iv);
    const changes = this.changes(iv);
    r.accuracy.replaceChildren(
      el('strong', {}, `${modelName}: ${pct(ev.accuracy)}`),
      ` correct over all ${ev.n} sequences (${ev.correct}/${ev.n})${changes.length ? ' ' + changes.join(' and ') : ''}`,
      changes.length ? `; ${pct(clean.accuracy)} without the intervention` : '',
      `. Mean p(IO) ${fmt(ev.mean_prob_io)}, p(S) ${fmt(ev.mean_prob_s)}.`);
    this.dataset.accuracy = String(ev.accuracy);
    await this.renderZoo(modelName);
    if (seq !== this._seq) return;

    // The sequence.
    const io = resolveName(ioText, names);
    const s = resolveName(sText, names);
    const known = names.map((n, i) => `${n} (${LETTERS[i]})`).join(', ');
    if (this.nameProblems({ ioText, sText, ioKnown: !!io, sKnown: !!s, same: io === s,
      unknown: (text, role) => `The model does not know the name "${String(text ?? '').trim()}" (${role}).`,
      knownLine: `It knows six names: ${known}. Rename them above to use other names.` })) {
      this.clearResults();
      this.dataset.ready = 'true';   // settled: the message says what to change
      return;
    }
    const sentence = model.ioiSentence({ order: r.order.value === 'SIOS' ? 1 : 0, io: LETTERS.indexOf(io), s: LETTERS.indexOf(s) });
    const letters = sentence.words.slice(1, 4);
    const shown = ['<BOS>', ...letters.map((L) => names[LETTERS.indexOf(L)]), '<MID>'];
    r.sequence.replaceChildren(...shown.map((t, i) => el('span', { class: 'cs-token' },
      el('span', { class: 'cs-token-text' }, t),
      el('span', { class: 'cs-token-id' }, i === 0 || i === 4 ? '' : letters[i - 1]))));

    const { a, run, prob, vocab } = this.analyse(model, sentence.tokens, iv);
    const predicted = vocab[a.predicted];
    const right = a.predicted === a.io;
    r.verdict.replaceChildren(
      el('span', { class: ['cs-badge', right ? 'ok' : 'bad'] }, right ? '✓ right' : '✗ wrong'),
      ` The model's most probable next token is ${LETTERS.includes(predicted) ? showName(predicted) : predicted}; the answer is ${showName(io)}. p(IO) = ${fmt(a.prob_io, 3)}, p(S) = ${fmt(a.prob_s, 3)}, logit difference ${fmt(a.logit_diff)}.`);
    r.results.dataset.ready = 'true';
    r.results.dataset.predicted = predicted;
    r.results.dataset.io = io;
    r.results.dataset.right = String(right);
    delete r.results.dataset.sentence;

    r.probs.replaceChildren(...LETTERS.map((L) => {
      const id = vocab.indexOf(L);
      const p = prob[id];
      const role = L === io ? 'IO' : L === s ? 'S' : '';
      return el('div', { class: ['cs-bar-row', role && `role-${role.toLowerCase()}`], role: 'listitem', dataset: { name: L, prob: p.toFixed(6) } },
        el('span', { class: 'cs-bar-label' }, `${names[LETTERS.indexOf(L)]} (${L})${role ? ` · ${role}` : ''}`),
        bar(p, 1, { diverging: false, label: `${names[LETTERS.indexOf(L)]}: ${pct(p)}` }),
        el('span', { class: 'cs-bar-value' }, pct(p)));
    }));
    r.probsNote.textContent = '';

    const rows = this.showHeads(model, a);
    // What the panel shows, for the export buttons.
    this._numbers = {
      model: this.state.model, sequence: shown, names: Object.fromEntries(LETTERS.map((L, i) => [L, names[i]])),
      io, s, predicted, right, prob_io: a.prob_io, prob_s: a.prob_s, logit_diff: a.logit_diff,
      probabilities: Object.fromEntries(LETTERS.map((L) => [L, prob[vocab.indexOf(L)]])), heads: rows,
    };
    this.showPatterns(run, shown.map((t) => t.slice(0, 5)), shown, 30);
    r.lensExplain.textContent = 'The residual stream at <MID> read through the unembedding after each stage.';
    this.showLens(a);
    this.dataset.ready = 'true';
  }

  // ----------------------------------------------------------------------------------------------
  // Sentence templates

  async renderTemplates(model, modelName, task, iv, seq) {
    const r = this.refs;
    const st = this.state;
    const order = r.order.value === 'SIOS' ? 1 : 0;
    const nT = task.templates.length;
    const names = task.names;
    r.archExplain.textContent = `Indirect object identification on sentences: "When Mary and John went to the store, John gave a drink to" → Mary. ${modelName} knows ${names.length} first names and ${nT} templates; the last ${task.holdout_templates} templates and ${pct(task.holdout_pair_fraction)} of the name pairs were held out of training, so the splits below tell memorising from generalising.`;
    r.seqHeading.textContent = 'Build a sentence';

    // Options, once per task; the templates' texts follow the order.
    if (this._datalistFor !== task) {
      this._datalistFor = task;
      r.datalist.replaceChildren(...names.map((n) => el('option', { value: n })));
      r.place.replaceChildren(...task.places.map((p) => el('option', { value: p }, p)));
      r.object.replaceChildren(...task.objects.map((o) => el('option', { value: o }, o)));
      r.tpl.replaceChildren(...task.templates.map((_, i) => el('option', { value: String(i) })));
      this._tplOrder = null;
    }
    if (this._tplOrder !== order) {
      this._tplOrder = order;
      task.template_info.forEach((info, i) => {
        const o = r.tpl.options[i];
        o.textContent = `${i + 1}. ${info.readable[order]}${info.held_out ? '  (held out of training)' : ''}`;
        o.dataset.heldOut = String(info.held_out);
      });
    }
    this._knows = (text) => findWord(text, names) >= 0;

    // The settings, with a visible note for any the link got wrong.
    const notices = [];
    let t = 0;
    if (!unset(st.tpl)) {
      const n = Number(st.tpl);
      if (Number.isInteger(n) && n >= 0 && n < nT) t = n;
      else notices.push(`This link asks for template "${String(st.tpl).slice(0, 20)}" (counted from 0), but ${modelName} has ${nT} templates: the first is shown.`);
    }
    const pick = (value, list, what) => {
      if (unset(value)) return 0;
      const k = findWord(value, list);
      if (k >= 0) return k;
      notices.push(`This link asks for the ${what} "${String(value).slice(0, 40)}", which ${modelName} does not know (it knows ${list.join(', ')}): "${list[0]}" is shown.`);
      return 0;
    };
    const place = pick(st.place, task.places, 'place');
    const object = pick(st.object, task.objects, 'object');
    r.notice.textContent = notices.join(' ');
    r.notice.hidden = notices.length === 0;
    r.tpl.value = String(t);
    r.place.value = task.places[place];
    r.object.value = task.objects[object];
    const usesPlace = task.templates[t].includes('{PLACE}');
    const usesObject = task.templates[t].includes('{OBJECT}');
    r.place.disabled = !usesPlace;
    r.object.disabled = !usesObject;
    const unused = [!usesPlace && 'place', !usesObject && 'object'].filter(Boolean);
    r.tplNote.textContent = unused.length ? `This template has no ${unused.join(' and no ')}.` : '';
    const heldT = task.template_info[t].held_out;

    // The names.
    const ioText = st.io === null || st.io === undefined ? names[0] : st.io;
    const sText = st.s === null || st.s === undefined ? names[1] : st.s;
    const io = findWord(ioText, names);
    const s = findWord(sText, names);
    if (document.activeElement !== r.io) r.io.value = io >= 0 ? names[io] : String(ioText);
    if (document.activeElement !== r.s) r.s.value = s >= 0 ? names[s] : String(sText);
    const problem = this.nameProblems({ ioText, sText, ioKnown: io >= 0, sKnown: s >= 0, same: io === s,
      unknown: (text, role) => (String(text).trim() === ''
        ? `No name is given for the ${role}.`
        : `The model does not know the name "${String(text).trim()}" (${role}).`),
      knownLine: `It knows ${names.length} names: ${names.join(', ')}. Pick one of them (the field suggests them as you type).` });

    if (problem) {
      this.clearResults();
      r.sentenceLine.replaceChildren(el('span', { class: 'cs-note' }, `Template: ${task.template_info[t].readable[order]}`));
      delete r.sentenceLine.dataset.sentence;
      r.split.replaceChildren();
      delete r.split.dataset.split;
    } else {
      this.renderSentence(model, modelName, task, iv, { t, io, s, order, place, object, usesPlace, usesObject, heldT });
    }

    // Accuracy on the four splits, computed once per (model, intervention).
    await this.renderSplits(model, modelName, iv, seq);
    if (seq !== this._seq) return;
    await this.renderTemplateZoo(modelName, seq);
    if (seq !== this._seq) return;
    this.dataset.ready = 'true';
  }

  /** The sentence, its tokens and the analysis of it. */
  renderSentence(model, modelName, task, iv, { t, io, s, order, place, object, usesPlace, usesObject, heldT }) {
    const r = this.refs;
    const names = task.names;
    // The sentence and its split, as the core builds them for training and evaluation.
    const sentence = model.ioiSentence({ template: t, order, io, s, place, object });
    const { text, split } = sentence;
    const heldP = sentence.pair_held_out;
    r.sentenceLine.replaceChildren(
      el('q', { class: 'cs-sentence-text' }, text), ' → ?',
      el('span', { class: 'cs-note' }, `  (the answer: ${names[io]})`));
    r.sentenceLine.dataset.sentence = text;
    r.split.replaceChildren(
      el('span', { class: ['cs-badge', split === 'train' ? 'ok' : 'held'] }, split === 'train' ? 'trained on' : 'held out of training'),
      ` Split "${split}": the template was ${heldT ? 'held out of training' : 'trained on'}; the name pair ${names[io]} and ${names[s]} was ${heldP ? 'held out of training' : 'trained on'}.`);
    r.split.dataset.split = split;

    let result;
    try {
      result = this.analyse(model, sentence.tokens, iv);
    } catch (e) {
      this.clearResults();
      r.message.textContent = `The model could not read this sentence: ${e.message}`;
      r.message.hidden = false;
      return;
    }
    const { a, run, prob, vocab } = result;
    const ids = Array.from(sentence.tokens);
    const words = sentence.words;
    const ioId = vocab.indexOf(names[io]);
    const sId = vocab.indexOf(names[s]);
    r.sequence.replaceChildren(...words.map((w, i) => el('span', { class: 'cs-token' },
      el('span', { class: 'cs-token-text' }, w),
      el('span', { class: 'cs-token-id' }, ids[i] === ioId ? 'IO' : ids[i] === sId ? 'S' : ''))));

    const nameIds = names.map((n) => vocab.indexOf(n));
    const predicted = vocab[a.predicted] ?? `#${a.predicted}`;
    const right = a.predicted === a.io;
    const predictedName = nameIds.includes(a.predicted);
    r.verdict.replaceChildren(
      el('span', { class: ['cs-badge', right ? 'ok' : 'bad'] }, right ? '✓ right' : '✗ wrong'),
      ` The model's most probable next word is "${predicted}"${predictedName ? '' : ' (not a name)'}; the answer is ${names[io]}. p(IO) = ${fmt(a.prob_io, 3)}, p(S) = ${fmt(a.prob_s, 3)}, logit difference ${fmt(a.logit_diff)}.`);
    Object.assign(r.results.dataset, { ready: 'true', predicted, io: names[io], s: names[s], right: String(right), sentence: text, probIo: String(a.prob_io), probS: String(a.prob_s) });

    // Probabilities: the most probable names, and IO and S wherever they rank.
    const pName = nameIds.map((id) => prob[id]);
    const byProb = names.map((_, k) => k).sort((x, y) => pName[y] - pName[x]);
    const shown = byProb.filter((k, rank) => rank < TOP_NAMES || k === io || k === s);
    r.probs.replaceChildren(...shown.map((k) => {
      const p = pName[k];
      const role = k === io ? 'IO' : k === s ? 'S' : '';
      return el('div', { class: ['cs-bar-row', role && `role-${role.toLowerCase()}`], role: 'listitem', dataset: { name: names[k], prob: p.toFixed(6), role: role.toLowerCase(), rank: String(byProb.indexOf(k) + 1) } },
        el('span', { class: 'cs-bar-label' },
          `${byProb.indexOf(k) + 1}. ${names[k]}${role ? ` · ${role}` : ''} `,
          el('span', { class: ['cs-mark', k === io ? 'ok' : 'bad'] }, k === io ? '✓ right answer' : '✗ wrong'),
          nameIds[k] === a.predicted ? el('span', { class: 'cs-mark' }, ' · predicted') : null),
        bar(p, 1, { diverging: false, label: `${names[k]}: ${pct(p)}` }),
        el('span', { class: 'cs-bar-value' }, pct(p)));
    }));
    const namesMass = pName.reduce((x, y) => x + y, 0);
    r.probsNote.textContent = `Shown: the ${TOP_NAMES} most probable of the ${names.length} names, and IO and S wherever they rank (numbers are ranks among the names). All names together get ${pct(namesMass)}; the other words of the vocabulary ${pct(Math.max(0, 1 - namesMass))}.`;

    const rows = this.showHeads(model, a);
    this._numbers = {
      model: modelName, task: 'ioi_templates', sentence: text,
      template: { index: t, text: task.templates[t], held_out: heldT },
      order: order ? 'SIOS' : 'IOSS', place: usesPlace ? task.places[place] : null, object: usesObject ? task.objects[object] : null,
      pair_held_out: heldP, split, tokens: words,
      intervention: { cut: [...this.state.cut], nopos: this.state.nopos },
      io: names[io], s: names[s], predicted, right, prob_io: a.prob_io, prob_s: a.prob_s, logit_diff: a.logit_diff,
      probabilities: Object.fromEntries(names.map((n, k) => [n, pName[k]])), heads: rows,
    };
    this.showPatterns(run, words.map((w) => w.slice(0, 4)), words, 28);
    r.lensExplain.textContent = `The residual stream at the last word ("${words.at(-1)}") read through the unembedding after each stage.`;
    this.showLens(a);
  }

  /** This model's accuracy on each split (under the intervention, and without it for comparison). */
  async renderSplits(model, modelName, iv, seq) {
    const r = this.refs;
    const changes = this.changes(iv);
    const ivKey = JSON.stringify(iv);
    const now = splitAccuracy(model, modelName, iv, ivKey);
    const base = changes.length ? splitAccuracy(model, modelName, {}, '|0') : now;
    r.splitHead.replaceChildren(el('tr', {}, ['split', 'what it holds', 'accuracy', 'correct', 'mean p(IO)', 'mean p(S)', 'mean logit difference',
      ...(changes.length ? ['accuracy without the intervention'] : [])].map((h) => el('th', { scope: 'col' }, h))));
    if (!now.value || !base.value) {
      r.accuracy.textContent = `${modelName}: computing the accuracy on each split…`;
      r.splitTable.dataset.ready = 'false';
      r.splits.replaceChildren();
    }
    const [ev, clean] = await Promise.all([now.promise, base.promise]);
    if (seq !== this._seq) return;
    const cell = (x, f) => (x.error ? '–' : f(x));
    const splits = model.ioiTask().splits;   // [{split, what}], the core's
    r.accuracy.replaceChildren(
      el('strong', {}, `${modelName}: ${ev.train.error ? '–' : pct(ev.train.accuracy)}`),
      ' on the training split, ',
      ...splits.slice(1).map(({ split }, i) => `${i ? ', ' : ''}${cell(ev[split], (x) => pct(x.accuracy))} on ${split}`),
      changes.length ? ` (${changes.join(' and ')})` : '',
      '.');
    r.splits.replaceChildren(...splits.map(({ split, what }) => {
      const x = ev[split];
      return el('tr', { dataset: { split, accuracy: x.error ? '' : String(x.accuracy) } },
        el('th', { scope: 'row' }, split),
        el('td', {}, what),
        el('td', { class: 'num' }, cell(x, (y) => pct(y.accuracy))),
        el('td', { class: 'num' }, cell(x, (y) => `${y.correct}/${y.n}`)),
        el('td', { class: 'num' }, cell(x, (y) => fmt(y.mean_prob_io, 3))),
        el('td', { class: 'num' }, cell(x, (y) => fmt(y.mean_prob_s, 3))),
        el('td', { class: 'num' }, cell(x, (y) => fmt(y.mean_logit_diff))),
        changes.length ? el('td', { class: 'num' }, cell(clean[split], (y) => pct(y.accuracy))) : null);
    }));
    r.splitTable.dataset.ready = 'true';
    this.dataset.accuracy = ev.train.error ? '' : String(ev.train.accuracy);
  }

  /** The sentence-template models side by side (no intervention). */
  async renderTemplateZoo(current, seq) {
    const models = (await ioiModels()).filter((m) => m.templates);
    const rows = await Promise.all(models.map(async (m) => (m.error ? m : { ...m, splits: await splitAccuracy(m.model, m.name, {}, '|0').promise })));
    if (seq !== this._seq) return;
    const splits = models.find((m) => !m.error)?.model.ioiTask().splits ?? [];
    this.refs.tplZooHead.replaceChildren(el('tr', {}, ['model', 'architecture', ...splits.map((x) => x.split)].map((h) => el('th', { scope: 'col' }, h))));
    this.refs.tplZoo.replaceChildren(...rows.map((m) => el('tr', { class: m.name === current ? 'current' : null, dataset: { model: m.name } },
      el('th', { scope: 'row' }, m.name === current ? `▸ ${m.name}` : m.name),
      el('td', {}, m.label.replace(/^sentence templates: /, '')),
      splits.map(({ split }) => el('td', { class: 'num', dataset: { split } },
        m.error ? 'not available' : m.splits[split].error ? '–' : pct(m.splits[split].accuracy))))));
  }

  // ----------------------------------------------------------------------------------------------
  // Shared by both kinds

  /** Words for the intervention in force. */
  changes(iv) {
    const out = [];
    if (iv.removePos) out.push('without the positional embedding');
    if (iv.cut?.length) out.push(`with ${CsIoi.cutInput(this.state).toUpperCase() || 'some'}-composition cut`);
    return out;
  }

  /** The core's IOI analysis of a sequence (with its probabilities at the last position) and its patterns. */
  analyse(model, tokens, iv) {
    const a = model.ioi(tokens, iv);
    const run = model.run(tokens, iv, { logits: false });
    return { a, run, vocab: model.tokenizer.vocab, prob: a.probs.data };
  }

  /** Each head's direct effect, the direct path and the bias; returns the rows (for the exports). */
  showHeads(model, a) {
    const r = this.refs;
    const H = model.config.n_heads;
    const rows = [];
    for (let l = 0; l < model.config.n_layers; l++) {
      for (let h = 0; h < H; h++) {
        const k = l * H + h;
        rows.push({ part: `L${l}H${h}`, diff: a.head_diff.data[k], sum: a.head_sum.data[k], cd: a.head_cos_diff.data[k], cs: a.head_cos_sum.data[k] });
      }
    }
    rows.push({ part: 'direct path (embedding)', diff: a.direct_diff, sum: a.direct_sum });
    rows.push({ part: 'bias', diff: a.bias_diff, sum: a.bias_sum });
    const bound = Math.max(1e-6, ...rows.flatMap((x) => [Math.abs(x.diff), Math.abs(x.sum)]));
    r.heads.replaceChildren(...rows.map((x) => el('tr', {},
      el('th', { scope: 'row' }, x.part),
      el('td', { class: 'num' }, fmt(x.diff)), el('td', {}, bar(x.diff, bound, { label: `${x.part} difference ${fmt(x.diff)}` })),
      el('td', { class: 'num' }, fmt(x.sum)), el('td', {}, bar(x.sum, bound, { label: `${x.part} sum ${fmt(x.sum)}` })),
      el('td', { class: 'num' }, x.cd === undefined ? '' : fmt(x.cd)),
      el('td', { class: 'num' }, x.cs === undefined ? '' : fmt(x.cs)))));
    // Which head adds most and which contrasts most, as the core names them: the largest share of
    // the logit difference (contrastive) and of logit(IO) + logit(S) (additive).
    const share = (t, name) => { const [l, h] = name.slice(1).split('H').map(Number); return t.data[l * H + h]; };
    const parts = [];
    if (rows.length > 3 && a.most_contrastive) parts.push(`Most contrastive head: ${a.most_contrastive} (${pct(share(a.head_share_diff, a.most_contrastive))} of the logit difference).`);
    if (rows.length > 3 && a.most_additive) parts.push(`Most additive head: ${a.most_additive} (${pct(share(a.head_share_sum, a.most_additive))} of logit(IO) + logit(S)).`);
    parts.push(`The parts sum to the logit difference ${fmt(a.logit_diff)}.`);
    r.headsNote.textContent = parts.join(' ');
    return rows;
  }

  /** One heatmap per head; labelsX label the columns (short), labelsY the rows. */
  showPatterns(run, labelsX, labelsY, cell) {
    const r = this.refs;
    const [L, HH, TT] = run.patterns.shape;
    r.patterns.replaceChildren();
    const over = labelsY.join(' ');
    for (let l = 0; l < L; l++) {
      for (let h = 0; h < HH; h++) {
        const canvas = el('canvas', { width: 220, height: 180, role: 'img', 'aria-label': `Attention pattern of head L${l}H${h} over: ${over}` });
        const fig = el('figure', { class: 'cs-figure' }, canvas, el('figcaption', {}, `L${l}H${h}`));
        r.patterns.append(fig);
        heatmap(canvas, { data: run.patterns.data, offset: ((l * HH) + h) * TT * TT, rows: TT, cols: TT }, {
          min: 0, max: 1, cell, labelsX, labelsY, mask: (q, k) => k > q,
        });
      }
    }
  }

  showLens(a) {
    const stages = a.lens.logit_io.shape[0];
    this.refs.lens.replaceChildren(...Array.from({ length: stages }, (_, i) => el('tr', {},
      el('th', { scope: 'row' }, i === 0 ? 'embedding' : `after layer ${i - 1}`),
      el('td', { class: 'num' }, fmt(a.lens.logit_io.data[i])),
      el('td', { class: 'num' }, fmt(a.lens.logit_s.data[i])),
      el('td', { class: 'num' }, fmt(a.lens.prob_io.data[i], 3)),
      el('td', { class: 'num' }, fmt(a.lens.prob_s.data[i], 3)),
      el('td', {}, bar(a.lens.prob_io.data[i] - a.lens.prob_s.data[i], 1, { label: `p(IO) − p(S) = ${fmt(a.lens.prob_io.data[i] - a.lens.prob_s.data[i])}` })))));
  }

  /** The comparison table of the four symbolic architectures (models that fail to load say so). */
  async renderZoo(current) {
    if (!this._zoo) {
      this._zoo = ioiModels().then((list) => Promise.all(list.filter((m) => !m.templates).map(async (m) => {
        const seeds = await getJSON(`models/${m.name}.seeds.json`);
        return { ...m, accuracy: m.error ? undefined : m.model.ioiEvaluate().accuracy, seeds };
      })));
    }
    const zoo = await this._zoo;
    this.refs.zoo.replaceChildren(...zoo.map((m) => el('tr', { class: m.name === current ? 'current' : null, dataset: { model: m.name, accuracy: m.accuracy ?? '' } },
      el('th', { scope: 'row' }, m.name === current ? `▸ ${m.name}` : m.name),
      el('td', {}, m.label),
      el('td', { class: 'num' }, m.error ? 'not available' : pct(m.accuracy)),
      el('td', { class: 'num' }, m.seeds ? `${m.seeds.solved} of ${m.seeds.runs}` : 'not available'),
      el('td', { class: 'num' }, m.seeds ? pct(m.seeds.mean_accuracy) : '–'),
      el('td', { class: 'num' }, m.seeds ? `${pct(m.seeds.min_accuracy)}–${pct(m.seeds.max_accuracy)}` : '–'))));
  }
}

if (!customElements.get(TAG)) customElements.define(TAG, CsIoi);
