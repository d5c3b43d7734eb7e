// <cs-induction>: the induction view. Type text: every token is coloured by the model's loss on
// it, every head's attention pattern is drawn, hovering or focusing a token shows where the
// chosen head attends from it and the top-5 next-token predictions; repeat the text (or insert a
// repeated random sequence) to watch the induction head's stripe appear and the second copy's
// loss drop; ablate heads to see what they did.
//
// The element is the layout and the controls (text box, buttons); the figures are the panels of
// web/panels/induction/: tokens (the token strip, mean loss, top-5), heads (the head grid),
// pattern (the chosen head enlarged), scores (the head-score table) and patching (activation
// patching, store key patch = denoise | noise). They share one core call per change
// (panels/induction/analysis.js: model.analyseText); once typing pauses, patching makes one
// more (showPatching) and the last token's next tokens, left out while typing, are added
// (completeLastRow).
// A keystroke is rendered at once, in the input handler, so it is painted in the coming frame,
// and each panel updates in place only what changed. A token hover (in the strip or on the
// enlarged pattern) is passed between the panels as a DOM event: it is not state.
//
// Standalone use (without the app shell), from any page, this site's or another's (SITE is where
// the site is served):
//   <script type="module" src="SITE/views/induction.js"></script>
//   <cs-induction model="char-2l" text="Hello hello"></cs-induction>   (also head, snapshot, patch)
// or one panel alone: <cs-panel name="induction-pattern"></cs-panel> (with SITE/panels/panel.js)
// (it links its own stylesheet, views/views.css; from another origin the site must send the CORS
// headers the README lists), or as an iframe that sizes itself: each panel's Embed button copies
// one (the panel alone, optionally without controls, with the host line
//   <script src="https://HOST/embed.js" async></script>).
import { el } from '../parts/dom.js';
import { readsText, vocabularyText } from '../parts/format.js';
import { getModel, getModule, headName } from '../store.js';
import { downloadCSV, downloadPNG } from '../parts/download.js';
import { CsView } from '../element.js';
import { showPanel } from '../panels/panel.js';
import tokensPanel, { HOVER, hoverToken } from '../panels/induction/tokens.js';
import headsPanel from '../panels/induction/heads.js';
import patternPanel, { hoverRow } from '../panels/induction/pattern.js';
import scoresPanel from '../panels/induction/scores.js';
import patchingPanel from '../panels/induction/patching.js';
import { analyse, chosenHead, knownScores, positionAt, randomScores, repeatOf, SAMPLE, sampleFor } from '../panels/induction/analysis.js';
import { tokenSample } from '../panels/sample.js';
import { tokenSpans } from '../parts/token-strip.js';

export const TAG = 'cs-induction';
const PANELS = [[tokensPanel, 'ind-loss'], [headsPanel, 'ind-patterns'], [patternPanel, 'ind-pattern'], [scoresPanel, 'ind-score-panel'],
  [patchingPanel, 'ind-patching']];
const PATCH_DELAY = 250;   // ms without a change before the patching panel computes (its passes take up to seconds)
const LAST_ROW_DELAY = 100;   // ms without a change before the last token's next tokens are computed (less than PATCH_DELAY)

export class CsInduction extends CsView {
  static view = 'induction';
  static attributes = [...CsView.attributes, 'patch'];

  connectedCallback() {
    if (!this.els) this.build();
    super.connectedCallback();
  }

  /** The token spans, in order (index = token position). */
  get tokenEls() { const n = this.sections[0].csNode?.csTokens; return n ? tokenSpans(n.strip) : []; }

