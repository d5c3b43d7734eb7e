// <cs-induction>: the induction view. Type text: every token is coloured by the model's loss on
// it, every head's attention pattern is drawn, hovering or focusing a token shows where the
// chosen head attends from it and the top-5 next-token predictions; repeat the text (or insert a
// repeated random sequence) to watch the induction head's stripe appear and the second copy's
// loss drop; ablate heads to see what they did. One model.run per change (two while ablating:
// the clean pass for comparison), into buffers kept between runs. A keystroke is rendered at
// once, in the input handler, so it is painted in the coming frame; every part of the view
// updates only what changed (token spans are kept and patched, the pattern thumbnails are
// drawn from one colour table, the enlarged pattern is scaled from its thumbnail) and the
// hover-only details (top-5 predictions, attention from a token) are computed on hover.
//
// Standalone use (without the app shell), from any page of the same site:
//   <script type="module" src="views/induction.js"></script>
//   <cs-induction model="char-2l" text="Hello hello"></cs-induction>
// or set `element.state = {model: 'char-2l', text: '...', head: 'L1H2', ablate: ['L0H1']}`.
// It dispatches bubbling `cs-state` events (detail: the changed keys) when the user changes
// something. Outside the app it shows its own model picker.
import { el } from '../parts/dom.js';
import { heatmap } from '../parts/heatmap.js';
import { getModel, getModule } from '../store.js';
import { downloadCSV, downloadPNG } from '../parts/download.js';
import { lossColor, lossTextColor, pixelTable, packPixel, PIXEL_LEVELS } from '../parts/colour.js';
import { CsView } from './common.js';
import { parseHead, headName, interventionOf } from '../store.js';

export const TAG = 'cs-induction';

const SAMPLE = 'Alice was beginning to get very tired of sitting by her sister on the bank, and of having nothing to do. ' +
  'Alice was beginning to get very tired of sitting by her sister on the bank';
const LOSS_MAX = 5;           // nats at the darkest loss colour
const TOP_K = 5;              // next-token predictions shown for a hovered token

const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');

// Token colours for losses 0..LOSS_MAX, computed once at 1024 levels (finer than the 8-bit
// colours they round to) instead of one colour string per token per keystroke.
const LOSS_LEVELS = 1024;
const LOSS_BG = Array.from({ length: LOSS_LEVELS }, (_, k) => lossColor(k / (LOSS_LEVELS - 1)));
const LOSS_FG = Array.from({ length: LOSS_LEVELS }, (_, k) => lossTextColor(k / (LOSS_LEVELS - 1)));
const lossLevel = (l) => Math.round(Math.max(0, Math.min(1, l / LOSS_MAX)) * (LOSS_LEVELS - 1));
const showTok = (s) => (s === '\n' ? '↵' : s === ' ' ? '␣' : s === '\t' ? '⇥' : s);

export class CsInduction extends CsView {
  static view = 'induction';

  constructor() {
    super();
    this.model = null;          // LoadedModel
    this.modelKey = null;       // "name" or "name/snapshot" of this.model
    this.loadingKey = null;
    this.cache = null;          // the last analysis, see analyse()
    this.hoverPos = null;
    this.randomScores = new WeakMap();
    this.lastResult = null;     // for tests and the console: {ids, loss, patterns, logits, repeat, ...}
    this.buffers = null;        // run()'s output buffers for this.model, reused by every run
    this.toks = [];             // one record per token span: {span, br, text, cls, ...} (what it shows)
    this.roving = null;         // the token that holds tabindex 0 (arrow keys move it)
    this.shown = {};            // keys of what each part of the view shows, to skip unchanged parts
  }

  connectedCallback() {
    if (!this.built) this.build();
    super.connectedCallback();
  }

  /** The token spans, in order (index = token position). */
  get tokenEls() { return this.toks.map((r) => r.span); }

  // ---------------------------------------------------------------------------------------------
  // The skeleton (built once; render() only updates it)

