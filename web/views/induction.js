// <cs-induction>: the induction view. Type text: every token is coloured by the model's loss on
// it, every head's attention pattern is drawn, hovering or focusing a token shows where the
// chosen head attends from it and the top-5 next-token predictions; repeat the text (or insert a
// repeated random sequence) to watch the induction head's stripe appear and the second copy's
// loss drop; ablate heads to see what they did. One model.run per change (two while ablating:
// the clean pass for comparison), rendered in one animation frame.
//
// Standalone use (without the app shell), from any page of the same site:
//   <script type="module" src="views/induction.js"></script>
//   <cs-induction model="char-2l" text="Hello hello"></cs-induction>
// or set `element.state = {model: 'char-2l', text: '...', head: 'L1H2', ablate: ['L0H1']}`.
// It dispatches bubbling `cs-state` events (detail: the changed keys) when the user changes
// something. Outside the app it shows its own model picker.
import { el, heatmap, getModel, getModelIndex, getModule, downloadCSV, downloadPNG, lossColor, lossTextColor, CsView } from './common.js';
import { parseHead, headName, interventionOf } from '../state.js';

const SAMPLE = 'Alice was beginning to get very tired of sitting by her sister on the bank, and of having nothing to do. ' +
  'Alice was beginning to get very tired of sitting by her sister on the bank';
const LOSS_MAX = 5;           // nats at the darkest loss colour

const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');
const showTok = (s) => (s === '\n' ? '↵' : s === ' ' ? '␣' : s === '\t' ? '⇥' : s);

// The longest block of tokens that occurs twice without overlapping (over ids[from..]): {a, d, r}
// = first copy [a, a+r), second copy [a+d, a+d+r); null below 4 tokens.
function findRepeat(ids, from) {
  const T = ids.length;
  let best = null;
  for (let d = 1; d < T; d++) {
    let run = 0;
    for (let i = from; i + d < T; i++) {
      if (ids[i] === ids[i + d]) {
        run += 1;
        const r = Math.min(run, d);
        if (r >= 4 && (!best || r > best.r)) best = { a: i + 1 - r, d, r };
      } else run = 0;
    }
  }
  return best;
}

export class CsInduction extends CsView {
  static defaults = { model: null, text: null, head: null, ablate: [], pos: null, snapshot: null };
  static defaultModel = 'char-2l';
  /** Models this view can show (the app's model switcher lists these). */
  static modelFilter(entry) { return /^char-/.test(entry.name); }
  static get observedAttributes() { return ['model', 'text']; }

  constructor() {
    super();
    this.model = null;          // LoadedModel
    this.modelKey = null;       // "name" or "name/snapshot" of this.model
    this.loadingKey = null;
    this.cache = null;          // the last analysis, see analyse()
    this.hoverPos = null;
    this.randomScores = new WeakMap();
    this.lastResult = null;     // for tests and the console: {ids, loss, patterns, logits, repeat, ...}
  }

  attributeChangedCallback(name, _old, value) {
    if (this.built) return;
    if (name === 'model' || name === 'text') this._state = { ...this._state, [name]: value };
  }

  connectedCallback() {
    if (!this.built) this.build();
    super.connectedCallback();
  }

  get inApp() { return !!this.closest('[data-cs-app]'); }

  // ---------------------------------------------------------------------------------------------
  // The skeleton (built once; render() only updates it)