  build() {
    this.classList.add('cs-view', 'cs-induction');
    const button = (text, onclick) => el('button', { type: 'button', onclick }, text);
    const E = (this.els = {
      text: el('textarea', {
        id: 'ind-text', rows: 4, spellcheck: 'false', autocomplete: 'off', class: 'ind-text',
        placeholder: PLACEHOLDER,
        oninput: () => { this.update({ text: E.text.value, pos: null }); this.renderNow(); },
      }),
      note: el('p', { class: 'note', role: 'status', 'aria-live': 'polite', hidden: true }),
      status: el('p', { class: 'status ind-status', role: 'status', 'aria-live': 'polite' }, 'Loading the model…'),
      cut: cutControl((cut) => this.update({ cut })),
      abl: ablationControl((abl) => this.update({ abl })),
      label: el('label', { for: 'ind-text' }, 'Text'),
    });
    this.sections = PANELS.map(([, cls]) => el('section', { class: `panel ${cls}` }));
    E.patternRow = el('div', { class: 'ind-pattern-row' }, this.sections[1], this.sections[2]);
    this.replaceChildren(
      el('section', { class: 'panel ind-input', 'aria-labelledby': 'ind-in-h' },
        el('h2', { id: 'ind-in-h' }, 'Induction heads'),
        el('p', { class: 'explain' }, 'An induction head looks back for an earlier copy of the current token, attends to the token that followed it and predicts it again. Type, or repeat your text, and watch the second copy\'s loss drop and a stripe appear in the induction head\'s pattern.'),
        E.label,
        E.text,
        el('div', { class: 'button-row controls-only' },
          button('Repeat my text', () => repeatText(this)),
          button('Insert a repeated random sequence', () => insertRandom(this)),
          button('Clear ablations', () => this.update({ ablate: [] })),
          E.cut.field,
          E.abl.field,
          button('Download losses (CSV)', () => exportCSV(this)),
          button('Download patterns (PNG)', () => downloadPNG('circuitscope-attention.png', E.patternRow))),
        E.status, E.note),
      this.sections[0], E.patternRow, this.sections[3], this.sections[4]);
    // A hovered token (in the strip, or a row of the enlarged pattern) shows in both.
    this.addEventListener(HOVER, (/** @type {CustomEvent} */ e) => {
      hoverToken(this.sections[0].csNode, e.detail.pos);
      hoverRow(this.sections[2].csNode, e.detail.pos);
    });
  }

  // Drawn one at a time (CsView.render): a model loads, or its random-token scores arrive, across frames.
  async draw() {
    const m = await this.loadModel();
    const text = this.state.text ?? (m ? sampleFor(m) : SAMPLE);
    if (this.els.text.value !== text) this.els.text.value = text;
    if (!m) return;
    let a;
    try {
      a = analyse(m, this.state, { lastRow: false });
    } catch (e) {
      this.showError(e);
      this.dataset.complete = 'true';
      return;
    }
    this.clearError();
    syncCut(this.els.cut, m.config, this.state.cut, chosenHead(m, this.state));
    if (this.els.abl.select.value !== (this.state.abl || 'zero')) this.els.abl.select.value = this.state.abl || 'zero';
    renderNote(this.els.note, a, m.tokenizer.units);
    await Promise.all(PANELS.map(([p], i) => (p === patchingPanel ? null : showPanel(this.sections[i], p, this.modelName, this.store))));
    await showPatching(this);
    completeLastRow(this, m, a);
    const head = chosenHead(m, this.state);
    const ablate = [...(this.state.ablate || [])];
    const lr = this.lastResult;
    if (!lr || lr.analysis !== a || lr.head !== (head && headName(...head)) || lr.ablate.join() !== ablate.join()) {
      this.lastResult = {
        model: this.modelKey, ids: Array.from(a.ids), bos: a.bos, loss: Array.from(a.run ? a.run.loss.data : []), T: a.T,
        patterns: a.run ? a.run.patterns : null, repeat: a.repeat, scores: a.scores, ablate, head: head && headName(...head), truncated: a.truncated,
      };
      Object.defineProperty(this.lastResult, 'analysis', { value: a, enumerable: false });
    }
    // Ready once the default head is known (it comes from the random-token scores).
    const ready = knownScores(m) ? 'true' : 'false';
    if (this.dataset.ready !== ready) this.dataset.ready = ready;
    this.dataset.renders = String((Number(this.dataset.renders) || 0) + 1);
    this.dispatchEvent(new CustomEvent('cs-rendered', { bubbles: true }));
  }