  build() {
    this.built = true;
    this.classList.add('cs-view', 'cs-induction');
    const id = (s) => `ind-${s}`;
    this.els = {};
    const E = this.els;
    E.text = el('textarea', {
      id: id('text'), rows: 4, spellcheck: 'false', autocomplete: 'off', class: 'ind-text',
      oninput: () => { this.update({ text: E.text.value, pos: null }); this.renderNow(); },
    });
    E.repeat = el('button', { type: 'button', onclick: () => this.repeatText() }, 'Repeat my text');
    E.random = el('button', { type: 'button', onclick: () => this.insertRandom() }, 'Insert a repeated random sequence');
    E.clearAbl = el('button', { type: 'button', onclick: () => this.update({ ablate: [] }) }, 'Clear ablations');
    E.csv = el('button', { type: 'button', onclick: () => this.exportCSV() }, 'Download losses (CSV)');
    E.png = el('button', { type: 'button', onclick: () => downloadPNG('circuitscope-attention.png', E.patternPanel) }, 'Download patterns (PNG)');
    E.note = el('p', { class: 'note', role: 'status', 'aria-live': 'polite', hidden: true });
    E.status = el('p', { class: 'status ind-status', role: 'status', 'aria-live': 'polite' }, 'Loading the model…');

    E.mean = el('output', { class: 'ind-mean' }, '–');
    E.repeatBox = el('div', { class: 'ind-repeat', hidden: true });
    E.legend = el('div', { class: 'legend ind-legend', 'aria-hidden': 'true' });
    E.tokens = el('div', {
      class: 'tokens ind-tokens', role: 'group', 'aria-label': 'Tokens coloured by loss; focus one to see attention and predictions',
      onmouseover: (e) => { const p = e.target?.dataset?.pos; if (p !== undefined) this.setHover(Number(p)); },
      onmouseleave: () => this.setHover(null),
      onfocusin: (e) => { const p = e.target?.dataset?.pos; if (p !== undefined) this.setHover(Number(p)); },
      onfocusout: () => this.setHover(null),
      onclick: (e) => { const p = e.target?.dataset?.pos; if (p !== undefined) this.update({ pos: Number(p) === this.state.pos ? null : Number(p) }); },
      onkeydown: (e) => this.tokenKey(e),
    });
    E.focusInfo = el('div', { class: 'ind-focus', 'aria-live': 'polite' });
    E.grid = el('div', { class: 'ind-grid' });
    E.big = el('canvas', { class: 'ind-big', width: 256, height: 256, role: 'img' });
    E.bigCaption = el('p', { class: 'ind-big-caption' });
    E.big.addEventListener('mousemove', (e) => this.bigHover(e));
    E.big.addEventListener('mouseleave', () => this.setHover(null));
    E.scores = el('table', { class: 'ind-scores' });
    E.patternPanel = el('section', { class: 'panel ind-patterns', 'aria-labelledby': id('pat-h') },
      el('h2', { id: id('pat-h') }, 'Attention patterns'),
      el('p', { class: 'explain' }, 'Every head\'s pattern: row = the token attending (query), column = the token attended to (key), darker = more attention. Select a head to enlarge it; the Ablate toggle zero-ablates that head\'s output.'),
      el('div', { class: 'ind-pattern-row' }, E.grid, el('figure', { class: 'ind-big-fig' }, E.big, el('figcaption', {}, E.bigCaption))));

    this.replaceChildren(
      el('section', { class: 'panel ind-input', 'aria-labelledby': id('in-h') },
        el('h2', { id: id('in-h') }, 'Induction heads'),
        el('p', { class: 'explain' }, 'An induction head looks back for an earlier copy of the current token, attends to the token that followed it and predicts it again. Type, or repeat your text, and watch the second copy\'s loss drop and a stripe appear in the induction head\'s pattern.'),
        el('label', { for: id('text') }, 'Text (character-level: every character is a token)'),
        E.text,
        el('div', { class: 'button-row controls-only' }, E.repeat, E.random, E.clearAbl, E.csv, E.png),
        E.status, E.note),
      el('section', { class: 'panel ind-loss', 'aria-labelledby': id('loss-h') },
        el('h2', { id: id('loss-h') }, 'Per-token loss'),
        el('p', { class: 'explain' }, 'Each token is coloured by the loss (nats) of predicting it from the text before it. Hover, focus (Tab, then arrow keys) or click a token to pin it: the tokens are then coloured by where the selected head attends from it.'),
        E.legend,
        el('p', { class: 'mean' }, 'Mean loss: ', E.mean),
        E.repeatBox,
        el('div', { class: 'ind-token-row' }, E.tokens, E.focusInfo)),
      E.patternPanel,
      el('section', { class: 'panel ind-score-panel', 'aria-labelledby': id('sc-h') },
        el('h2', { id: id('sc-h') }, 'Head scores'),
        el('p', { class: 'explain' }, 'Columns marked "this text" score each head on the current text and its patterns (prefix matching: attention from a token to the token after an earlier copy of it; previous token: to the token just before); columns marked "random tokens" come from headScores(): 16 sequences of [BOS] R R with R random tokens, without ablations (induction-heads paper).'),
        el('div', { class: 'table-wrap' }, E.scores)),
    );
    this.buildLegend();
  }

  buildLegend() {
    const E = this.els;
    E.legend.replaceChildren();
    E.legendMode = null;
  }

  setLegend(mode) {
    const E = this.els;
    if (E.legendMode === mode) return;
    E.legendMode = mode;
    const stops = mode === 'loss' ? [0, 1, 2, 3, 4, 5] : [0, 0.2, 0.4, 0.6, 0.8, 1];
    E.legend.replaceChildren(
      el('span', { class: 'legend-unit' }, mode === 'loss' ? 'loss (nats):' : 'attention weight:'),
      ...stops.map((v) => {
        const t = mode === 'loss' ? v / LOSS_MAX : v;
        const sw = el('span', { class: 'swatch' });
        sw.style.backgroundColor = mode === 'loss' ? lossColor(t) : attnColor(t);
        return el('span', { class: 'legend-item' }, sw, mode === 'loss' && v === 5 ? '≥ 5' : String(v));
      }));
  }

  // ---------------------------------------------------------------------------------------------
  // Model

  ensureModel() {
    const name = this.modelName;
    const key = this.state.snapshot ? `${name}/${this.state.snapshot}` : name;
    if (this.modelKey === key) return true;
    if (this.loadingKey === key) return false;
    this.loadingKey = key;
    this.els.status.textContent = `Loading ${key}…`;
    getModel(name, { snapshot: this.state.snapshot }).then((m) => {
      if (this.loadingKey !== key) return;
      this.model = m;
      this.modelKey = key;
      this.loadingKey = null;
      this.cache = null;
      this.buffers = null;
      this.dataset.model = key;
      const c = m.config;
      const layers = c.n_layers ? `${c.n_layers} layer${c.n_layers === 1 ? '' : 's'} of ${c.n_heads} head${c.n_heads === 1 ? '' : 's'}` : 'no attention layers (the direct path only)';
      this.els.status.textContent = `${key}: ${layers}, d_model ${c.d_model}, context ${c.n_ctx} tokens, ${m.tokenizer.kind}-level vocabulary of ${c.d_vocab}${c.smeared_keys ? ', smeared keys' : ''}.`;
      this.requestRender();
      this.scheduleRandomScores();
    }, (e) => {
      if (this.loadingKey !== key) return;
      this.loadingKey = null;
      this.els.status.textContent = `Could not load ${key}.`;
      this.showError(e);
    });
    return false;
  }

  scheduleRandomScores() {
    const m = this.model;
    if (!m || this.randomScores.has(m)) return;
    this.randomScores.set(m, null);
    // About 0.3 s for char-2l: after the first paint, off the typing path.
    setTimeout(() => {
      try {
        this.randomScores.set(m, m.headScores());
      } catch (e) {
        this.randomScores.set(m, { error: e.message });
      }
      if (this.model === m) this.requestRender();   // the default head is the strongest induction head
    }, 50);
  }

