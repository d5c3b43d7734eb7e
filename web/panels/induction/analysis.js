// The induction view's one core call, shared by its panels (not a panel itself): analyse(model,
// state) is model.analyseText(text, intervention, {at, topk, into}) on the state's text (the
// core fits it to the context, runs it, and while ablating runs it clean too, for comparison)
// and returns the same object for as long as the state's text, intervention and picked token
// stay the same, so four panels still make one call per change. The passes write into buffers
// kept per model (4 MB of patterns per keystroke otherwise), so an analysis is only valid until
// the next one of the same model.
//
// Also here: the model's head scores on repeated random tokens (headScores(), about 0.3 s, computed
// once per model off the first paint) and the head a state shows (chosenHead: the state's, else
// the core's default head, model.defaultHead(), the strongest induction head by those scores).
import { headName, parseHead, interventionOf, shownHead } from '../../store.js';
import { fmt, showToken, readsText } from '../../parts/format.js';
import { tokenSample } from '../sample.js';

export const SAMPLE = 'Alice was beginning to get very tired of sitting by her sister on the bank, and of having nothing to do. ' +
  'Alice was beginning to get very tired of sitting by her sister on the bank';
/** The text shown for a model when the state has none: SAMPLE (character or byte-pair vocabulary), or for a word or token-id vocabulary a repeated random segment (sample.js). */
export const sampleFor = (model) => (readsText(model.tokenizer) ? SAMPLE : tokenSample(model));

/** A token as shown: spaces, newlines and tabs made visible (parts/format.js), so a sub-word's leading space shows. */
export const showTok = showToken;

const perModel = new WeakMap();    // model -> {buffers, last (analysis), scores (promise), known}
const slot = (m) => { let s = perModel.get(m); if (!s) perModel.set(m, (s = { buffers: null, last: null, scores: null, known: null })); return s; };

/**
 * The analysis of the state's text on `model` (see the header); `sk` says what it was run on.
 * lastRow: the last token's next tokens (a.run.last_row says whether they are there). At a
 * 50,000-token vocabulary that row is most of a keystroke's work, so the induction view asks
 * without it (false) as the text is typed and with it (true) once typing pauses; without the
 * option an analysis of the state is taken as it is, and one made afresh has the row.
 */
export function analyse(model, state, { lastRow = undefined } = {}) {
  const s = slot(model);
  const c = model.config;
  const text = state.text ?? sampleFor(model);
  // The panels of one render ask with the same state: answered without calling the core again.
  const sk = `${(state.ablate || []).join()}|${(state.cut || []).join()}|${!!state.nopos}|${state.abl ?? ''}|${state.pos ?? ''}|${text}`;
  if (s.last && s.last.sk === sk && (lastRow !== true || !s.last.run || s.last.run.last_row)) return s.last;
  const intervention = interventionOf(state, c);
  s.last = null;   // the buffers are overwritten below
  // The core fits the text to the context, runs it under the intervention (the top next tokens
  // and the keys each head attends to most at every position, as many as the core's analyseText
  // gives by default; every head's scores on the repeated block holding the picked token) and,
  // under one, runs it clean for comparison; each pass computes only the positions from the first
  // changed token. No logits are copied (at a 50,000-token vocabulary they are 100 MB at 512 tokens).
  const r = model.analyseText(text, intervention, { at: state.pos ?? -1, lastRow: lastRow !== false, into: (s.buffers ??= buffersFor(c)) });
  const { ids, begins, ends, bos, truncated, run } = r;
  const ablating = r.clean !== null;
  s.last = {
    sk, ikey: JSON.stringify(intervention), text, ids, begins, ends, bos, truncated, run, clean: ablating ? r.clean : run, ablating, intervention,
    T: ids.length, config: c, repeat: run ? run.repeat : null, vocab: model.tokenizer.vocab, unk: r.unk_id, unknown: r.unknown,
    scores: headRows(c, run), bytes: r.bytes,   // what each token stands for, for its tooltip
  };
  return s.last;
}

/** The position (as the view numbers its tokens) of the token holding `text`'s UTF-16 offset, or null. */
export function positionAt(model, text, offset) {
  const { ids, begins, ends } = model.tokenize(text, { fit: true });
  for (let k = 0; k < ids.length; k++) if (begins[k] <= offset && offset < ends[k]) return k;
  return null;
}

// Float32Arrays that analyseText() fills instead of allocating, sized for the model's whole context.
function buffersFor(c) {
  const C = c.n_ctx;
  return { patterns: new Float32Array(c.n_layers * c.n_heads * C * C), loss: new Float32Array(C), cleanLoss: new Float32Array(C) };
}

/** The core's scores of the text, one row per head: {layer, head, name, prefix, previous, stripe}. */
function headRows(c, run) {
  if (!run) return [];
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

/** While ablating: the clean pass's probability of `id`, one of the ablated pass's top k at position q (else 0). */
export function cleanProb(a, q, id) {
  const K = a.run.top_ids.shape[1];
  const j = a.run.top_ids.data.subarray(q * K, (q + 1) * K).indexOf(id);
  return j >= 0 ? a.clean.probs_of.data[q * K + j] : 0;
}

/** The text of token k of an analysis as shown ("BOS" for the start token). */
export const tokenText = (a, k) => (k < a.bos ? 'BOS' : showTok(a.text.slice(a.begins[k], a.ends[k])));

/** The repeated block when it is long enough to compare its two copies (the core's `compared`), else null. */
export const repeatOf = (a) => (a.repeat?.compared ? a.repeat : null);

/**
 * The first position whose pattern rows may differ between the analysis `prev` drawn last and
 * `a`: attention is causal, so with the same model and intervention, rows before the first
 * changed token are the same, whatever the number of tokens after it (0 when anything else
 * changed). A token typed at the end redraws one row.
 */
export function unchangedRows(prev, a) {
  if (!prev || !prev.run || !a.run || prev.config !== a.config || prev.ikey !== a.ikey) return 0;
  const n = Math.min(prev.T, a.T);
  let from = 0;
  while (from < n && prev.ids[from] === a.ids[from]) from++;
  return from;
}

/**
 * The head scores on repeated random tokens (headScores()) with the strongest induction head by
 * them ({scores, strongest: [layer, head] | null}, or {error}), computed once per model after a
 * short delay so that the first paint does not wait for it. A promise; see also knownScores().
 */
export function randomScores(model) {
  const s = slot(model);
  s.scores ??= new Promise((resolve) => setTimeout(resolve, 50)).then(async () => {
    let out;
    try {
      const scores = model.headScores();
      const d = model.defaultHead();
      out = { scores, strongest: d ? [d.layer, d.head] : null };
    } catch (e) {
      out = { error: e.message, strongest: null };
    }
    s.known = out;
    return out;
  });
  return s.scores;
}

/** randomScores(model) if it has arrived, else null (and its computation started). */
export function knownScores(model) {
  randomScores(model);
  return slot(model).known;
}

/**
 * The head the state shows, [layer, head]: the state's if the model has it, else the core's
 * default head (store.js shownHead: the strongest induction head); null for a model without
 * attention layers.
 */
export function chosenHead(model, state) {
  return shownHead(model, state.head);
}