  /** The state's model (null while it loads or when it cannot), saying which in the status line. */
  async loadModel() {
    const name = this.modelName;
    if (!name) return null;
    const key = this.state.snapshot ? `${name}/${this.state.snapshot}` : name;
    if (this.modelKey === key) return this.model;
    this.els.status.textContent = `Loading ${key}…`;
    const now = () => (this.state.snapshot ? `${this.modelName}/${this.state.snapshot}` : this.modelName);
    let m;
    try {
      m = await getModel(name, { snapshot: this.state.snapshot });
    } catch (e) {
      if (now() !== key) return null;   // another model was chosen meanwhile: its render follows
      this.els.status.textContent = `Could not load ${key}.`;
      throw e;
    }
    if (now() !== key) return null;   // another model was chosen meanwhile: its render follows
    this.model = m;
    this.modelKey = key;
    this.dataset.model = key;
    const c = m.config;
    const layers = c.n_layers ? `${c.n_layers} layer${c.n_layers === 1 ? '' : 's'} of ${c.n_heads} head${c.n_heads === 1 ? '' : 's'}` : 'no attention layers (the direct path only)';
    this.els.status.textContent = `${key}: ${layers}, d_model ${c.d_model}, context ${c.n_ctx} tokens, ${vocabularyText(m.tokenizer)}${c.smeared_keys ? ', smeared keys' : ''}.${typeof m.info?.note === 'string' ? ` ${m.info.note}` : ''}`;
    this.els.label.textContent = m.tokenizer.typing_hint;
    this.els.text.placeholder = readsText(m.tokenizer) ? PLACEHOLDER
      : `Type tokens here, separated by spaces, e.g. ${tokenSample(m) || 'a few tokens, then the same tokens again'}`;
    // The default head is the strongest induction head by the random-token scores (0.3 s).
    randomScores(m).then(() => { if (this.model === m) this.requestRender(); });
    return m;
  }
}

/**
 * The last token's next tokens, which the view's analysis leaves out while the text is typed (at a
 * 50,000-token vocabulary they read all of W_U, most of a keystroke): once the state has stayed
 * the same for LAST_ROW_DELAY ms the analysis is made again with them and the view drawn again.
 * Until then the view's data-complete is "false".
 */
function completeLastRow(view, m, a) {
  clearTimeout(view._lastRowTimer);
  if (!a.run || a.run.last_row) return;
  const state = view.state;
  view.dataset.complete = 'false';
  view._lastRowTimer = setTimeout(() => {
    if (view.state !== state || view.model !== m || !view.isConnected) return;   // a later render asks its own
    try {
      analyse(m, state, { lastRow: true });
    } catch (e) {
      view.showError(e);
      return;
    }
    view.requestRender();
  }, LAST_ROW_DELAY);
}

/**
 * Shows the patching panel: at once when patching is off (no core call), else once the state has
 * stayed the same for PATCH_DELAY ms, so typing is not held up by its forward passes. Until then
 * the panel is marked stale and the view's data-complete is "false" (a screenshot waits for it).
 */
async function showPatching(view) {
  clearTimeout(view._patchTimer);
  const state = view.state;
  const section = view.sections[PANELS.findIndex(([p]) => p === patchingPanel)];
  const show = async () => {
    if (view.state !== state || !view.isConnected) return;   // a later render shows its own state
    await showPanel(section, patchingPanel, view.modelName, view.store);
    view.addPanelExports();   // its PNG and Embed buttons, when this is its first showing
    section.classList.remove('cs-stale');
    view.dataset.complete = 'true';
  };
  view.dataset.complete = 'false';
  if (!state.patch) return show();
  section.classList.add('cs-stale');
  view._patchTimer = setTimeout(() => show().catch((e) => view.showError(e)), PATCH_DELAY);
}