  // ---------------------------------------------------------------------------------------------
  // Analysis: one run (plus the clean run while ablating), cached by tokens and intervention

  analyse() {
    const m = this.model;
    const c = m.config;
    const text = this.state.text ?? SAMPLE;
    const tok = m.tokenize(text);
    let { ids, begins, ends } = tok;
    const bos = m.tokenizer.vocab[0] === '<BOS>' && ids.length && ids[0] === 0 && ends[0] === 0 ? 1 : 0;
    let truncated = 0;
    if (ids.length > c.n_ctx) {
      const keep = c.n_ctx - bos;
      const from = ids.length - keep;
      truncated = from - bos;
      const cut = (a) => { const o = new Int32Array(c.n_ctx); if (bos) o[0] = a[0]; o.set(a.subarray(from), bos); return o; };
      ids = cut(ids); begins = cut(begins); ends = cut(ends);
    }
    const intervention = interventionOf(this.state, c);
    const ablating = Object.keys(intervention).length > 0;
    const key = `${this.modelKey}|${ids.join(',')}|${JSON.stringify(intervention)}`;
    if (this.cache && this.cache.key === key) return this.cache;
    // The buffers are overwritten below: the old analysis is gone from here on.
    this.cache = null;
    let run = null;
    let clean = null;
    if (ids.length) {
      const b = this.runBuffers();
      // The core scores every head on this text (text_scores, with the repeated block it finds)
      // and gives the top 5 next tokens at every position, in the same call.
      run = m.run(ids, ablating ? intervention : undefined, { into: b.run, textScores: true, topk: TOP_K });
      // The clean pass is only read for its losses and its probabilities (hover), never its
      // patterns: every token's, so the hover can say what each of the top 5 had without the ablation.
      clean = ablating ? m.run(ids, undefined, { patterns: false, into: b.clean, topk: c.d_vocab }) : run;
    }
    const vocab = m.tokenizer.vocab;
    const unk = vocab.indexOf('<UNK>');
    const T = ids.length;
    const repeat = run ? run.repeat : null;
    this.cache = { key, text, ids, begins, ends, bos, truncated, run, clean, ablating, intervention, T, repeat, unk, vocab };
    this.cache.scores = this.headRows(run);
    return this.cache;
  }

  // Float32Arrays that run() fills instead of allocating (4 MB of patterns per keystroke at 256
  // tokens otherwise), sized for the model's whole context.
  runBuffers() {
    if (!this.buffers) {
      const c = this.model.config;
      const C = c.n_ctx;
      this.buffers = {
        run: { patterns: new Float32Array(c.n_layers * c.n_heads * C * C), logits: new Float32Array(C * c.d_vocab), loss: new Float32Array(C) },
        clean: { logits: new Float32Array(C * c.d_vocab), loss: new Float32Array(C) },
      };
    }
    return this.buffers;
  }

  /** The core's scores of the current text, one row per head: {layer, head, name, prefix, previous, stripe}. */
  headRows(run) {
    if (!run) return [];
    const c = this.model.config;
    const { prefix_matching: pm, previous_token: pt, stripe } = run.text_scores;
    const out = [];
    for (let l = 0; l < c.n_layers; l++) {
      for (let h = 0; h < c.n_heads; h++) {
        const i = l * c.n_heads + h;
        out.push({ layer: l, head: h, name: headName(l, h), prefix: pm.data[i], previous: pt.data[i], stripe: stripe.data[i] });
      }
    }
    return out;
  }

  // ---------------------------------------------------------------------------------------------
  // Render. Each part compares what it would show with what it shows (this.shown, the token
  // records) and touches the DOM only where they differ: typing one character changes the
  // losses from that character on (attention is causal), not the spans before it.

  render() {
    const E = this.els;
    const text = this.state.text ?? SAMPLE;
    if (E.text.value !== text) E.text.value = text;
    if (!this.ensureModel()) return;
    let a;
    try {
      a = this.analyse();
    } catch (e) {
      this.showError(e);
      return;
    }
    this.clearError();
    const c = this.model.config;
    const sel = parseHead(this.state.head);
    this.head = sel && sel[0] < c.n_layers && sel[1] < c.n_heads ? sel : this.defaultHead();
    const headKey = this.head ? headName(...this.head) : null;
    const ablate = this.state.ablate || [];
    this.renderNote(a);
    this.renderTokens(a);
    this.renderSummary(a);
    this.renderGrid(a);
    this.renderBig(a);
    this.renderFocus();
    this.renderScores();
    const lr = this.lastResult;
    if (!lr || lr.analysis !== a || lr.head !== headKey || lr.ablate.join() !== ablate.join()) {
      const loss = a.run ? a.run.loss.data : new Float32Array(0);
      this.lastResult = {
        model: this.modelKey, ids: Array.from(a.ids), bos: a.bos, loss: Array.from(loss), T: a.T,
        patterns: a.run ? a.run.patterns : null, repeat: a.repeat, scores: a.scores, ablate: [...ablate],
        head: headKey, truncated: a.truncated,
      };
      Object.defineProperty(this.lastResult, 'analysis', { value: a, enumerable: false });
    }
    // Ready once the default head is known (it comes from the random-token scores).
    const ready = this.randomScores.get(this.model) ? 'true' : 'false';
    if (this.dataset.ready !== ready) this.dataset.ready = ready;
    this.dataset.renders = String((Number(this.dataset.renders) || 0) + 1);
    this.dispatchEvent(new CustomEvent('cs-rendered', { bubbles: true }));
  }

  defaultHead() {
    // The strongest induction head by the random-token score if known, else the last head.
    const c = this.model.config;
    if (!c.n_layers) return null;
    const rs = this.randomScores.get(this.model);
    if (rs && rs.prefix_matching) {
      let best = 0;
      const d = rs.prefix_matching.data;
      for (let i = 1; i < d.length; i++) if (d[i] > d[best]) best = i;
      return [Math.floor(best / c.n_heads), best % c.n_heads];
    }
    return c.n_layers ? [c.n_layers - 1, c.n_heads - 1] : null;
  }

