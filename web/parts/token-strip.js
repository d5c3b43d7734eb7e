// A strip of tokens: one <span class="tok"> per token (a <br> after a newline), coloured by a
// value, with keyboard focus (one token holds tabindex 0; arrows, Home and End move it; Enter or
// Space picks), hover and click. Built for text redrawn on every keystroke: the spans are kept
// from one call to the next and each is written to only where what it shows changed.
//
//   const strip = tokenStrip({label, valueName: 'loss', shadeName: 'attn', onHover(pos | null), onPick(pos)});
//   setTokens(strip, count, fill, describe, start = 0)   (start: the token Tab reaches first)
//       fill(i, t) sets t.text (shown), t.cls (class), t.value (string | null: data-<valueName>),
//       t.key (when it changes, describe(i) -> {title, label} is asked for the span's tooltip and
//       aria-label; label null: none) and t.br (a line break after the token); t is reused.
//   colourTokens(strip, colour)
//       colour(i, c) sets c.bg and c.fg (CSS colours, '' for none), c.shade (string | null:
//       data-<shadeName>) and c.focused (outlined); c is reused.
//   setLead(strip, text)   greyed-out text before the tokens ('' for none), e.g. what was cut off
//   tokenSpans(strip)      the spans, index = position
// Each span has data-pos; onHover/onPick get that position. No knowledge of the store.
import { el } from './dom.js';

const posOf = (e) => { const p = e.target?.dataset?.pos; return p === undefined ? null : Number(p); };

/** @param {any} options */
export function tokenStrip({ label, className = '', valueName = 'value', shadeName = 'shade', onHover = () => {}, onPick = () => {} }) {
  const strip = el('div', {
    class: `tokens ${className}`.trim(), role: 'group', 'aria-label': label,
    onmouseover: (e) => { const p = posOf(e); if (p !== null) onHover(p); },
    onmouseleave: () => onHover(null),
    onfocusin: (e) => { const p = posOf(e); if (p !== null) onHover(p); },
    onfocusout: () => onHover(null),
    onclick: (e) => { const p = posOf(e); if (p !== null) onPick(p); },
    onkeydown: (e) => keydown(strip, e, onPick),
  });
  strip.csStrip = { recs: [], roving: null, lead: null, valueName, shadeName, t: {}, c: {} };
  return strip;
}

export const tokenSpans = (strip) => strip.csStrip.recs.map((r) => r.span);

export function setLead(strip, text) {
  const s = strip.csStrip;
  if (!s.lead) {
    if (!text) return;
    s.lead = el('span', { class: 'skipped', title: 'Outside the model context' });
    strip.prepend(s.lead);
  }
  if (s.lead.textContent !== text) s.lead.textContent = text;
  if (s.lead.hidden !== !text) s.lead.hidden = !text;
}

export function setTokens(strip, count, fill, describe, start = 0) {
  const s = strip.csStrip;
  const { recs, t } = s;
  while (recs.length > count) {
    const r = recs.pop();
    r.span.remove();
    r.br?.remove();
  }
  while (recs.length < count) {
    const span = document.createElement('span');
    span.dataset.pos = String(recs.length);
    strip.append(span);
    recs.push({ span, br: null, text: null, cls: null, tab: null, value: null, key: null, bg: '', fg: '', shade: null, focused: false });
  }
  if (s.roving === null || s.roving >= count) s.roving = start < count ? start : 0;
  for (let i = 0; i < count; i++) {
    const r = recs[i];
    const span = r.span;
    t.text = ''; t.cls = 'tok'; t.value = null; t.key = ''; t.br = false;
    fill(i, t);
    if (r.text !== t.text) { span.textContent = t.text; r.text = t.text; }
    if (r.cls !== t.cls) { span.className = t.cls; r.cls = t.cls; r.focused = false; }
    const tab = i === s.roving ? 0 : -1;
    if (r.tab !== tab) { span.tabIndex = tab; r.tab = tab; }
    if (r.value !== t.value) {
      if (t.value === null) delete span.dataset[s.valueName]; else span.dataset[s.valueName] = t.value;
      r.value = t.value;
    }
    if (r.key !== t.key) {
      r.key = t.key;
      const d = describe(i);
      span.title = d.title ?? '';
      if (d.label) span.setAttribute('aria-label', d.label); else span.removeAttribute('aria-label');
    }
    if (t.br && !r.br) { r.br = document.createElement('br'); span.after(r.br); }
    else if (!t.br && r.br) { r.br.remove(); r.br = null; }
  }
}

export function colourTokens(strip, colour) {
  const s = strip.csStrip;
  const c = s.c;
  for (let i = 0; i < s.recs.length; i++) {
    const r = s.recs[i];
    c.bg = ''; c.fg = ''; c.shade = null; c.focused = false;
    colour(i, c);
    const span = r.span;
    if (r.bg !== c.bg) { span.style.backgroundColor = c.bg; r.bg = c.bg; }
    if (r.fg !== c.fg) { span.style.color = c.fg; r.fg = c.fg; }
    if (r.shade !== c.shade) {
      if (c.shade === null) delete span.dataset[s.shadeName]; else span.dataset[s.shadeName] = c.shade;
      r.shade = c.shade;
    }
    if (r.focused !== c.focused) { span.classList.toggle('focused', c.focused); r.focused = c.focused; }
  }
}

function keydown(strip, e, onPick) {
  const s = strip.csStrip;
  const p = posOf(e);
  const recs = s.recs;
  if (p === null || !recs[p]) return;
  let next = null;
  if (e.key === 'ArrowRight' || e.key === 'ArrowDown') next = Math.min(recs.length - 1, p + 1);
  else if (e.key === 'ArrowLeft' || e.key === 'ArrowUp') next = Math.max(0, p - 1);
  else if (e.key === 'Home') next = 0;
  else if (e.key === 'End') next = recs.length - 1;
  else if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); onPick(p); return; }
  if (next === null) return;
  e.preventDefault();
  recs[p].span.tabIndex = -1;
  recs[p].tab = -1;
  recs[next].span.tabIndex = 0;
  recs[next].tab = 0;
  s.roving = next;
  recs[next].span.focus();
}
