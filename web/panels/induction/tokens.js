// The typed text as tokens coloured by the model's loss on each (or, with a token hovered,
// focused or pinned, by where the chosen head attends from it), with the mean loss, the first and
// second copy of a repeated block side by side, and the hovered token's details: where the head
// attends most and the core's top-5 next tokens. Redrawn on every keystroke: update() patches the
// kept token spans (only the ones whose text, class, loss or colour changed) and the numbers.
import { el } from '../../parts/dom.js';
import { lossColor, lossTextColor } from '../../parts/colour.js';
import { tokenStrip, setTokens, colourTokens, setLead } from '../../parts/token-strip.js';
import { topAt, topkList } from '../../parts/topk.js';
import { attnColor } from '../../parts/attention-pattern.js';
import { headName } from '../../store.js';
import { definePanel } from '../panel.js';
import { analyse, chosenHead, showTok, tokenText, repeatOf, cleanProb } from './analysis.js';
import { fmt, tokenTitle, tokenIdBytes } from '../../parts/format.js';

/** The event a token hover sends (detail: {pos}, null when it ends); the view passes it on. */
export const HOVER = 'cs-token-hover';

const LOSS_MAX = 5;           // nats at the darkest loss colour
// Token colours for losses 0..LOSS_MAX, computed once at 1024 levels (finer than the 8-bit
// colours they round to) instead of one colour string per token per keystroke.
const LEVELS = 1024;
const LOSS_BG = Array.from({ length: LEVELS }, (_, k) => lossColor(k / (LEVELS - 1)));
const LOSS_FG = Array.from({ length: LEVELS }, (_, k) => lossTextColor(k / (LEVELS - 1)));
const lossLevel = (l) => Math.round(Math.max(0, Math.min(1, l / LOSS_MAX)) * (LEVELS - 1));

const memo = new WeakMap();   // model -> the last data

export default definePanel({
  name: 'induction-tokens',
  title: 'Per-token loss',
  view: 'induction',

  query({ model, state }) {
    const a = analyse(model, state);
    const head = chosenHead(model, state);
    const pos = state.pos ?? null;
    const last = memo.get(model);
    if (last && last.a === a && last.pos === pos && String(last.head) === String(head)) return last;
    const data = { a, head, pos };
    memo.set(model, data);
    return data;
  },

  render(data, ctx) {
    const t = { data, ctx, hover: null, shown: {}, legendMode: null, repeatMode: null };
    t.strip = tokenStrip({
      label: 'Tokens coloured by loss; focus one to see attention and predictions', className: 'ind-tokens',
      valueName: 'loss', shadeName: 'attn',
      onHover: (p) => { hoverToken(node, p); node.dispatchEvent(new CustomEvent(HOVER, { bubbles: true, detail: { pos: p } })); },
      onPick: (p) => t.ctx.dispatch({ type: 'set', values: { pos: p === t.ctx.state.pos ? null : p } }),
    });
    t.legend = el('div', { class: 'legend ind-legend', 'aria-hidden': 'true' });
    t.mean = el('output', { class: 'ind-mean' }, '–');
    t.repeatBox = el('div', { class: 'ind-repeat', hidden: true });
    t.focus = el('div', { class: 'ind-focus', 'aria-live': 'polite' });
    const node = el('div', { class: 'ind-loss' },
      el('p', { class: 'explain' }, 'Each token is coloured by the loss (nats) of predicting it from the text before it. Hover, focus (Tab, then arrow keys) or click a token to pin it: the tokens are then coloured by where the selected head attends from it.'),
      t.legend,
      el('p', { class: 'mean' }, 'Mean loss: ', t.mean),
      t.repeatBox,
      el('div', { class: 'ind-token-row' }, t.strip, t.focus));
    node.csTokens = t;
    update(node, data, ctx);
    return node;
  },

  update,
});

// The text a token stands for: its span of the typed text, or, for a byte-level token that holds
// only some of a character's bytes (its span is shared with a neighbour's), the tokenizer's own
// drawing of it ("<0xE6>").
function shownText(a, i) {
  const partial = (i > a.bos && a.begins[i] < a.ends[i - 1]) || (i + 1 < a.T && a.ends[i] > a.begins[i + 1]);
  return partial ? String(a.vocab[a.ids[i]] ?? `#${a.ids[i]}`) : a.text.slice(a.begins[i], a.ends[i]);
}