  /** Sets el.textContent unless it already shows `text` (remembered under `key` in this.shown). */
  setText(key, node, text) {
    if (this.shown[key] === text) return;
    this.shown[key] = text;
    node.textContent = text;
  }

  setData(key, value) {
    if (value === undefined) { if (key in this.dataset) delete this.dataset[key]; return; }
    if (this.dataset[key] !== value) this.dataset[key] = value;
  }

  renderNote(a) {
    const notes = [];
    const c = this.model.config;
    if (a.truncated) notes.push(`The text is longer than the model's context of ${c.n_ctx} tokens: only the last ${c.n_ctx - a.bos} characters are used; the first ${a.truncated} are greyed out below.`);
    if (a.unk >= 0) {
      let n = 0;
      for (let i = 0; i < a.T; i++) if (a.ids[i] === a.unk) n += 1;
      if (n) notes.push(`${n} character${n === 1 ? ' is' : 's are'} not in the model's vocabulary and ${n === 1 ? 'is' : 'are'} read as <UNK> (marked with a dotted box).`);
    }
    const note = notes.join(' ');
    // repeatText() may have added its own sentence since: compare with what is on the page.
    if (this.els.note.textContent !== note) this.els.note.textContent = note;
    if (this.els.note.hidden !== !note) this.els.note.hidden = !note;
  }

  // The token spans: one per token (a <br> after a newline), kept from render to render. A span
  // is only written to where its text, class, loss or label changed.
  renderTokens(a) {
    const E = this.els;
    const loss = a.run ? a.run.loss.data : null;
    const cleanLoss = a.ablating && a.clean ? a.clean.loss.data : null;
    if (!E.skipped) {
      E.skipped = el('span', { class: 'skipped', title: 'Outside the model context', hidden: true });
      E.tokens.prepend(E.skipped);
    }
    const skipped = a.truncated ? a.text.slice(0, a.begins[a.bos] ?? 0) : '';
    if (E.skipped.textContent !== skipped) E.skipped.textContent = skipped;
    if (E.skipped.hidden !== !a.truncated) E.skipped.hidden = !a.truncated;

    const recs = this.toks;
    const T = a.T;
    while (recs.length > T) {
      const r = recs.pop();
      r.span.remove();
      r.br?.remove();
    }
    while (recs.length < T) {
      const span = document.createElement('span');
      span.dataset.pos = String(recs.length);
      E.tokens.append(span);
      recs.push({ span, br: null, text: null, cls: null, tab: null, loss: null, labelKey: null, bg: '', fg: '', focused: false, attn: null });
    }
    if (this.roving === null || this.roving >= T) this.roving = a.bos < T ? a.bos : 0;
    for (let i = 0; i < T; i++) {
      const r = recs[i];
      const span = r.span;
      let shown;
      let cls;
      let lossStr = null;
      let labelKey;
      let label = null;
      let newline = false;
      if (i < a.bos) {
        shown = 'BOS';
        cls = 'tok bos';
        labelKey = 'bos';
      } else {
        const s = a.text.slice(a.begins[i], a.ends[i]);
        const isUnk = a.ids[i] === a.unk;
        newline = s === '\n';
        shown = showTok(s);
        cls = isUnk ? (newline ? 'tok unk newline' : 'tok unk') : newline ? 'tok newline' : 'tok';
        const l = loss && i > 0 ? loss[i - 1] : NaN;
        lossStr = Number.isFinite(l) ? l.toFixed(4) : '';
        const cl = cleanLoss ? cleanLoss[i - 1] : null;
        labelKey = `${s}\u0000${isUnk}\u0000${lossStr}\u0000${cl === null ? '' : fmt(cl, 3)}`;
        if (r.labelKey !== labelKey) {
          label = `${JSON.stringify(s)}${isUnk ? ' (read as <UNK>)' : ''}, position ${i}: loss ${fmt(l, 3)} nats` +
            (cleanLoss ? ` (without ablation ${fmt(cl, 3)})` : '');
        }
      }
      if (r.text !== shown) { span.textContent = shown; r.text = shown; }
      if (r.cls !== cls) { span.className = cls; r.cls = cls; r.focused = false; }
      const tab = i === this.roving ? 0 : -1;
      if (r.tab !== tab) { span.tabIndex = tab; r.tab = tab; }
      if (r.loss !== lossStr) {
        if (lossStr === null) delete span.dataset.loss; else span.dataset.loss = lossStr;
        r.loss = lossStr;
      }
      if (r.labelKey !== labelKey) {
        r.labelKey = labelKey;
        if (i < a.bos) {
          span.title = '<BOS>: the start token (many heads rest their attention here)';
          span.removeAttribute('aria-label');
        } else {
          span.title = label;
          span.setAttribute('aria-label', label);
        }
      }
      if (newline && !r.br) { r.br = document.createElement('br'); span.after(r.br); }
      else if (!newline && r.br) { r.br.remove(); r.br = null; }
    }
    this.colourTokens();
  }

  // Loss colours, or (a token focused) the selected head's attention from it.
  colourTokens() {
    const a = this.cache;
    if (!a || !this.toks.length) return;
    const q = this.focusPos();
    const c = this.model.config;
    const [l, h] = this.head ?? [0, 0];
    const loss = a.run ? a.run.loss.data : null;
    let row = null;
    if (q !== null && a.run && this.head) {
      row = a.run.patterns.data.subarray(((l * c.n_heads + h) * a.T + q) * a.T, ((l * c.n_heads + h) * a.T + q + 1) * a.T);
    }
    this.setLegend(row ? 'attention' : 'loss');
    const recs = this.toks;
    for (let i = 0; i < a.T && i < recs.length; i++) {
      const r = recs[i];
      const span = r.span;
      let bg = '';
      let fg = '';
      let attn = null;
      if (row) {
        const w = i <= q ? row[i] : 0;
        if (i <= q && w > 0.005) {
          const t = Math.sqrt(w);
          bg = attnColor(t);
          fg = t > 0.55 ? '#fff' : '#000';
        }
        attn = i <= q ? row[i].toFixed(4) : '';
      } else if (i > 0 && loss && Number.isFinite(loss[i - 1])) {
        const k = lossLevel(loss[i - 1]);
        bg = LOSS_BG[k];
        fg = LOSS_FG[k];
      }
      if (r.bg !== bg) { span.style.backgroundColor = bg; r.bg = bg; }
      if (r.fg !== fg) { span.style.color = fg; r.fg = fg; }
      if (r.attn !== attn) {
        if (attn === null) delete span.dataset.attn; else span.dataset.attn = attn;
        r.attn = attn;
      }
      const focused = i === q;
      if (r.focused !== focused) { span.classList.toggle('focused', focused); r.focused = focused; }
    }
  }

