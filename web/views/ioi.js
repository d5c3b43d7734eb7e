// <cs-ioi>: the symbolic indirect-object-identification task (seed 001): build a sequence
// "<BOS> IO S S <MID>" or "<BOS> S IO S <MID>" from six names, see which name the model
// predicts, how each head splits the logit difference into the additive (sum) and contrastive
// (difference) directions, the attention patterns and a logit lens; switch between the four
// shipped architectures with their accuracy over all 60 sequences and their seeds' spread, and
// remove the positional embedding or cut Q/K/V composition (2-layer models), live.
//
// Embed it on any page of the site (paths resolve from the module's URL):
//   <link rel="stylesheet" href="views/views.css">
//   <script type="module" src="views/ioi.js"></script>
//   <cs-ioi model="ioi-1l2h"></cs-ioi>
// Attributes (standalone) or state keys (set by the app as `element.state = {...}`):
//   model (ioi-1l1h | ioi-1l2h | ioi-2l1h | ioi-1l2h-nopos), order (IOSS | SIOS), io, s (A..F or a
//   display name), names (six display names, comma-separated), removePos ("1"), cut (Q | K | V).
// Changes the user makes are reported with a bubbling `cs-state` event (detail: the changed keys).
// All user text reaches the page through textContent (el() never parses HTML).
import { el, heatmap, divergingColor, getModel, getJSON, downloadCSV, downloadJSON, CsView } from './common.js';