function update(node, data, ctx) {
  const t = node.csTokens;
  t.data = data;
  t.ctx = ctx;
  const { a } = data;
  setLead(t.strip, a.truncated ? a.text.slice(0, a.begins[a.bos] ?? 0) : '');
  const loss = a.run ? a.run.loss.data : null;
  const cleanLoss = a.ablating && a.clean ? a.clean.loss.data : null;
  setTokens(t.strip, a.T, (i, tok) => {
    if (i < a.bos) { tok.text = 'BOS'; tok.cls = 'tok bos'; tok.key = 'bos'; return; }
    const s = shownText(a, i);
    const unk = a.ids[i] === a.unk;
    const newline = s.includes('\n');   // a character model's newline, or a sub-word token holding one
    tok.text = showTok(s);
    tok.cls = unk ? (newline ? 'tok unk newline' : 'tok unk') : newline ? 'tok newline' : 'tok';
    const l = loss && i > 0 ? loss[i - 1] : NaN;
    tok.value = Number.isFinite(l) ? l.toFixed(4) : '';
    tok.key = `${s}\u0000${unk}\u0000${tok.value}\u0000${cleanLoss ? fmt(cleanLoss[i - 1], 3) : ''}`;
    tok.br = newline;
  }, (i) => {
    if (i < a.bos) return { title: '<BOS>: the start token (many heads rest their attention here)', label: null };
    const s = shownText(a, i);
    const bytes = a.bytes.bytes.subarray(a.bytes.offsets[i], a.bytes.offsets[i + 1]);
    // A token typed after rows the core left out while typing (run.pending_from) has its loss once typing pauses.
    const pending = i > 0 && a.run && i - 1 >= a.run.pending_from;
    const lossText = pending ? 'computed when typing pauses' : `${fmt(loss && i > 0 ? loss[i - 1] : NaN, 3)} nats`;
    const label = `${tokenTitle(s)}${a.ids[i] === a.unk ? ' (read as <UNK>)' : ''} (${tokenIdBytes(a.ids[i], bytes)}), position ${i}: loss ${lossText}` +
      (cleanLoss && !pending ? ` (without ablation ${fmt(cleanLoss[i - 1], 3)})` : '');
    return { title: label, label };
  }, a.bos);
  summary(node, t, a);
  colour(t);
  focusDetails(t);
  return true;
}

/** Shows token `pos` (null: none) as hovered: colours and details; the view calls it for hovers elsewhere. */
export function hoverToken(node, pos) {
  const t = node?.csTokens;
  if (!t || t.hover === pos) return;
  t.hover = pos;
  colour(t);
  focusDetails(t);
}

function focusPos(t) {
  const p = t.hover ?? t.data.pos;
  return p !== null && p !== undefined && p < t.data.a.T ? p : null;
}

// Loss colours, or (a token focused) the chosen head's attention from it.
function colour(t) {
  const { a, head } = t.data;
  const q = focusPos(t);
  const c = a.config;
  const loss = a.run ? a.run.loss.data : null;
  let row = null;
  if (q !== null && a.run && head) {
    const base = ((head[0] * c.n_heads + head[1]) * a.T + q) * a.T;
    row = a.run.patterns.data.subarray(base, base + a.T);
  }
  legend(t, row ? 'attention' : 'loss');
  colourTokens(t.strip, (i, o) => {
    if (row) {
      const w = i <= q ? row[i] : 0;
      if (i <= q && w > 0.005) {
        const s = Math.sqrt(w);
        o.bg = attnColor(s);
        o.fg = s > 0.55 ? '#fff' : '#000';
      }
      o.shade = i <= q ? row[i].toFixed(4) : '';
    } else if (i > 0 && loss && Number.isFinite(loss[i - 1])) {
      const k = lossLevel(loss[i - 1]);
      o.bg = LOSS_BG[k];
      o.fg = LOSS_FG[k];
    }
    o.focused = i === q;
  });
}

function legend(t, mode) {
  if (t.legendMode === mode) return;
  t.legendMode = mode;
  const stops = mode === 'loss' ? [0, 1, 2, 3, 4, 5] : [0, 0.2, 0.4, 0.6, 0.8, 1];
  t.legend.replaceChildren(
    el('span', { class: 'legend-unit' }, mode === 'loss' ? 'loss (nats):' : 'attention weight:'),
    ...stops.map((v) => {
      const sw = el('span', { class: 'swatch' });
      sw.style.backgroundColor = mode === 'loss' ? lossColor(v / LOSS_MAX) : attnColor(v);
      return el('span', { class: 'legend-item' }, sw, mode === 'loss' && v === 5 ? '≥ 5' : String(v));
    }));
}