  focusPos() {
    const a = this.cache;
    const p = this.hoverPos ?? this.state.pos;
    return a && p !== null && p !== undefined && p < a.T ? p : null;
  }

  setHover(p) {
    if (this.hoverPos === p) return;
    this.hoverPos = p;
    this.colourTokens();
    this.renderFocus();
    this.markBigRow();
  }

  tokenKey(e) {
    const p = Number(e.target?.dataset?.pos);
    const recs = this.toks;
    if (!Number.isFinite(p) || !recs[p]) return;
    let next = null;
    if (e.key === 'ArrowRight' || e.key === 'ArrowDown') next = Math.min(recs.length - 1, p + 1);
    else if (e.key === 'ArrowLeft' || e.key === 'ArrowUp') next = Math.max(0, p - 1);
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = recs.length - 1;
    else if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); this.update({ pos: p === this.state.pos ? null : p }); return; }
    if (next === null || !recs[next]) return;
    e.preventDefault();
    recs[p].span.tabIndex = -1;
    recs[p].tab = -1;
    recs[next].span.tabIndex = 0;
    recs[next].tab = 0;
    this.roving = next;
    recs[next].span.focus();
  }

  // The focused token's details (hover-only: the top-5 predictions are computed here, for that
  // one position, not for every token on every keystroke).
  renderFocus() {
    const a = this.cache;
    const E = this.els;
    if (!a || !a.run) {
      if (this.shown.focus !== 'none') { this.shown.focus = 'none'; E.focusInfo.replaceChildren(); }
      return;
    }
    const q = this.focusPos();
    const c = this.model.config;
    const [l, h] = this.head ?? [-1, -1];
    const headText = this.head ? headName(l, h) : null;
    const key = q === null ? `hint|${headText}` : { a, q, l, h };
    const prev = this.shown.focus;
    if (prev === key || (typeof key === 'object' && prev && prev.a === a && prev.q === q && prev.l === l && prev.h === h)) return;
    this.shown.focus = key;
    if (q === null) {
      E.focusInfo.replaceChildren(el('p', { class: 'explain' }, headText ? `Hover or focus a token to see where ${headText} attends from it and what the model predicts next.` : 'Hover or focus a token to see what the model predicts next.'));
      return;
    }
    // The core's top tokens and their probabilities at position q ([T, k] each).
    const top = (run) => {
      const k = run.top_ids.shape[1];
      const ids = run.top_ids.data.subarray(q * k, (q + 1) * k);
      const probs = run.top_probs.data.subarray(q * k, (q + 1) * k);
      return { idx: Array.from(ids.subarray(0, TOP_K)), p: (i) => { const j = ids.indexOf(i); return j >= 0 ? probs[j] : 0; } };
    };
    const t = top(a.run);
    const tc = a.ablating ? top(a.clean) : null;
    const actual = q + 1 < a.T ? a.ids[q + 1] : null;
    const list = el('ol', { class: 'ind-top' }, t.idx.map((i) => {
      const p = t.p(i);
      const bar = el('span', { class: 'bar' });
      bar.style.width = `${Math.round(p * 100)}%`;
      return el('li', { class: i === actual ? 'actual' : null },
        el('code', {}, showTok(a.vocab[i] ?? `#${i}`)), ' ', el('span', { class: 'bar-track' }, bar), ` ${(p * 100).toFixed(1)}%`,
        tc ? el('span', { class: 'muted' }, ` (clean ${(tc.p(i) * 100).toFixed(1)}%)`) : null,
        i === actual ? el('span', { class: 'muted' }, ' ← actual') : null);
    }));
    // Where the head attends: the top keys.
    const base = ((l * c.n_heads + h) * a.T + q) * a.T;
    const keys = this.head ? Array.from({ length: q + 1 }, (_, k) => k).sort((x, y) => a.run.patterns.data[base + y] - a.run.patterns.data[base + x]).slice(0, 3) : [];
    const tokName = (k) => (k < a.bos ? 'BOS' : showTok(a.text.slice(a.begins[k], a.ends[k])));
    E.focusInfo.replaceChildren(
      el('p', {}, el('strong', {}, `Token ${q} `), el('code', {}, tokName(q)), q + 1 < a.T ? ` (next: ` : '', q + 1 < a.T ? el('code', {}, tokName(q + 1)) : '', q + 1 < a.T ? ')' : ''),
      headText && el('p', {}, `${headText} attends most to: `, keys.map((k, i) => [i ? ', ' : '', el('code', {}, tokName(k)), ` @${k} (${(a.run.patterns.data[base + k] * 100).toFixed(0)}%)`])),
      el('p', { class: 'muted' }, a.ablating ? 'Top-5 next tokens (with the ablation):' : 'Top-5 next tokens:'),
      list);
  }

  renderSummary(a) {
    const E = this.els;
    if (!a.run) {
      this.setText('mean', E.mean, '–');
      E.repeatBox.hidden = true;
      this.shown.repeatMode = null;
      return;
    }
    const loss = a.run.loss.data;
    const cl = a.clean.loss.data;
    const mean = (arr, from, to) => { let s = 0; let n = 0; for (let i = from; i < to; i++) if (i > 0 && Number.isFinite(arr[i - 1])) { s += arr[i - 1]; n += 1; } return n ? s / n : NaN; };
    const m = mean(loss, a.bos, a.T);
    const mc = mean(cl, a.bos, a.T);
    this.setText('mean', E.mean, `${fmt(m, 3)} nats over ${a.T - a.bos} tokens` + (a.ablating ? ` (clean ${fmt(mc, 3)}, change ${m - mc >= 0 ? '+' : ''}${fmt(m - mc, 3)})` : ''));
    this.setData('meanLoss', fmt(m, 4));
    const r = a.repeat;
    const mode = r && r.r >= 8 ? 'cards' : 'none';
    if (this.shown.repeatMode !== mode) {
      // Built once per mode; later renders only change the numbers.
      this.shown.repeatMode = mode;
      this.shown.repeatText = this.shown.first = this.shown.second = this.shown.diff = null;
      if (mode === 'cards') {
        const card = (label, cls) => { const v = el('strong', {}); return [v, el('div', { class: `ind-card ${cls}` }, el('span', { class: 'muted' }, label), v)]; };
        const [first, cFirst] = card('first occurrence', 'first');
        const [second, cSecond] = card('second occurrence', 'second');
        const [diff, cDiff] = card('difference (second - first)', 'diff');
        E.repeatText = el('p', {});
        E.cards = { first, second, diff };
        E.repeatBox.replaceChildren(E.repeatText, el('div', { class: 'ind-cards' }, cFirst, cSecond, cDiff));
      } else {
        E.repeatBox.replaceChildren(el('p', { class: 'muted' }, 'No repeated block of 8 or more tokens in the text: use "Repeat my text" to compare the loss on the first and second copies.'));
      }
    }
    if (E.repeatBox.hidden) E.repeatBox.hidden = false;
    if (mode === 'cards') {
      const first = mean(loss, r.a, r.a + r.r);
      const second = mean(loss, r.a + r.d, r.a + r.d + r.r);
      this.setText('repeatText', E.repeatText, `Repeated block of ${r.r} tokens found (the second copy starts ${r.d} tokens after the first). Mean loss per token:`);
      this.setText('first', E.cards.first, `${fmt(first, 3)} nats`);
      this.setText('second', E.cards.second, `${fmt(second, 3)} nats`);
      this.setText('diff', E.cards.diff, `${fmt(second - first, 3)} nats`);
      this.setData('firstLoss', fmt(first, 4));
      this.setData('secondLoss', fmt(second, 4));
    } else {
      this.setData('firstLoss', undefined);
      this.setData('secondLoss', undefined);
    }
  }

  renderGrid(a) {
    const E = this.els;
    const c = this.model.config;
    const ablated = new Set(this.state.ablate || []);
    const shape = `${c.n_layers}x${c.n_heads}`;
    if (E.gridShape !== shape) {
      E.gridShape = shape;
      E.thumbs = [];
      E.thumbsFor = null;
      E.grid.replaceChildren();
      for (let l = 0; l < c.n_layers; l++) {
        const row = el('div', { class: 'ind-layer', role: 'group', 'aria-label': `Layer ${l}` }, el('span', { class: 'ind-layer-label' }, `Layer ${l}`));
        for (let h = 0; h < c.n_heads; h++) {
          const name = headName(l, h);
          const canvas = el('canvas', { class: 'ind-thumb', width: 1, height: 1, 'aria-hidden': 'true' });
          const select = el('button', { type: 'button', class: 'ind-head', 'aria-label': `${name}: enlarge its attention pattern`, onclick: () => this.update({ head: name }) }, canvas, el('span', { class: 'ind-head-name' }, name));
          const abl = el('button', { type: 'button', class: 'ind-ablate', 'aria-label': `Ablate ${name}`, onclick: () => this.toggleAblate(name) }, 'Ablate');
          const score = el('span', { class: 'ind-head-score muted' });
          const cell = el('div', { class: 'ind-head-cell', dataset: { head: name } }, select, abl, score);
          E.thumbs.push({ name, canvas, ctx: null, img: null, px: null, select, abl, score, cell, l, h, sel: null, abld: null, scoreText: null });
          row.append(cell);
        }
        E.grid.append(row);
      }
      if (c.n_layers === 0) E.grid.append(el('p', { class: 'muted' }, 'This model has no attention layers: only the direct path from embedding to unembedding (a bigram model).'));
    }
    const byName = new Map(a.scores.map((s) => [s.name, s]));
    for (const t of E.thumbs) {
      const isSel = !!this.head && this.head[0] === t.l && this.head[1] === t.h;
      if (t.sel !== isSel) {
        t.sel = isSel;
        t.select.setAttribute('aria-pressed', String(isSel));
        t.select.classList.toggle('selected', isSel);
      }
      const isAbl = ablated.has(t.name);
      if (t.abld !== isAbl) {
        t.abld = isAbl;
        t.abl.setAttribute('aria-pressed', String(isAbl));
        t.abl.textContent = isAbl ? 'Ablated' : 'Ablate';
        t.cell.classList.toggle('ablated', isAbl);
      }
      const s = byName.get(t.name);
      const scoreText = s ? `prefix ${fmt(s.prefix)}` : '';
      if (t.scoreText !== scoreText) { t.score.textContent = scoreText; t.scoreText = scoreText; }
    }
    // The pixels, once per analysis (not again for a change of head or a hover).
    if (!a.run || E.thumbsFor === a) return;
    const T = a.T;
    // Attention is causal: with the same number of tokens (so the same computation, row by
    // row) and the same tokens up to position p - 1, rows 0..p-1 of every pattern are what the
    // thumbnails already show. Only rows p..T-1 are drawn again (all of them otherwise).
    let from = 0;
    const prev = E.thumbsFor;
    if (prev && prev.run && prev.T === T && prev.key.split('|')[0] === a.key.split('|')[0] &&
        JSON.stringify(prev.intervention) === JSON.stringify(a.intervention)) {
      while (from < T && prev.ids[from] === a.ids[from]) from++;
    }
    E.thumbsFor = a;
    E.thumbsFrom = from;   // renderBig() redraws the same rows
    if (from >= T) return;
    const P = a.run.patterns.data;
    const lut = pixelTable(attnPalette);
    for (const t of E.thumbs) {
      if (t.canvas.width !== T || t.canvas.height !== T) { t.canvas.width = T; t.canvas.height = T; from = 0; }
      if (!t.img || t.img.width !== T) {
        // A fresh ImageData is transparent: the masked upper triangle is never written.
        t.img = new ImageData(T, T);
        t.px = new Uint32Array(t.img.data.buffer);
        from = 0;
      }
      t.ctx ??= t.canvas.getContext('2d');
      paintPattern(t.px, P, (t.l * c.n_heads + t.h) * T * T, T, lut, from);
      t.ctx.putImageData(t.img, 0, 0, 0, from, T, T - from);
    }
  }

  renderBig(a) {
    const E = this.els;
    const c = this.model.config;
    const none = !a.run || !this.head;   // no tokens, or a model without attention heads
    if (E.big.hidden !== none) E.big.hidden = none;
    if (none) { this.setText('bigCaption', E.bigCaption, ''); this.shown.big = null; return; }
    const [l, h] = this.head;
    const name = headName(l, h);
    const T = a.T;
    const ablated = (this.state.ablate || []).includes(name);
    const prev = this.shown.big;
    if (!prev || prev.a !== a || prev.name !== name) {
      // Drawn from this head's thumbnail last time (the analysis before this one): only the
      // rows the thumbnails redrew change.
      const rows = prev && prev.name === name && prev.scaled && prev.T === T && E.thumbsFor === a ? E.thumbsFrom : 0;
      this.shown.big = { a, name, T, scaled: T > 40 };
      if (T <= 40) {
        // Short texts get the tokens as labels on both axes, drawn at 14 pixels a cell or less.
        const cell = Math.max(1, Math.floor(Math.min(520, 14 * Math.max(T, 1)) / Math.max(T, 1)));
        const labels = Array.from({ length: T }, (_, k) => (k < a.bos ? 'BOS' : showTok(a.text.slice(a.begins[k], a.ends[k]))));
        this.bigGeom = heatmap(E.big, { data: a.run.patterns.data, offset: (l * c.n_heads + h) * T * T, rows: T, cols: T },
          { min: 0, max: 1, mask: (r, col) => col > r, palette: attnPalette, cell, labelsX: labels, labelsY: labels });
      } else {
        // One pixel a cell, the thumbnail's own pixels: the stylesheet enlarges the canvas to
        // 520 CSS pixels without smoothing, as it would a canvas drawn at several pixels a cell.
        const from = E.big.width === T && E.big.height === T ? rows : 0;
        if (E.big.width !== T || E.big.height !== T) { E.big.width = T; E.big.height = T; }
        const t = E.thumbs[l * c.n_heads + h];
        if (from < T) E.big.getContext('2d').putImageData(t.img, 0, 0, 0, from, T, T - from);
        this.bigGeom = { cell: 1, x0: 0, y0: 0, rows: T, cols: T, min: 0, max: 1 };
      }
    }
    const label = `Attention pattern of ${name} over ${T} tokens${ablated ? ' (this head is ablated: its pattern is computed but its output is zeroed)' : ''}`;
    if (this.shown.bigLabel !== label) { this.shown.bigLabel = label; E.big.setAttribute('aria-label', label); }
    const s = a.scores.find((x) => x.name === name);
    this.setText('bigCaption', E.bigCaption, `${name}${ablated ? ' (ablated)' : ''}: rows = query (attending) token, columns = key token. This text: prefix matching ${fmt(s?.prefix)}, previous token ${fmt(s?.previous)}` +
      (a.repeat && a.repeat.r >= 8 ? `, induction stripe ${fmt(s?.stripe)}` : '') + '.');
    this.markBigRow();
  }

  markBigRow() {
    // Redraw is cheap enough only on render; the hovered row is shown in the caption instead.
    const q = this.focusPos();
    const row = q === null ? '' : String(q);
    if (this.els.big.dataset.row !== row) this.els.big.dataset.row = row;
  }

  bigHover(e) {
    const g = this.bigGeom;
    if (!g) return;
    const r = this.els.big.getBoundingClientRect();
    const scale = this.els.big.width / r.width;
    const row = Math.floor(((e.clientY - r.top) * scale - g.y0) / g.cell);
    if (row >= 0 && row < g.rows) this.setHover(row);
  }

  // The score table: rebuilt when its columns change (a repeated block appears or goes, the
  // random-token scores arrive), otherwise only its numbers are rewritten.
  renderScores() {
    const E = this.els;
    const a = this.cache;
    if (!a || !this.model) return;
    const rs = this.randomScores.get(this.model);
    const hasRepeat = !!(a.repeat && a.repeat.r >= 8);
    const c = this.model.config;
    const layout = `${this.modelKey}|${c.n_layers}x${c.n_heads}|${hasRepeat}`;
    if (this.shown.scoreLayout !== layout) {
      this.shown.scoreLayout = layout;
      const head = el('tr', {}, el('th', { scope: 'col' }, 'Head'),
        el('th', { scope: 'col' }, 'Prefix matching', el('br'), el('small', {}, 'this text')),
        el('th', { scope: 'col' }, 'Previous token', el('br'), el('small', {}, 'this text')),
        hasRepeat ? el('th', { scope: 'col' }, 'Induction stripe', el('br'), el('small', {}, 'this text, repeated block')) : null,
        el('th', { scope: 'col' }, 'Prefix matching', el('br'), el('small', {}, 'random tokens')),
        el('th', { scope: 'col' }, 'Copying', el('br'), el('small', {}, 'random tokens, OV')));
      E.scoreRows = [];
      for (let l = 0; l < c.n_layers; l++) {
        for (let h = 0; h < c.n_heads; h++) {
          const cells = { prefix: el('td', {}), previous: el('td', {}), stripe: hasRepeat ? el('td', {}) : null, rpm: el('td', {}), rcopy: el('td', {}) };
          const tr = el('tr', {}, el('th', { scope: 'row' }, headName(l, h)), cells.prefix, cells.previous, cells.stripe, cells.rpm, cells.rcopy);
          E.scoreRows.push({ tr, cells, l, h, shown: {} });
        }
      }
      E.scores.replaceChildren(el('thead', {}, head), el('tbody', {}, E.scoreRows.map((r) => r.tr)));
    }
    const put = (row, key, node, text) => { if (row.shown[key] !== text) { row.shown[key] = text; node.textContent = text; } };
    a.scores.forEach((s, i) => {
      const row = E.scoreRows[i];
      if (!row) return;
      const rv = (k) => (rs && rs[k] ? fmt(rs[k].data[i]) : rs && rs.error ? 'error' : '…');
      const sel = !!this.head && this.head[0] === s.layer && this.head[1] === s.head;
      if (row.shown.sel !== sel) { row.shown.sel = sel; row.tr.classList.toggle('selected', sel); }
      put(row, 'prefix', row.cells.prefix, fmt(s.prefix));
      put(row, 'previous', row.cells.previous, fmt(s.previous));
      if (row.cells.stripe) {
        put(row, 'stripe', row.cells.stripe, fmt(s.stripe));
        const d = fmt(s.stripe, 4);
        if (row.cells.stripe.dataset.stripe !== d) row.cells.stripe.dataset.stripe = d;
      }
      put(row, 'rpm', row.cells.rpm, rv('prefix_matching'));
      put(row, 'rcopy', row.cells.rcopy, rv('copying'));
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Actions

  toggleAblate(name) {
    const set = new Set(this.state.ablate || []);
    if (set.has(name)) set.delete(name); else set.add(name);
    this.update({ ablate: [...set].sort() });
  }

  contextChars() {
    return this.model ? this.model.config.n_ctx - 1 : 255;
  }

  repeatText() {
    let base = this.state.text ?? SAMPLE;
    const max = Math.floor(this.contextChars() / 2);
    let note = '';
    if (base.length > max) {
      base = base.slice(-max);
      note = `Only the last ${max} characters were repeated, so that both copies fit in the context.`;
    }
    this.update({ text: base + base, pos: null });
    if (note) this.announce(note);
  }

  insertRandom() {
    const vocab = this.model?.tokenizer?.vocab || [];
    // Every printable character of the vocabulary, as headScores() draws them: char-2l's induction
    // head fires strongly on such random sequences, much less on repeated English.
    const pool = vocab.filter((v) => v.length === 1 && v !== '\n' && v !== ' ' && v !== '\t');
    const text = this.state.text ?? SAMPLE;
    const ta = this.els.text;
    const at = ta.selectionStart ?? text.length;
    const room = this.contextChars() - text.length;
    const L = Math.max(8, Math.min(40, Math.floor(room / 2)));
    let r = '';
    for (let i = 0; i < L; i++) r += pool[Math.floor(Math.random() * pool.length)];
    const ins = ` ${r} ${r} `;
    const next = text.slice(0, at) + ins + text.slice(at);
    this.update({ text: next, pos: null });
    requestAnimationFrame(() => { ta.focus(); ta.setSelectionRange(at + ins.length, at + ins.length); });
  }

  exportCSV() {
    const a = this.cache;
    if (!a || !a.run) return;
    const rows = [['pos', 'token', 'token_id', 'loss_nats', ...(a.ablating ? ['clean_loss_nats'] : []), 'occurrence']];
    const r = a.repeat && a.repeat.r >= 8 ? a.repeat : null;
    for (let i = a.bos; i < a.T; i++) {
      const occ = r && i >= r.a && i < r.a + r.r ? 'first' : r && i >= r.a + r.d && i < r.a + r.d + r.r ? 'second' : '';
      rows.push([i, a.text.slice(a.begins[i], a.ends[i]), a.ids[i], i > 0 ? a.run.loss.data[i - 1] : '',
        ...(a.ablating ? [i > 0 ? a.clean.loss.data[i - 1] : ''] : []), occ]);
    }
    downloadCSV(`circuitscope-losses-${this.modelKey.replace('/', '-')}.csv`, rows);
  }
}

// Attention: ColorBrewer Blues (sequential, colour-blind safe, distinct from the orange losses).
// attnPalette(t) is exported for pages that draw patterns in the same colours (and for tests).
const BLUES = [[247, 251, 255], [222, 235, 247], [198, 219, 239], [158, 202, 225], [107, 174, 214], [66, 146, 198], [33, 113, 181], [8, 81, 156], [8, 48, 107]];
export function attnPalette(t) {
  if (!Number.isFinite(t)) return [160, 160, 160];
  t = Math.min(1, Math.max(0, t));
  const x = t * (BLUES.length - 1);
  const i = Math.min(BLUES.length - 2, Math.floor(x));
  const f = x - i;
  const a = BLUES[i];
  const b = BLUES[i + 1];
  return [a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f];
}
// One head's T x T pattern (at `offset` of P) as pixel words, rows from..T-1: the lower
// triangle with the diagonal, min 0 and max 1 as heatmap() draws it; the upper triangle (masked)
// is not written.
function paintPattern(px, P, offset, T, lut, from = 0) {
  const top = PIXEL_LEVELS - 1;
  const nan = lut.nan ?? (lut.nan = packPixel(attnPalette(NaN)));
  for (let r = from; r < T; r++) {
    const src = offset + r * T;
    const dst = r * T;
    for (let c = 0; c <= r; c++) {
      const v = P[src + c];
      if (v >= 0) px[dst + c] = lut[v >= 1 ? top : (v * top + 0.5) | 0];
      else px[dst + c] = v < 0 ? lut[0] : nan;
    }
  }
}
function attnColor(t) {
  const [r, g, b] = attnPalette(t);
  return `rgb(${Math.round(r)}, ${Math.round(g)}, ${Math.round(b)})`;
}

if (!customElements.get(TAG)) customElements.define(TAG, CsInduction);

// Preload the module so that the first model arrives sooner.
getModule().catch(() => {});