  build() {
    this.built = true;
    this.classList.add('cs-view', 'cs-induction');
    const id = (s) => `ind-${s}`;
    this.els = {};
    const E = this.els;
    E.modelSelect = el('select', { id: id('model'), onchange: () => this.update({ model: E.modelSelect.value, snapshot: null, head: null, ablate: [], pos: null }) });
    E.modelField = el('div', { class: 'field standalone-only' }, el('label', { for: id('model') }, 'Model'), E.modelSelect);
    E.modelField.hidden = this.inApp;
    E.text = el('textarea', {
      id: id('text'), rows: 4, spellcheck: 'false', autocomplete: 'off', class: 'ind-text',
      oninput: () => this.update({ text: E.text.value, pos: null }),
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
        el('div', { class: 'controls' }, E.modelField),
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
        el('p', { class: 'explain' }, 'Columns marked "this text" are computed in the page from the current pattern and tokens; columns marked "random tokens" come from headScores(): 16 sequences of [BOS] R R with R random tokens, without ablations (induction-heads paper).'),
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

  async populateModels() {
    if (this.modelsListed) return;
    this.modelsListed = true;
    const list = (await getModelIndex()).filter((m) => CsInduction.modelFilter(m));
    const E = this.els;
    E.modelSelect.replaceChildren(...list.map((m) => el('option', { value: m.name }, m.title || m.name)));
    this.availableModels = list.map((m) => m.name);
    if (this.state.model) E.modelSelect.value = this.state.model;
  }

  wantedModel() {
    return this.state.model || CsInduction.defaultModel;
  }

  ensureModel() {
    const name = this.wantedModel();
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
      this.dataset.model = key;
      const c = m.config;
      this.els.status.textContent = `${key}: ${c.n_layers} layer${c.n_layers === 1 ? '' : 's'} of ${c.n_heads} heads, d_model ${c.d_model}, context ${c.n_ctx} tokens, ${m.tokenizer.kind}-level vocabulary of ${c.d_vocab}${c.smeared_keys ? ', smeared keys' : ''}.`;
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
      if (this.model === m) this.renderScores();
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
    const key = `${this.modelKey}|${Array.from(ids).join(',')}|${JSON.stringify(intervention)}`;
    if (this.cache && this.cache.key === key) return this.cache;
    let run = null;
    let clean = null;
    if (ids.length) {
      run = m.run(ids, ablating ? intervention : undefined);
      clean = ablating ? m.run(ids) : run;
    }
    const vocab = m.tokenizer.vocab;
    const unk = vocab.indexOf('<UNK>');
    const T = ids.length;
    const repeat = T ? findRepeat(ids, bos) : null;
    this.cache = { key, text, ids, begins, ends, bos, truncated, run, clean, ablating, intervention, T, repeat, unk, vocab };
    this.cache.scores = this.textScores(this.cache);
    return this.cache;
  }

  // Per-head scores of the current text from its patterns (plain JS; see the table's note).
  textScores(a) {
    const { run, ids, T, repeat, bos } = a;
    const c = this.model.config;
    const out = [];
    if (!run) return out;
    const P = run.patterns.data;
    // Earlier positions of each token, for prefix matching: occList[q] holds them in its first occN[q] entries.
    const prev = new Map();
    const occList = new Array(T);
    const occN = new Int32Array(T);
    for (let q = 0; q < T; q++) {
      let list = prev.get(ids[q]);
      if (!list) { list = []; prev.set(ids[q], list); }
      occList[q] = list;
      occN[q] = list.length;
      list.push(q);
    }
    for (let l = 0; l < c.n_layers; l++) {
      for (let h = 0; h < c.n_heads; h++) {
        const base = (l * c.n_heads + h) * T * T;
        let pm = 0; let pmN = 0; let pt = 0; let ptN = 0; let st = 0; let stN = 0;
        for (let q = bos + 1; q < T; q++) {
          pt += P[base + q * T + q - 1]; ptN += 1;
          const list = occList[q];
          let s = 0;
          let any = false;
          for (let k = 0; k < occN[q]; k++) {
            const j = list[k];
            if (j >= bos && j + 1 < q) { s += P[base + q * T + j + 1]; any = true; }
          }
          if (any) { pm += s; pmN += 1; }
        }
        if (repeat) {
          // The induction stripe: second-copy token q attends to the token after its first copy, q - d + 1.
          for (let q = repeat.a + repeat.d; q < repeat.a + repeat.d + repeat.r; q++) {
            if (q - repeat.d + 1 < q) { st += P[base + q * T + q - repeat.d + 1]; stN += 1; }
          }
        }
        out.push({ layer: l, head: h, name: headName(l, h), prefix: pmN ? pm / pmN : NaN, previous: ptN ? pt / ptN : NaN, stripe: stN ? st / stN : NaN });
      }
    }
    return out;
  }

  // ---------------------------------------------------------------------------------------------
  // Render

  render() {
    const E = this.els;
    E.modelField.hidden = this.inApp;
    this.populateModels();
    const text = this.state.text ?? SAMPLE;
    if (E.text.value !== text) E.text.value = text;
    if (!this.inApp && E.modelSelect.value !== this.wantedModel()) E.modelSelect.value = this.wantedModel();
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
    this.renderNote(a);
    this.renderTokens(a);
    this.renderSummary(a);
    this.renderGrid(a);
    this.renderBig(a);
    this.renderFocus();
    this.renderScores();
    const loss = a.run ? a.run.loss.data : new Float32Array(0);
    this.lastResult = {
      model: this.modelKey, ids: Array.from(a.ids), bos: a.bos, loss: Array.from(loss), T: a.T,
      patterns: a.run ? a.run.patterns : null, repeat: a.repeat, scores: a.scores, ablate: [...(this.state.ablate || [])],
      head: headName(...this.head), truncated: a.truncated,
    };
    this.dataset.ready = 'true';
    this.dataset.renders = String((Number(this.dataset.renders) || 0) + 1);
    this.dispatchEvent(new CustomEvent('cs-rendered', { bubbles: true }));
  }

  defaultHead() {
    // The strongest induction head by the random-token score if known, else the last head.
    const c = this.model.config;
    const rs = this.randomScores.get(this.model);
    if (rs && rs.prefix_matching) {
      let best = 0;
      const d = rs.prefix_matching.data;
      for (let i = 1; i < d.length; i++) if (d[i] > d[best]) best = i;
      return [Math.floor(best / c.n_heads), best % c.n_heads];
    }
    return [c.n_layers - 1, c.n_heads - 1];
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
    this.els.note.textContent = notes.join(' ');
    this.els.note.hidden = notes.length === 0;
  }

  renderTokens(a) {
    const E = this.els;
    const frag = document.createDocumentFragment();
    const loss = a.run ? a.run.loss.data : null;
    const cleanLoss = a.ablating && a.clean ? a.clean.loss.data : null;
    if (a.truncated) frag.append(el('span', { class: 'skipped', title: 'Outside the model context' }, a.text.slice(0, a.begins[a.bos] ?? 0)));
    this.tokenEls = new Array(a.T);
    if (a.bos) {
      const b = el('span', { class: 'tok bos', tabindex: -1, dataset: { pos: 0 }, title: '<BOS>: the start token (many heads rest their attention here)' }, 'BOS');
      this.tokenEls[0] = b;
      frag.append(b);
    }
    for (let i = a.bos; i < a.T; i++) {
      const s = a.text.slice(a.begins[i], a.ends[i]);
      const l = loss && i > 0 ? loss[i - 1] : NaN;
      const isUnk = a.ids[i] === a.unk;
      const span = el('span', {
        class: ['tok', isUnk && 'unk', s === '\n' && 'newline'],
        tabindex: i === a.bos ? 0 : -1,
        dataset: { pos: i, loss: Number.isFinite(l) ? l.toFixed(4) : '' },
      }, showTok(s));
      const label = `${JSON.stringify(s)}${isUnk ? ' (read as <UNK>)' : ''}, position ${i}: loss ${fmt(l, 3)} nats` +
        (cleanLoss ? ` (without ablation ${fmt(cleanLoss[i - 1], 3)})` : '');
      span.title = label;
      span.setAttribute('aria-label', label);
      this.tokenEls[i] = span;
      frag.append(span);
      if (s === '\n') frag.append(el('br'));
    }
    E.tokens.replaceChildren(frag);
    this.colourTokens();
  }

  // Loss colours, or (a token focused) the selected head's attention from it.
  colourTokens() {
    const a = this.cache;
    if (!a || !this.tokenEls) return;
    const q = this.focusPos();
    const c = this.model.config;
    const [l, h] = this.head;
    const loss = a.run ? a.run.loss.data : null;
    let row = null;
    let rowMax = 0;
    if (q !== null && a.run) {
      row = a.run.patterns.data.subarray(((l * c.n_heads + h) * a.T + q) * a.T, ((l * c.n_heads + h) * a.T + q + 1) * a.T);
      for (let k = 0; k <= q; k++) rowMax = Math.max(rowMax, row[k]);
    }
    this.setLegend(row ? 'attention' : 'loss');
    for (let i = 0; i < a.T; i++) {
      const span = this.tokenEls[i];
      if (!span) continue;
      let bg = '';
      let fg = '';
      if (row) {
        const w = i <= q ? row[i] : 0;
        if (i <= q && w > 0.005) {
          const t = Math.sqrt(w);
          bg = attnColor(t);
          fg = t > 0.55 ? '#fff' : '#000';
        }
        span.dataset.attn = i <= q ? row[i].toFixed(4) : '';
      } else if (i > 0 && loss && Number.isFinite(loss[i - 1])) {
        const t = Math.min(1, loss[i - 1] / LOSS_MAX);
        bg = lossColor(t);
        fg = lossTextColor(t);
        delete span.dataset.attn;
      }
      span.style.backgroundColor = bg;
      span.style.color = fg;
      span.classList.toggle('focused', i === q);
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
    if (!Number.isFinite(p) || !this.tokenEls) return;
    let next = null;
    if (e.key === 'ArrowRight' || e.key === 'ArrowDown') next = Math.min(this.tokenEls.length - 1, p + 1);
    else if (e.key === 'ArrowLeft' || e.key === 'ArrowUp') next = Math.max(0, p - 1);
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = this.tokenEls.length - 1;
    else if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); this.update({ pos: p === this.state.pos ? null : p }); return; }
    if (next === null || !this.tokenEls[next]) return;
    e.preventDefault();
    this.tokenEls[p].tabIndex = -1;
    this.tokenEls[next].tabIndex = 0;
    this.tokenEls[next].focus();
  }

  renderFocus() {
    const a = this.cache;
    const E = this.els;
    if (!a || !a.run) { E.focusInfo.replaceChildren(); return; }
    const q = this.focusPos();
    const c = this.model.config;
    const [l, h] = this.head;
    if (q === null) {
      E.focusInfo.replaceChildren(el('p', { class: 'explain' }, `Hover or focus a token to see where ${headName(l, h)} attends from it and what the model predicts next.`));
      return;
    }
    const V = c.d_vocab;
    const top = (logits) => {
      const row = logits.data.subarray(q * V, (q + 1) * V);
      let mx = -Infinity;
      for (const v of row) mx = Math.max(mx, v);
      let z = 0;
      for (const v of row) z += Math.exp(v - mx);
      const idx = Array.from(row.keys()).sort((x, y) => row[y] - row[x]).slice(0, 5);
      return { idx, p: (i) => Math.exp(row[i] - mx) / z };
    };
    const t = top(a.run.logits);
    const tc = a.ablating ? top(a.clean.logits) : null;
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
    const keys = Array.from({ length: q + 1 }, (_, k) => k).sort((x, y) => a.run.patterns.data[base + y] - a.run.patterns.data[base + x]).slice(0, 3);
    const tokName = (k) => (k < a.bos ? 'BOS' : showTok(a.text.slice(a.begins[k], a.ends[k])));
    E.focusInfo.replaceChildren(
      el('p', {}, el('strong', {}, `Token ${q} `), el('code', {}, tokName(q)), q + 1 < a.T ? ` (next: ` : '', q + 1 < a.T ? el('code', {}, tokName(q + 1)) : '', q + 1 < a.T ? ')' : ''),
      el('p', {}, `${headName(l, h)} attends most to: `, keys.map((k, i) => [i ? ', ' : '', el('code', {}, tokName(k)), ` @${k} (${(a.run.patterns.data[base + k] * 100).toFixed(0)}%)`])),
      el('p', { class: 'muted' }, a.ablating ? 'Top-5 next tokens (with the ablation):' : 'Top-5 next tokens:'),
      list);
  }

  renderSummary(a) {
    const E = this.els;
    if (!a.run) { E.mean.textContent = '–'; E.repeatBox.hidden = true; return; }
    const loss = a.run.loss.data;
    const cl = a.clean.loss.data;
    const mean = (arr, from, to) => { let s = 0; let n = 0; for (let i = from; i < to; i++) if (i > 0 && Number.isFinite(arr[i - 1])) { s += arr[i - 1]; n += 1; } return n ? s / n : NaN; };
    const m = mean(loss, a.bos, a.T);
    const mc = mean(cl, a.bos, a.T);
    E.mean.textContent = `${fmt(m, 3)} nats over ${a.T - a.bos} tokens` + (a.ablating ? ` (clean ${fmt(mc, 3)}, change ${m - mc >= 0 ? '+' : ''}${fmt(m - mc, 3)})` : '');
    this.dataset.meanLoss = fmt(m, 4);
    const r = a.repeat;
    if (r && r.r >= 8) {
      const first = mean(loss, r.a, r.a + r.r);
      const second = mean(loss, r.a + r.d, r.a + r.d + r.r);
      const card = (label, v, cls) => el('div', { class: `ind-card ${cls}` }, el('span', { class: 'muted' }, label), el('strong', {}, `${fmt(v, 3)} nats`));
      E.repeatBox.replaceChildren(
        el('p', {}, `Repeated block of ${r.r} tokens found (the second copy starts ${r.d} tokens after the first). Mean loss per token:`),
        el('div', { class: 'ind-cards' }, card('first occurrence', first, 'first'), card('second occurrence', second, 'second'),
          card('difference (second - first)', second - first, 'diff')));
      E.repeatBox.hidden = false;
      this.dataset.firstLoss = fmt(first, 4);
      this.dataset.secondLoss = fmt(second, 4);
    } else {
      E.repeatBox.replaceChildren(el('p', { class: 'muted' }, 'No repeated block of 8 or more tokens in the text: use "Repeat my text" to compare the loss on the first and second copies.'));
      E.repeatBox.hidden = false;
      delete this.dataset.firstLoss;
      delete this.dataset.secondLoss;
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
      E.grid.replaceChildren();
      for (let l = 0; l < c.n_layers; l++) {
        const row = el('div', { class: 'ind-layer', role: 'group', 'aria-label': `Layer ${l}` }, el('span', { class: 'ind-layer-label' }, `Layer ${l}`));
        for (let h = 0; h < c.n_heads; h++) {
          const name = headName(l, h);
          const canvas = el('canvas', { class: 'ind-thumb', width: 1, height: 1, 'aria-hidden': 'true' });
          const select = el('button', { type: 'button', class: 'ind-head', 'aria-label': `${name}: enlarge its attention pattern`, onclick: () => this.update({ head: name }) }, canvas, el('span', { class: 'ind-head-name' }, name));
          const abl = el('button', { type: 'button', class: 'ind-ablate', 'aria-label': `Ablate ${name}`, onclick: () => this.toggleAblate(name) }, 'Ablate');
          const score = el('span', { class: 'ind-head-score muted' });
          E.thumbs.push({ name, canvas, select, abl, score, l, h });
          row.append(el('div', { class: 'ind-head-cell', dataset: { head: name } }, select, abl, score));
        }
        E.grid.append(row);
      }
      if (c.n_layers === 0) E.grid.append(el('p', { class: 'muted' }, 'This model has no attention layers: only the direct path from embedding to unembedding (a bigram model).'));
    }
    const T = a.T;
    const mask = (r, col) => col > r;
    for (const t of E.thumbs) {
      const isSel = this.head[0] === t.l && this.head[1] === t.h;
      t.select.setAttribute('aria-pressed', String(isSel));
      t.select.classList.toggle('selected', isSel);
      const isAbl = ablated.has(t.name);
      t.abl.setAttribute('aria-pressed', String(isAbl));
      t.abl.textContent = isAbl ? 'Ablated' : 'Ablate';
      t.abl.closest('.ind-head-cell').classList.toggle('ablated', isAbl);
      const s = a.scores.find((x) => x.name === t.name);
      t.score.textContent = s ? `prefix ${fmt(s.prefix)}` : '';
      if (!a.run) continue;
      if (t.canvas.width !== T) { t.canvas.width = T; t.canvas.height = T; }
      heatmap(t.canvas, { data: a.run.patterns.data, offset: (t.l * c.n_heads + t.h) * T * T, rows: T, cols: T }, { min: 0, max: 1, mask, palette: attnPalette });
    }
  }

  renderBig(a) {
    const E = this.els;
    const [l, h] = this.head;
    const c = this.model.config;
    const name = headName(l, h);
    if (!a.run || !c.n_layers) { E.bigCaption.textContent = ''; return; }
    const T = a.T;
    const labels = T <= 40 ? Array.from({ length: T }, (_, k) => (k < a.bos ? 'BOS' : showTok(a.text.slice(a.begins[k], a.ends[k])))) : null;
    const cell = Math.max(1, Math.floor(Math.min(520, 14 * Math.max(T, 1)) / Math.max(T, 1)));
    this.bigGeom = heatmap(E.big, { data: a.run.patterns.data, offset: (l * c.n_heads + h) * T * T, rows: T, cols: T },
      { min: 0, max: 1, mask: (r, col) => col > r, palette: attnPalette, cell, labelsX: labels, labelsY: labels });
    const ablated = (this.state.ablate || []).includes(name);
    E.big.setAttribute('aria-label', `Attention pattern of ${name} over ${T} tokens${ablated ? ' (this head is ablated: its pattern is computed but its output is zeroed)' : ''}`);
    const s = a.scores.find((x) => x.name === name);
    E.bigCaption.textContent = `${name}${ablated ? ' (ablated)' : ''}: rows = query (attending) token, columns = key token. This text: prefix matching ${fmt(s?.prefix)}, previous token ${fmt(s?.previous)}` +
      (a.repeat && a.repeat.r >= 8 ? `, induction stripe ${fmt(s?.stripe)}` : '') + '.';
    this.markBigRow();
  }

  markBigRow() {
    // Redraw is cheap enough only on render; the hovered row is shown in the caption instead.
    const q = this.focusPos();
    this.els.big.dataset.row = q === null ? '' : String(q);
  }

  bigHover(e) {
    const g = this.bigGeom;
    if (!g) return;
    const r = this.els.big.getBoundingClientRect();
    const scale = this.els.big.width / r.width;
    const row = Math.floor(((e.clientY - r.top) * scale - g.y0) / g.cell);
    if (row >= 0 && row < g.rows) this.setHover(row);
  }

  renderScores() {
    const E = this.els;
    const a = this.cache;
    if (!a || !this.model) return;
    const rs = this.randomScores.get(this.model);
    const hasRepeat = a.repeat && a.repeat.r >= 8;
    const head = el('tr', {}, el('th', { scope: 'col' }, 'Head'),
      el('th', { scope: 'col' }, 'Prefix matching', el('br'), el('small', {}, 'this text')),
      el('th', { scope: 'col' }, 'Previous token', el('br'), el('small', {}, 'this text')),
      hasRepeat ? el('th', { scope: 'col' }, 'Induction stripe', el('br'), el('small', {}, 'this text, repeated block')) : null,
      el('th', { scope: 'col' }, 'Prefix matching', el('br'), el('small', {}, 'random tokens')),
      el('th', { scope: 'col' }, 'Copying', el('br'), el('small', {}, 'random tokens, OV')));
    const c = this.model.config;
    const rows = a.scores.map((s) => {
      const i = s.layer * c.n_heads + s.head;
      const rv = (k) => (rs && rs[k] ? fmt(rs[k].data[i]) : rs && rs.error ? 'error' : '…');
      return el('tr', { class: this.head[0] === s.layer && this.head[1] === s.head ? 'selected' : null },
        el('th', { scope: 'row' }, s.name), el('td', {}, fmt(s.prefix)), el('td', {}, fmt(s.previous)),
        hasRepeat ? el('td', { dataset: { stripe: fmt(s.stripe, 4) } }, fmt(s.stripe)) : null,
        el('td', {}, rv('prefix_matching')), el('td', {}, rv('copying')));
    });
    E.scores.replaceChildren(el('thead', {}, head), el('tbody', {}, rows));
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
    if (note) queueMicrotask(() => { this.els.note.textContent = note + ' ' + this.els.note.textContent; this.els.note.hidden = false; });
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
const BLUES = [[247, 251, 255], [222, 235, 247], [198, 219, 239], [158, 202, 225], [107, 174, 214], [66, 146, 198], [33, 113, 181], [8, 81, 156], [8, 48, 107]];
function attnPalette(t) {
  if (!Number.isFinite(t)) return [160, 160, 160];
  t = Math.min(1, Math.max(0, t));
  const x = t * (BLUES.length - 1);
  const i = Math.min(BLUES.length - 2, Math.floor(x));
  const f = x - i;
  const a = BLUES[i];
  const b = BLUES[i + 1];
  return [a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f];
}
function attnColor(t) {
  const [r, g, b] = attnPalette(t);
  return `rgb(${Math.round(r)}, ${Math.round(g)}, ${Math.round(b)})`;
}

if (!customElements.get('cs-induction')) customElements.define('cs-induction', CsInduction);

// Preload the module so that the first model arrives sooner.
getModule().catch(() => {});