// The focused token's details: drawn on hover, for that one position.
function focusDetails(t) {
  const { a, head } = t.data;
  const q = a.run ? focusPos(t) : null;
  const name = head ? headName(...head) : null;
  const key = !a.run ? 'none' : q === null ? `hint|${name}` : null;
  const prev = t.shown.focus;
  if (key !== null ? prev === key : prev && prev.a === a && prev.q === q && prev.name === name) return;
  t.shown.focus = key ?? { a, q, name };
  if (!a.run) { t.focus.replaceChildren(); return; }
  if (q === null) {
    t.focus.replaceChildren(el('p', { class: 'explain' }, name ? `Hover or focus a token to see where ${name} attends from it and what the model predicts next.` : 'Hover or focus a token to see what the model predicts next.'));
    return;
  }
  const c = a.config;
  const P = a.run.patterns?.data;
  const base = head ? ((head[0] * c.n_heads + head[1]) * a.T + q) * a.T : 0;
  const keys = head ? topKeys(a.run, (head[0] * c.n_heads + head[1]) * a.T + q) : [];
  const k = a.run.top_ids.shape[1];
  const top = topAt(a.run, q, k);
  const next = q + 1 < a.T;
  t.focus.replaceChildren(
    el('p', {}, el('strong', {}, `Token ${q} `), el('code', {}, tokenText(a, q)), next ? ' (next: ' : '', next ? el('code', {}, tokenText(a, q + 1)) : '', next ? ')' : ''),
    name ? el('p', {}, `${name} attends most to: `, keys.map((k, i) => [i ? ', ' : '', el('code', {}, tokenText(a, k)), ` @${k} (${(P[base + k] * 100).toFixed(0)}%)`])) : '',
    el('p', { class: 'muted' }, a.ablating ? `Top-${k} next tokens (with the ablation):` : `Top-${k} next tokens:`),
    // Left out while the text is typed (analysis.js): the view computes them once typing pauses.
    q >= a.run.pending_from ? el('p', { class: 'muted ind-top-pending' }, 'computed when typing pauses…') : topkList({
      ...top, className: 'ind-top', actual: next ? a.ids[q + 1] : null,
      label: (id) => showTok(a.vocab[id] ?? `#${id}`), title: (id) => tokenTitle(a.vocab[id] ?? `#${id}`),
      compare: a.ablating ? (id) => cleanProb(a, q, id) : null, compareLabel: 'clean',
    }));
}

/** The keys (positions) row `row` of the patterns attends to most, the core's ranking (run()'s top_keys), -1 left out. */
function topKeys(run, row) {
  const k = run.top_keys.shape[3];
  return Array.from(run.top_keys.data.subarray(row * k, (row + 1) * k)).filter((x) => x >= 0);
}

// The mean loss, and the first and second copy of a repeated block side by side (built once per
// mode; later updates only change the numbers).
function summary(node, t, a) {
  const set = (k, n, text) => { if (t.shown[k] !== text) { t.shown[k] = text; n.textContent = text; } };
  const data = (k, v) => { if (v === undefined) delete node.dataset[k]; else if (node.dataset[k] !== v) node.dataset[k] = v; };
  if (!a.run) {
    set('mean', t.mean, '–');
    t.repeatBox.hidden = true;
    t.repeatMode = null;
    return;
  }
  const m = a.run.mean_loss;        // the core's means (run())
  const mc = a.clean.mean_loss;
  // Tokens typed after rows the core left out while typing have their losses once typing pauses.
  const pending = Math.max(0, a.T - 1 - a.run.pending_from);
  set('mean', t.mean, `${fmt(m, 3)} nats over ${a.T - a.bos - pending} tokens` + (a.ablating ? ` (clean ${fmt(mc, 3)}, change ${m - mc >= 0 ? '+' : ''}${fmt(m - mc, 3)})` : '') +
    (pending ? `; the last ${pending} when typing pauses…` : ''));
  data('meanLoss', fmt(m, 4));
  const r = repeatOf(a);
  const mode = r ? 'cards' : 'none';
  if (t.repeatMode !== mode) {
    t.repeatMode = mode;
    t.shown.repeatText = t.shown.first = t.shown.second = t.shown.diff = null;
    if (r) {
      const card = (label, cls) => { const v = el('strong', {}); return [v, el('div', { class: `ind-card ${cls}` }, el('span', { class: 'muted' }, label), v)]; };
      const [first, cFirst] = card('first occurrence', 'first');
      const [second, cSecond] = card('second occurrence', 'second');
      const [diff, cDiff] = card('difference (second - first)', 'diff');
      t.repeatText = el('p', {});
      t.cards = { first, second, diff };
      t.repeatBox.replaceChildren(t.repeatText, el('div', { class: 'ind-cards' }, cFirst, cSecond, cDiff));
    } else {
      t.repeatBox.replaceChildren(el('p', { class: 'muted' }, 'No repeated block of 8 or more tokens in the text: use "Repeat my text" to compare the loss on the first and second copies.'));
    }
  }
  if (t.repeatBox.hidden) t.repeatBox.hidden = false;
  if (!r) { data('firstLoss', undefined); data('secondLoss', undefined); return; }
  const first = a.run.first_copy_loss;
  const second = a.run.second_copy_loss;
  set('repeatText', t.repeatText, `${r.held ? 'The repeated block holding the picked token' : 'The longest repeated block'}: ${r.r} tokens (the second copy starts ${r.d} tokens after the first). Mean loss per token:`);
  // A copy that reaches past the rows left out while typing: its mean so far (the core skips NaN).
  const sofar = (end) => (end - 1 > a.run.pending_from ? ' so far…' : '');
  set('first', t.cards.first, `${fmt(first, 3)} nats${sofar(r.a + r.r)}`);
  set('second', t.cards.second, `${fmt(second, 3)} nats${sofar(r.a + r.d + r.r)}`);
  set('diff', t.cards.diff, `${fmt(second - first, 3)} nats${sofar(r.a + r.d + r.r)}`);
  data('firstLoss', fmt(first, 4));
  data('secondLoss', fmt(second, 4));
}