// The controls' actions and the note under them: plain functions of the view.

/** What the text box reads, by the model's tokenizer (a file opened in the page may be word-level or token ids). */
const PLACEHOLDER = 'Type or paste text here: a sentence, then the same sentence again, shows the induction head at work.';
/**
 * "Cut composition": every path from layer 0 into the query, key or value of layer 1 (the
 * store's cut "*>*.q", as the IOI view's), or one path into the shown head's query, key or value
 * from one head of an earlier layer ("L0H1>L1H1.k"), for models of two or more layers.
 * {field, select, sign}.
 */
function cutControl(onCut) {
  const select = el('select', { id: 'ind-cut', onchange: () => onCut(!select.value ? [] : /^[qkv]$/.test(select.value) ? [`*>*.${select.value}`] : [select.value]) });
  const sign = el('strong', { class: 'ind-cut-sign', hidden: true });
  return { select, sign, shape: '', field: el('span', { class: 'ind-cut' }, el('label', { for: 'ind-cut' }, 'Cut composition'), select, sign) };
}

/**
 * "Ablation": what replaces an ablated or cut head's output (the store's abl): nothing, or its
 * output on the core's reference sequences (repeated random tokens as long as the context, for a
 * model without an IOI task). {field, select}.
 */
function ablationControl(onChange) {
  const select = el('select', { id: 'ind-abl', onchange: () => onChange(select.value) },
    el('option', { value: 'zero' }, 'zero: the head\'s output is removed'),
    el('option', { value: 'mean' }, 'mean: its mean over reference sequences of repeated random tokens, at each position'),
    el('option', { value: 'mean-all' }, 'mean-all: one mean over those sequences and their positions'),
    el('option', { value: 'resample' }, 'resample: its output on one of those sequences'));
  return { select, field: el('span', { class: 'ind-abl' }, el('label', { for: 'ind-abl' }, 'Ablation'), select) };
}

const INPUTS = { q: 'query', k: 'key', v: 'value' };

/** Shows the state's cut: the select (when it is one of its own) and a sign while any cut is in force. */
function syncCut(c, config, cut, head) {
  const shape = `${config.n_layers}x${config.n_heads}|${head}`;
  if (c.shape !== shape) {   // the single paths are those into the shown head
    c.shape = shape;
    const [l1, h1] = head ?? [0, 0];
    const into = head ? headName(l1, h1) : '';
    const paths = [];
    for (let l = 0; l < l1; l++) {
      for (let h = 0; h < config.n_heads; h++) {
        for (const x of ['q', 'k', 'v']) paths.push(el('option', { value: `${headName(l, h)}>${into}.${x}` }, `${headName(l, h)} → ${INPUTS[x]} of ${into}`));
      }
    }
    c.select.replaceChildren(el('option', { value: '' }, 'nothing'),
      ...['q', 'k', 'v'].map((x) => el('option', { value: x }, `${x.toUpperCase()}-composition (layer 0 → ${INPUTS[x]} of layer 1)`)),
      ...(paths.length ? [el('optgroup', { label: `One path into ${into}` }, ...paths)] : []));
  }
  const whole = cut.length === 1 ? /^\*>\*\.([qkv])$/.exec(cut[0]) : null;
  const one = cut.length === 1 && [...c.select.options].some((o) => o.value === cut[0]) ? cut[0] : '';
  c.select.disabled = config.n_layers < 2;
  c.select.value = whole ? whole[1] : one;
  const sign = cut.length ? `cut in force: ${cut.join(', ')}` : '';
  if (c.sign.textContent !== sign) c.sign.textContent = sign;
  c.sign.hidden = !sign;
}

