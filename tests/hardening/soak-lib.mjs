// A long session in the page: seeded random interactions with whatever the shown view offers
// (every button but downloads and training starts, every select, checkbox, range and text box,
// hovering tokens and figures), switching views, models and snapshots, across every shipped model.
// Checks after each interaction that the page settled, showed no uncaught error and no message
// with internals; measures the WASM heap (the module's linear memory and what malloc holds) and the
// JS heap after a garbage collection, once after a warm-up pass over every view, model and
// snapshot, and again at the end.
//   node tests/hardening/soak.mjs [--interactions N] [--seed S]      (default 10,000, seed 1)
//   node --test tests/browser/soak.test.mjs                          (a seeded sample, npm test)
import { rng } from '../rng.mjs';
import { VIEW_SETTLED } from '../browser/settled.mjs';

// Texts a person might type or paste, the edge cases among them (see tests/browser/edges.test.mjs).
export const TEXTS = ['', 'a', 'Hello hello', 'the cat sat on the mat. the cat sat on the mat.',
  'A B B <MID>', 'When Mary and John went to the store, John gave a drink to',
  '😀 emoji 👍🏽 and a family 👨‍👩‍👧', 'combining: e\u0301 a\u0308 n\u0303', 'right to left: שלום עולם مرحبا',
  'x'.repeat(300), 'abcdefghij'.repeat(60)];