export const IOI_MODELS = [
  { name: 'ioi-1l1h', label: '1 layer, 1 head' },
  { name: 'ioi-1l2h', label: '1 layer, 2 heads' },
  { name: 'ioi-2l1h', label: '2 layers, 1 head each' },
  { name: 'ioi-1l2h-nopos', label: '1 layer, 2 heads, no positional embedding' },
];
const LETTERS = ['A', 'B', 'C', 'D', 'E', 'F'];
const DEFAULT_NAMES = ['Mary', 'John', 'Alice', 'Bob', 'Eve', 'Dan'];
const pct = (x) => `${(100 * x).toFixed(x === 1 || x === 0 ? 0 : 1)}%`;
const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');
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
  static defaults = { model: 'ioi-1l2h', order: 'IOSS', io: 'A', s: 'B', names: DEFAULT_NAMES.join(','), removePos: '', cut: '' };

  connectedCallback() {
    // Standalone: attributes seed the state (the app overwrites it with `state = ...`).
    if (!this._attrsRead) {
      this._attrsRead = true;
      const fromAttrs = {};
      for (const k of ['model', 'order', 'io', 's', 'names', 'cut']) if (this.hasAttribute(k)) fromAttrs[k] = this.getAttribute(k);
      if (this.hasAttribute('removepos')) fromAttrs.removePos = this.getAttribute('removepos') || '1';
      if (Object.keys(fromAttrs).length) this._state = { ...this._state, ...fromAttrs };
    }
    super.connectedCallback();
  }

  /** The intervention the toggles describe, for `model` (cut only on models with 2+ layers). */
  intervention(model) {
    const st = this.state;
    let iv = {};
    const cut = String(st.cut || '').toLowerCase();
    if (['q', 'k', 'v'].includes(cut) && model.config.n_layers > 1) iv = model.cutComposition(cut);
    if (st.removePos && st.removePos !== '0' && st.removePos !== 'false') iv = { ...iv, removePos: true };
    return iv;
  }

  build() {
    const id = `cs-ioi-${++uid}`;
    this.classList.add('cs-view');
    this.refs = {};
    const r = this.refs;
    r.modelSelect = el('select', { id: `${id}-model`, onchange: () => this.update({ model: r.modelSelect.value }) },
      IOI_MODELS.map((m) => el('option', { value: m.name }, `${m.name} (${m.label})`)));
    r.removePos = el('input', { type: 'checkbox', id: `${id}-nopos`, onchange: () => this.update({ removePos: r.removePos.checked ? '1' : '' }) });
    r.cut = el('select', { id: `${id}-cut`, onchange: () => this.update({ cut: r.cut.value }) },
      el('option', { value: '' }, 'nothing'),
      el('option', { value: 'Q' }, 'Q-composition (layer 0 → query of layer 1)'),
      el('option', { value: 'K' }, 'K-composition (layer 0 → key of layer 1)'),
      el('option', { value: 'V' }, 'V-composition (layer 0 → value of layer 1)'));
    r.cutNote = el('span', { class: 'cs-note' });
    r.accuracy = el('p', { class: 'cs-accuracy', role: 'status', 'aria-live': 'polite' });
    r.zoo = el('tbody');

    r.order = el('select', { id: `${id}-order`, onchange: () => this.update({ order: r.order.value }) },
      el('option', { value: 'IOSS' }, 'IO S S  (e.g. "Mary John John")'),
      el('option', { value: 'SIOS' }, 'S IO S  (e.g. "John Mary John")'));
    r.datalist = el('datalist', { id: `${id}-known` });
    r.io = el('input', { type: 'text', id: `${id}-io`, list: `${id}-known`, autocomplete: 'off', spellcheck: 'false', onchange: () => this.update({ io: r.io.value.trim() }) });
    r.s = el('input', { type: 'text', id: `${id}-s`, list: `${id}-known`, autocomplete: 'off', spellcheck: 'false', onchange: () => this.update({ s: r.s.value.trim() }) });
    r.nameInputs = LETTERS.map((L, i) => el('input', {
      type: 'text', id: `${id}-name-${L}`, size: 8, autocomplete: 'off', spellcheck: 'false', maxlength: 24,
      onchange: () => {
        const names = parseNames(this.state.names);
        names[i] = r.nameInputs[i].value.replace(/,/g, ' ').trim() || DEFAULT_NAMES[i];
        this.update({ names: names.join(',') });
      },
    }));
    r.message = el('p', { class: 'cs-message', role: 'alert', hidden: true });
    r.sequence = el('p', { class: 'cs-sequence', 'aria-label': 'The sequence the model sees' });
    r.verdict = el('p', { class: 'cs-verdict', role: 'status', 'aria-live': 'polite' });
    r.probs = el('div', { class: 'cs-bars', role: 'list', 'aria-label': "The model's probability for each name" });
    r.heads = el('tbody');
    r.headsNote = el('p', { class: 'cs-note' });
    r.patterns = el('div', { class: 'cs-patterns' });
    r.lens = el('tbody');
    r.results = el('div', { class: 'cs-results' });

    const field = (labelText, control, extra) => el('div', { class: 'cs-field' }, el('label', { for: control.id }, labelText), control, extra);
    this.replaceChildren(
      el('section', { class: 'cs-panel', 'aria-labelledby': `${id}-h-arch` },
        el('h2', { id: `${id}-h-arch` }, 'Indirect object identification: architecture'),
        el('p', { class: 'cs-explain' }, 'The symbolic task of the IOI seed: in "<BOS> IO S S <MID>" or "<BOS> S IO S <MID>" the model must name the one said once (IO). One head alone cannot; two heads in one layer can; two layers of one head solve it through composition.'),
        el('div', { class: 'cs-controls' },
          field('Model', r.modelSelect),
          el('div', { class: 'cs-field cs-check' }, r.removePos, el('label', { for: r.removePos.id }, 'Remove the positional embedding')),
          field('Cut composition', r.cut, r.cutNote)),
        r.accuracy,
        el('table', { class: 'cs-table' },
          el('caption', {}, 'Accuracy over all 60 sequences (the shipped model, no intervention) and the spread over the training seeds'),
          el('thead', {}, el('tr', {}, ['model', 'architecture', 'shipped model', 'seeds solved (100%)', 'mean accuracy of seeds', 'range'].map((h) => el('th', { scope: 'col' }, h)))),
          r.zoo)),
      el('section', { class: 'cs-panel', 'aria-labelledby': `${id}-h-seq` },
        el('h2', { id: `${id}-h-seq` }, 'Build a sequence'),
        el('div', { class: 'cs-controls' },
          field('Order', r.order),
          field('Indirect object (said once)', r.io),
          field('Subject (said twice)', r.s),
          r.datalist),
        el('fieldset', { class: 'cs-names' },
          el('legend', {}, 'Display names (the model still sees the tokens A–F)'),
          LETTERS.map((L, i) => el('span', { class: 'cs-field cs-inline' }, el('label', { for: r.nameInputs[i].id }, `${L} =`), r.nameInputs[i]))),
        r.message,
        r.sequence),
      el('section', { class: 'cs-panel', 'aria-labelledby': `${id}-h-res` },
        el('h2', { id: `${id}-h-res` }, 'What the model predicts'),
        r.results,
        r.verdict,
        r.probs,
        el('h3', {}, 'Each head\'s direct effect on the logits'),
        el('p', { class: 'cs-explain' }, 'Projected on logit(IO) − logit(S) (the contrastive, difference direction: it separates the two names) and on logit(IO) + logit(S) (the additive, sum direction: it raises both names over the rest).'),
        el('table', { class: 'cs-table' },
          el('thead', {}, el('tr', {}, ['part', 'difference: logit(IO) − logit(S)', '', 'sum: logit(IO) + logit(S)', '', 'cos with difference', 'cos with sum'].map((h) => el('th', { scope: 'col' }, h)))),
          r.heads),
        r.headsNote,
        el('div', { class: 'button-row controls-only' },
          el('button', { type: 'button', onclick: () => this._numbers && downloadJSON('circuitscope-ioi.json', this._numbers) }, 'Download the numbers (JSON)'),
          el('button', { type: 'button', onclick: () => this._numbers && downloadCSV('circuitscope-ioi-heads.csv', [['part', 'difference', 'sum', 'cos_difference', 'cos_sum'], ...this._numbers.heads.map((x) => [x.part, x.diff, x.sum, x.cd ?? '', x.cs ?? ''])]) }, 'Per-head contributions (CSV)')),
        el('h3', {}, 'Attention patterns'),
        el('p', { class: 'cs-explain' }, 'Rows are the query (the position attending), columns the key. Darker means more attention.'),
        r.patterns,
        el('h3', {}, 'Logit lens'),
        el('p', { class: 'cs-explain' }, 'The residual stream at <MID> read through the unembedding after each stage.'),
        el('table', { class: 'cs-table' },
          el('thead', {}, el('tr', {}, ['stage', 'logit IO', 'logit S', 'p(IO)', 'p(S)', ''].map((h) => el('th', { scope: 'col' }, h)))),
          r.lens)),
    );
  }

  async render() {
    if (!this.refs) this.build();
    const r = this.refs;
    const st = this.state;
    const names = parseNames(st.names);
    const modelName = IOI_MODELS.some((m) => m.name === st.model) ? st.model : 'ioi-1l2h';

    // Controls mirror the state (never rebuilt, so focus stays where it was).
    r.modelSelect.value = modelName;
    r.order.value = st.order === 'SIOS' ? 'SIOS' : 'IOSS';
    r.removePos.checked = !!st.removePos && st.removePos !== '0' && st.removePos !== 'false';
    r.cut.value = ['Q', 'K', 'V'].includes(String(st.cut || '').toUpperCase()) ? String(st.cut).toUpperCase() : '';
    const showName = (L) => `${names[LETTERS.indexOf(L)]} (${L})`;
    if (document.activeElement !== r.io) r.io.value = resolveName(st.io, names) ? names[LETTERS.indexOf(resolveName(st.io, names))] : String(st.io ?? '');
    if (document.activeElement !== r.s) r.s.value = resolveName(st.s, names) ? names[LETTERS.indexOf(resolveName(st.s, names))] : String(st.s ?? '');
    r.nameInputs.forEach((inp, i) => { if (document.activeElement !== inp) inp.value = names[i]; });
    r.datalist.replaceChildren(...names.map((n) => el('option', { value: n })));

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
    r.cutNote.textContent = twoLayer ? '' : 'only for 2-layer models (ioi-2l1h)';
    if (model.config.pos_embed === 'none') {
      r.removePos.disabled = true;
    } else r.removePos.disabled = false;

    // Accuracy, live under the toggles.
    const iv = this.intervention(model);
    const clean = model.ioiEvaluate();
    const ev = model.ioiEvaluate(iv);
    const changes = [];
    if (iv.removePos) changes.push('without the positional embedding');
    if (iv.cut?.length) changes.push(`with ${r.cut.value}-composition cut`);
    r.accuracy.replaceChildren(
      el('strong', {}, `${modelName}: ${pct(ev.accuracy)}`),
      ` correct over all ${ev.n} sequences (${ev.correct}/${ev.n})${changes.length ? ' ' + changes.join(' and ') : ''}`,
      changes.length ? `; ${pct(clean.accuracy)} without the intervention` : '',
      `. Mean p(IO) ${fmt(ev.mean_prob_io)}, p(S) ${fmt(ev.mean_prob_s)}.`);
    this.dataset.accuracy = String(ev.accuracy);
    await this.renderZoo(modelName);
    if (seq !== this._seq) return;

    // The sequence.
    const io = resolveName(st.io, names);
    const s = resolveName(st.s, names);
    const known = names.map((n, i) => `${n} (${LETTERS[i]})`).join(', ');
    const problems = [];
    if (!io) problems.push(`The model does not know the name "${String(st.io ?? '').trim()}" (indirect object).`);
    if (!s) problems.push(`The model does not know the name "${String(st.s ?? '').trim()}" (subject).`);
    if (problems.length) problems.push(`It knows six names: ${known}. Rename them above to use other names.`);
    else if (io === s) problems.push('The indirect object and the subject must be different names: one is said once, the other twice.');
    r.message.textContent = problems.join(' ');
    r.message.hidden = problems.length === 0;
    r.results.dataset.ready = 'false';
    if (problems.length) {
      r.sequence.replaceChildren();
      r.verdict.textContent = '';
      r.probs.replaceChildren();
      r.heads.replaceChildren();
      r.patterns.replaceChildren();
      r.lens.replaceChildren();
      return;
    }
    const letters = r.order.value === 'SIOS' ? [s, io, s] : [io, s, s];
    const text = `${letters.join(' ')} <MID>`;
    const shown = ['<BOS>', ...letters.map((L) => names[LETTERS.indexOf(L)]), '<MID>'];
    r.sequence.replaceChildren(...shown.map((t, i) => el('span', { class: 'cs-token' },
      el('span', { class: 'cs-token-text' }, t),
      el('span', { class: 'cs-token-id' }, i === 0 || i === 4 ? '' : letters[i - 1]))));

    const a = model.ioi(text, iv);
    const run = model.run(text, iv);
    const vocab = model.tokenizer.vocab;
    const T = run.logits.shape[0];
    const V = run.logits.shape[1];
    const last = Array.from(run.logits.data.subarray((T - 1) * V, T * V));
    const mx = Math.max(...last);
    const ex = last.map((x) => Math.exp(x - mx));
    const z = ex.reduce((p, q) => p + q, 0);
    const prob = ex.map((x) => x / z);
    const predicted = vocab[a.predicted];
    const right = a.predicted === a.io;
    r.verdict.replaceChildren(
      el('span', { class: ['cs-badge', right ? 'ok' : 'bad'] }, right ? '✓ right' : '✗ wrong'),
      ` The model's most probable next token is ${LETTERS.includes(predicted) ? showName(predicted) : predicted}; the answer is ${showName(io)}. p(IO) = ${fmt(a.prob_io, 3)}, p(S) = ${fmt(a.prob_s, 3)}, logit difference ${fmt(a.logit_diff)}.`);
    r.results.dataset.ready = 'true';
    r.results.dataset.predicted = predicted;
    r.results.dataset.io = io;
    r.results.dataset.right = String(right);

    r.probs.replaceChildren(...LETTERS.map((L) => {
      const id = vocab.indexOf(L);
      const p = prob[id];
      const role = L === io ? 'IO' : L === s ? 'S' : '';
      return el('div', { class: ['cs-bar-row', role && `role-${role.toLowerCase()}`], role: 'listitem', dataset: { name: L, prob: p.toFixed(6) } },
        el('span', { class: 'cs-bar-label' }, `${names[LETTERS.indexOf(L)]} (${L})${role ? ` · ${role}` : ''}`),
        bar(p, 1, { diverging: false, label: `${names[LETTERS.indexOf(L)]}: ${pct(p)}` }),
        el('span', { class: 'cs-bar-value' }, pct(p)));
    }));

    // Heads, direct path and bias.
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
    // What the panel shows, for the export buttons.
    this._numbers = {
      model: this.state.model, sequence: shown, names: Object.fromEntries(LETTERS.map((L, i) => [L, names[i]])),
      io, s, predicted, right, prob_io: a.prob_io, prob_s: a.prob_s, logit_diff: a.logit_diff,
      probabilities: Object.fromEntries(LETTERS.map((L) => [L, prob[vocab.indexOf(L)]])), heads: rows,
    };
    const bound = Math.max(1e-6, ...rows.flatMap((x) => [Math.abs(x.diff), Math.abs(x.sum)]));
    r.heads.replaceChildren(...rows.map((x) => el('tr', {},
      el('th', { scope: 'row' }, x.part),
      el('td', { class: 'num' }, fmt(x.diff)), el('td', {}, bar(x.diff, bound, { label: `${x.part} difference ${fmt(x.diff)}` })),
      el('td', { class: 'num' }, fmt(x.sum)), el('td', {}, bar(x.sum, bound, { label: `${x.part} sum ${fmt(x.sum)}` })),
      el('td', { class: 'num' }, x.cd === undefined ? '' : fmt(x.cd)),
      el('td', { class: 'num' }, x.cs === undefined ? '' : fmt(x.cs)))));
    const heads = rows.slice(0, -2);
    if (heads.length > 1) {
      const byDiff = [...heads].sort((p, q) => Math.abs(q.diff) / (Math.abs(q.sum) + 1e-9) - Math.abs(p.diff) / (Math.abs(p.sum) + 1e-9));
      r.headsNote.textContent = `Most contrastive head: ${byDiff[0].part} (|difference| / |sum| = ${fmt(Math.abs(byDiff[0].diff) / (Math.abs(byDiff[0].sum) + 1e-9))}); most additive: ${byDiff.at(-1).part} (${fmt(Math.abs(byDiff.at(-1).diff) / (Math.abs(byDiff.at(-1).sum) + 1e-9))}). The parts sum to the logit difference ${fmt(a.logit_diff)}.`;
    } else {
      r.headsNote.textContent = `The parts sum to the logit difference ${fmt(a.logit_diff)}.`;
    }

    // Attention patterns.
    const [L, HH, TT] = run.patterns.shape;
    r.patterns.replaceChildren();
    for (let l = 0; l < L; l++) {
      for (let h = 0; h < HH; h++) {
        const canvas = el('canvas', { width: 220, height: 180, role: 'img', 'aria-label': `Attention pattern of head L${l}H${h}` });
        const fig = el('figure', { class: 'cs-figure' }, canvas, el('figcaption', {}, `L${l}H${h}`));
        r.patterns.append(fig);
        heatmap(canvas, { data: run.patterns.data, offset: ((l * HH) + h) * TT * TT, rows: TT, cols: TT }, {
          min: 0, max: 1, cell: 30, labelsX: shown.map((t) => t.slice(0, 5)), labelsY: shown, mask: (q, k) => k > q,
        });
      }
    }

    // Logit lens.
    const stages = a.lens.logit_io.shape[0];
    r.lens.replaceChildren(...Array.from({ length: stages }, (_, i) => el('tr', {},
      el('th', { scope: 'row' }, i === 0 ? 'embedding' : `after layer ${i - 1}`),
      el('td', { class: 'num' }, fmt(a.lens.logit_io.data[i])),
      el('td', { class: 'num' }, fmt(a.lens.logit_s.data[i])),
      el('td', { class: 'num' }, fmt(a.lens.prob_io.data[i], 3)),
      el('td', { class: 'num' }, fmt(a.lens.prob_s.data[i], 3)),
      el('td', {}, bar(a.lens.prob_io.data[i] - a.lens.prob_s.data[i], 1, { label: `p(IO) − p(S) = ${fmt(a.lens.prob_io.data[i] - a.lens.prob_s.data[i])}` })))));
    this.dataset.ready = 'true';
  }

  /** The comparison table of the four architectures (models that fail to load say so). */
  async renderZoo(current) {
    if (!this._zoo) {
      this._zoo = Promise.all(IOI_MODELS.map(async (m) => {
        const seeds = await getJSON(`models/${m.name}.seeds.json`);
        try {
          const model = await getModel(m.name);
          return { ...m, accuracy: model.ioiEvaluate().accuracy, seeds };
        } catch (e) {
          return { ...m, error: e.message, seeds };
        }
      }));
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

if (!customElements.get('cs-ioi')) customElements.define('cs-ioi', CsIoi);