function renderNote(node, a, units) {
  const notes = [];
  const c = a.config;
  if (a.truncated) notes.push(`The text is longer than the model's context of ${c.n_ctx} tokens: only the last ${c.n_ctx - a.bos} ${units} are used; the first ${a.truncated} ${units === 'characters' ? '' : 'tokens '}are greyed out below.`);
  const n = a.unknown;
  if (n) notes.push(`${n} character${n === 1 ? ' is' : 's are'} not in the model's vocabulary and ${n === 1 ? 'is' : 'are'} read as <UNK> (marked with a dotted box).`);
  const note = notes.join(' ');
  if (node.textContent !== note) node.textContent = note;
  if (node.hidden !== !note) node.hidden = !note;
}

const contextChars = (view) => (view.model ? view.model.config.n_ctx - 1 : 255);

function repeatText(view) {
  const chars = !view.model || readsText(view.model.tokenizer);   // text as typed (characters, sub-words)
  let base = view.state.text ?? (view.model ? sampleFor(view.model) : SAMPLE);
  const max = Math.floor(contextChars(view) / 2);
  let note = '';
  if (base.length > max) {
    base = chars ? base.slice(-max) : base.slice(-max).replace(/^\S*\s+/, '');   // whole words or ids
    note = `Only the last ${max} characters were repeated, so that both copies fit in the context.`;
  }
  view.update({ text: chars ? base + base : `${base.trim()} ${base.trim()}`, pos: null });
  if (note) view.announce(note);
}

function insertRandom(view) {
  const text = view.state.text ?? (view.model ? sampleFor(view.model) : SAMPLE);
  const m = view.model;
  if (!m) return;
  const ta = view.els.text;
  const at = ta.selectionStart ?? text.length;
  // The core's repeated random segment (sampleText): tokens that show and read back as
  // themselves, drawn from the same pool as headScores() draws (char-2l's induction head fires
  // strongly on such random sequences, much less on repeated English). Its length is what fits
  // beside the text, 8 to 40 tokens; a text the model reads as prose gets " R R ", a word or
  // token-id vocabulary its own spacing.
  const length = Math.max(8, Math.min(40, Math.floor((contextChars(view) - text.length - 3) / 2)));
  const sample = m.sampleText({ seed: 1 + Math.floor(Math.random() * 1e6), length });
  if (!sample.text) return;
  const ins = readsText(m.tokenizer) ? ` ${sample.segment} ${sample.segment} ` : ` ${sample.text} `;
  // The inserted block's second copy's last token is picked, so the cards describe this repeat.
  const next = text.slice(0, at) + ins + text.slice(at);
  view.update({ text: next, pos: positionAt(m, next, at + ins.trimEnd().length - 1) });
  requestAnimationFrame(() => { ta.focus(); ta.setSelectionRange(at + ins.length, at + ins.length); });
}

function exportCSV(view) {
  if (!view.model) return;
  const a = analyse(view.model, view.state, { lastRow: true });   // every row's loss, also while typing
  if (!a.run) return;
  const rows = [['pos', 'token', 'token_id', 'loss_nats', ...(a.ablating ? ['clean_loss_nats'] : []), 'occurrence']];
  const r = repeatOf(a);
  for (let i = a.bos; i < a.T; i++) {
    const occ = r && i >= r.a && i < r.a + r.r ? 'first' : r && i >= r.a + r.d && i < r.a + r.d + r.r ? 'second' : '';
    rows.push([i, a.text.slice(a.begins[i], a.ends[i]), a.ids[i], i > 0 ? a.run.loss.data[i - 1] : '',
      ...(a.ablating ? [i > 0 ? a.clean.loss.data[i - 1] : ''] : []), occ]);
  }
  downloadCSV(`circuitscope-losses-${view.modelKey.replace('/', '-')}.csv`, rows);
}

if (!customElements.get(TAG)) customElements.define(TAG, CsInduction);

// Preload the module so that the first model arrives sooner.
getModule().catch(() => {});