// Messages that show internals rather than a sentence a user understands.
export const INTERNALS = /TypeError|ReferenceError|RangeError|undefined|\[object |is not a function|Cannot read propert|\bNaN\b|std::|bad_alloc|json\.exception|RuntimeError|at [\w.]+ \(|wasm-function|Aborted\(/;

// Buttons never pressed: downloads (they leave the page's state alone and fill the disk) and
// training starts (a separate test covers training; here a run would dominate the time).
const SKIP_BUTTON = /PNG|CSV|JSON|Download|Start|Resume|Train|Copy/i;

/** Waits until the shown view rendered the store's latest version (false after `timeout` ms). */
export async function settled(page, timeout = 15_000) {
  try {
    await page.waitForFunction(VIEW_SETTLED, 0, { timeout, polling: 50 });
    return true;
  } catch {
    return false;
  }
}

/** Every message on the page a user reads: the app's error and status lines and views' boxes. */
export function messages(page) {
  return page.evaluate(() => [...document.querySelectorAll('#app-error, #app-status, .cs-view-error, .cs-view-status, [role="alert"]')]
    .map((e) => e.textContent.trim()).filter(Boolean));
}

/** {wasmHeap, wasmAllocated, jsHeap} in bytes, after a garbage collection. */
export async function heaps(page, cdp) {
  await cdp.send('HeapProfiler.collectGarbage');
  const js = await cdp.send('Runtime.getHeapUsage');
  const wasm = await page.evaluate(async () => (await (await import('/store.js')).getModule()).memory());
  return { wasmHeap: wasm.heapSize, wasmAllocated: wasm.allocated, jsHeap: js.usedSize };
}

/** The interactions the page offers now: [{name, run(page)}]. */
export async function actions(page, r) {
  const out = [];
  const state = await page.evaluate(() => window.__cs.store.state);
  for (const v of ['induction', 'ioi', 'circuits', 'training', 'report']) {
    if (v !== state.view) out.push({ kind: 'view', name: `view ${v}`, run: (p) => p.click(`#tab-${v}`, { timeout: 2000 }) });
  }
  const controls = await page.evaluate((skip) => {
    for (const e of document.querySelectorAll('[data-soak]')) delete e.dataset.soak;
    const view = document.querySelector('#view-host > .view:not([hidden])');
    if (!view) return [];
    const shown = (e) => { const b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0 && !e.closest('[hidden]'); };
    const list = [];
    const mark = (e, kind, extra = {}) => {
      e.dataset.soak = String(list.length);
      list.push({ id: list.length, kind, ...extra });
    };
    for (const e of [document.querySelector('#model-switch'), document.querySelector('#snapshot-switch'), ...view.querySelectorAll('select')]) {
      if (e && shown(e) && !e.disabled && e.options.length > 1) mark(e, 'select', { values: [...e.options].map((o) => o.value), label: e.id || e.name });
    }
    for (const e of view.querySelectorAll('button')) {
      if (shown(e) && !e.disabled && !new RegExp(skip).test(e.textContent + ' ' + (e.getAttribute('aria-label') ?? ''))) mark(e, 'button', { label: e.textContent.trim().slice(0, 30) });
    }
    for (const e of view.querySelectorAll('input[type="checkbox"], input[type="radio"]')) if (shown(e) && !e.disabled) mark(e, 'check', { label: e.id });
    for (const e of view.querySelectorAll('input[type="range"]')) if (shown(e) && !e.disabled) mark(e, 'range', { min: +e.min || 0, max: +e.max || 100, label: e.id });
    for (const e of view.querySelectorAll('textarea, input[type="text"], input:not([type])')) if (shown(e) && !e.disabled && !e.readOnly) mark(e, 'text', { label: e.id || e.tagName });
    // A thumbnail sheet's slots are what the pointer hovers; the sheet's canvas lets it through.
    const hoverable = [...view.querySelectorAll('canvas:not(.cs-sheet), .cs-sheet-slot, [data-pos], .tok, svg')].filter(shown);
    for (const e of hoverable.slice(0, 40)) mark(e, 'hover', { label: e.tagName.toLowerCase() });
    return list;
  }, SKIP_BUTTON.source);
  for (const c of controls) {
    const sel = `[data-soak="${c.id}"]`;
    if (c.kind === 'select') {
      const value = r.pick(c.values);
      out.push({ kind: 'select', name: `select ${c.label}=${value}`, run: (p) => p.selectOption(sel, value, { timeout: 2000 }) });
    } else if (c.kind === 'button') {
      out.push({ kind: 'button', name: `press "${c.label}"`, run: (p) => p.click(sel, { timeout: 2000 }) });
    } else if (c.kind === 'check') {
      out.push({ kind: 'check', name: `toggle ${c.label}`, run: (p) => p.click(sel, { timeout: 2000 }) });
    } else if (c.kind === 'range') {
      const v = c.min + r.int(c.max - c.min + 1);
      out.push({ kind: 'range', name: `range ${c.label}=${v}`, run: (p) => p.$eval(sel, (e, x) => { e.value = String(x); e.dispatchEvent(new Event('input', { bubbles: true })); e.dispatchEvent(new Event('change', { bubbles: true })); }, v) });
    } else if (c.kind === 'text') {
      const t = r.pick(TEXTS);
      out.push({ kind: 'text', name: `type into ${c.label}: ${JSON.stringify(t.slice(0, 20))}`, run: async (p) => { await p.fill(sel, t, { timeout: 2000 }); await p.press(sel, 'Enter', { timeout: 2000 }).catch(() => {}); } });
    } else if (c.kind === 'hover') {
      const fx = r.next(), fy = r.next();
      out.push({
        kind: 'hover', name: `hover ${c.label}`,
        run: async (p) => {
          const b = await p.$eval(sel, (e) => { const x = e.getBoundingClientRect(); return { x: x.left, y: x.top, w: x.width, h: x.height }; }).catch(() => null);
          if (b) await p.mouse.move(b.x + fx * b.w, b.y + fy * b.h);
        },
      });
    }
  }
  return out;
}

/** One of `list`: a kind of interaction first (each kind equally likely), then one of that kind. */
export function pickAction(list, r) {
  const kinds = [...new Set(list.map((a) => a.kind))];
  const kind = r.pick(kinds);
  return r.pick(list.filter((a) => a.kind === kind));
}

/**
 * Runs `count` seeded interactions in `page` (opened on the app), calling onStep(step, name) after
 * each settles. Returns {interactions, unsettled: [names], slowest: [{name, ms}] (the five
 * slowest interactions, acting and settling)}.
 */
export async function soak(page, { count, seed = 1, onStep = async () => {} }) {
  const r = rng(seed);
  const unsettled = [];
  const times = [];
  for (let i = 0; i < count; i++) {
    const list = await actions(page, r);
    const a = pickAction(list, r);
    const t0 = Date.now();
    try {
      await a.run(page);
    } catch (e) {
      // A control that went away between listing and acting (a render replaced it) is not a fault.
      if (!/detached|not attached|Timeout|not visible|outside of the viewport|intercepts pointer/i.test(e.message)) throw e;
    }
    if (!(await settled(page, 15_000))) unsettled.push(`${i}: ${a.name}`);
    times.push({ name: a.name, ms: Date.now() - t0 });
    await onStep(i, a.name);
  }
  times.sort((x, y) => y.ms - x.ms);
  return { interactions: count, unsettled, slowest: times.slice(0, 5) };
}

/**
 * Opens every view with every model it offers and every snapshot of that model once, and the IOI
 * view of each model also with a mean-ablated cut: the core then makes the model's ablation
 * reference (every head's output over 256 of the task's sequences, about 20 MB for
 * ioi-templates-2l), which it keeps for the model's life. Without that visit, whether a soak had
 * picked a mean or resample ablation on that model would decide whether 20 MB more were kept.
 */
// Opens `state` (a view, a model and what to ablate or cut) under mean ablation, waits for it,
// then sets `reset` with zero ablation and waits again: the core has made that model's mean
// reference by then.
async function withMeanAblation(page, state, reset) {
  await page.evaluate((state) => {
    window.__cs.store.dispatch({ type: 'replace', state: { ...window.__cs.store.state, snapshot: null, abl: 'mean', ...state } });
  }, state);
  await settled(page, 30_000);
  await page.evaluate((reset) => window.__cs.store.dispatch({ type: 'set', values: { abl: 'zero', ...reset } }), reset);
  await settled(page, 30_000);
}

export async function warmUp(page) {
  const index = await page.evaluate(async () => (await import('/store.js')).getModelIndex());
  const manifest = await page.evaluate(async () => (await fetch('/models/manifest.json')).json()).catch(() => ({}));
  let visits = 0;
  for (const m of index) {
    for (const view of m.views) {
      const snaps = [null, ...(manifest.snapshots?.[m.name] ?? [])];
      for (const snapshot of snaps) {
        await page.evaluate(([view, model, snapshot]) => {
          window.__cs.store.dispatch({ type: 'replace', state: { ...window.__cs.store.state, view, model, snapshot } });
        }, [view, m.name, snapshot]);
        await settled(page, 30_000);
        visits++;
      }
      // The Induction view's mean ablation keeps one model's repeated-token reference at a time
      // (the last asked for): bpe-2l's, the largest a shipped model makes (32 MB), is made here,
      // so the soak's choices replace it with one no larger.
      if (view === 'induction' && m.name === 'bpe-2l') {
        await withMeanAblation(page, { view, model: m.name, ablate: ['L1H1'] }, { ablate: [] });
        visits++;
      }
      if (view === 'ioi') {
        await withMeanAblation(page, { view, model: m.name, cut: ['*>*.q'] }, { cut: [] });
        visits++;
      }
    }
  }
  return visits;
}
