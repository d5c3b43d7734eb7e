// What the IOI panels share: the state read for an IOI model (which names, template, place and
// object it asks for, what is wrong with them), the sentence the core builds from it and the
// core's analysis of that sentence (ioi() and run()). One call per change of the inputs: the
// panels of the view (builder, prediction, heads, patterns, lens) all ask ioiInput() and get the
// same object back until the model or the IOI settings change.
//
// Symbolic task (seed 001): "<BOS> IO S S <MID>" or "<BOS> S IO S <MID>" over the six names the
// core gives (model.ioiNames(): A..F), which can be given display names. Sentence templates
// (model.ioiTask() not null): a template, the order, two of the model's names, a place and an
// object.
import { interventionOf } from '../../store.js';
import { fmt } from '../../parts/format.js';

export const DEFAULT_NAMES = ['Mary', 'John', 'Alice', 'Bob', 'Eve', 'Dan'];
const unset = (v) => v === null || v === undefined || v === '';

/** names state (array or comma-separated string) -> six display names. */
export function parseNames(v) {
  const list = Array.isArray(v) ? v : typeof v === 'string' && v ? v.split(',') : [];
  return DEFAULT_NAMES.map((name, i) => (list[i] ?? '').trim() || name);
}

/** A typed name -> its letter (one of the core's `letters`), by letter or display name (case-insensitive); null if unknown. */
export function resolveName(text, names, letters) {
  const t = String(text ?? '').trim().toLowerCase();
  if (!t) return null;
  const byLetter = letters.findIndex((l) => l.toLowerCase() === t);
  if (byLetter >= 0) return letters[byLetter];
  const byName = names.findIndex((n) => n.toLowerCase() === t);
  return byName >= 0 && byName < letters.length ? letters[byName] : null;
}

/** The index of a typed word in a list (case-insensitive, trimmed); -1 if it is not there. */
export function findWord(text, list) {
  const t = String(text ?? '').trim().toLowerCase();
  return t ? list.findIndex((w) => w.toLowerCase() === t) : -1;
}

/** How a typed name shows in its field once committed: as the model spells it, else as typed. */
export function shownName(kind, text, names, letters) {
  if (kind === 'templates') {
    const k = findWord(text, names);
    return k >= 0 ? names[k] : String(text ?? '');
  }
  const L = resolveName(text, names, letters);
  return L ? names[letters.indexOf(L)] : String(text ?? '');
}

/** The composition the state cuts whole ("*>*.q" -> 'q'), or ''. */
export function cutInput(state) {
  const c = (state.cut || []).find((x) => /^\*>\*\.[qkv]$/.test(x));
  return c ? c.slice(-1) : '';
}

/** Words for the intervention in force. */
export function changes(iv, state) {
  const out = [];
  if (iv.removePos) out.push('without the positional embedding');
  if (iv.cut?.length) out.push(`with ${cutInput(state).toUpperCase() || 'some'}-composition cut${iv.ablation ? ` (${iv.ablation} ablation)` : ''}`);
  return out;
}

/** The problems with the two names (unknown ones, then the known names; or the same name twice). */
function nameProblems({ ioText, sText, ioKnown, sKnown, same, unknown, knownLine }) {
  const problems = [];
  if (!ioKnown) problems.push(unknown(ioText, 'indirect object'));
  if (!sKnown) problems.push(unknown(sText, 'subject'));
  if (problems.length) problems.push(knownLine);
  else if (same) problems.push('The indirect object and the subject must be different names: one is said once, the other twice.');
  return problems;
}

/** The core's analysis of a sequence at its last position, and the attention patterns. */
function analyse(model, tokens, iv) {
  const a = model.ioi(tokens, iv);
  const run = model.run(tokens, iv, { logits: false });
  const vocab = model.tokenizer.vocab;
  // The model's answer, as a word, and whether the core says it is the answer.
  return { a, patterns: run.patterns, vocab, prob: a.probs.data, predicted: vocab[a.predicted] ?? `#${a.predicted}`, right: a.correct };
}

function symbolic(model, st, iv, order) {
  const names = parseNames(st.names);
  const letters = model.ioiNames();
  const ioText = st.io ?? 'A';
  const sText = st.s ?? 'B';
  const io = resolveName(ioText, names, letters);
  const s = resolveName(sText, names, letters);
  const known = letters.map((L, i) => `${names[i]} (${L})`).join(', ');
  const d = /** @type {any} */ ({ kind: 'symbolic', names, letters, ioText, sText, io, s, notices: [] });
  d.problems = nameProblems({ ioText, sText, ioKnown: !!io, sKnown: !!s, same: io === s,
    unknown: (text, role) => `The model does not know the name "${String(text ?? '').trim()}" (${role}).`,
    knownLine: `It knows six names: ${known}. Rename them above to use other names.` });
  if (d.problems.length) return d;
  const sentence = model.ioiSentence({ order, io: letters.indexOf(io), s: letters.indexOf(s) });
  // The core says which tokens are the names (roles): each shows its display name over its letter.
  const shown = sentence.words.map((w, i) => (sentence.roles[i] ? names[letters.indexOf(w)] : w));
  d.strip = shown.map((text, i) => ({ text, tag: sentence.roles[i] ? sentence.words[i] : '' }));
  d.words = shown;
  d.tokens = sentence.tokens;
  d.result = { ...analyse(model, sentence.tokens, iv), labelsX: shown.map((t) => t.slice(0, 5)), labelsY: shown, cell: 30,
    lensExplain: 'The residual stream at <MID> read through the unembedding after each stage.' };
  return d;
}

/** The template, place and object the state asks for, with a notice for any the link got wrong. */
function templateChoice(task, st, modelName) {
  const nT = task.templates.length;
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
  const { uses_place: usesPlace, uses_object: usesObject } = task.template_info[t];
  return { t, place, object, usesPlace, usesObject, notices, heldT: task.template_info[t].held_out };
}

function templates(model, modelName, task, st, iv, order) {
  const names = task.names;
  const ioText = st.io ?? names[0];
  const sText = st.s ?? names[1];
  const io = findWord(ioText, names);
  const s = findWord(sText, names);
  const d = /** @type {any} */ ({ kind: 'templates', task, names, ioText, sText, io, s, ...templateChoice(task, st, modelName) });
  d.problems = nameProblems({ ioText, sText, ioKnown: io >= 0, sKnown: s >= 0, same: io === s,
    unknown: (text, role) => (String(text).trim() === ''
      ? `No name is given for the ${role}.`
      : `The model does not know the name "${String(text).trim()}" (${role}).`),
    knownLine: `It knows ${names.length} names: ${names.join(', ')}. Pick one of them (the field suggests them as you type).` });
  if (d.problems.length) return d;
  const sentence = model.ioiSentence({ template: d.t, order, io, s, place: d.place, object: d.object });
  d.sentence = { text: sentence.text, split: sentence.split, pairHeld: sentence.pair_held_out };
  let result;
  try {
    result = analyse(model, sentence.tokens, iv);
  } catch (e) {
    d.problems = [`The model could not read this sentence: ${e.message}`];
    return d;
  }
  const words = sentence.words;
  d.strip = words.map((text, i) => ({ text, tag: sentence.roles[i] }));   // the core's: 'IO', 'S' or ''
  d.words = words;
  d.tokens = sentence.tokens;
  d.result = { ...result, labelsX: words.map((w) => w.slice(0, 4)), labelsY: words, cell: 28,
    lensExplain: `The residual stream at the last word ("${words.at(-1)}") read through the unembedding after each stage.` };
  return d;
}

const tasks = new WeakMap();   // model -> its ioiTask() (null for the symbolic task)
/** The model's sentence-template task, or null (read once per model). */
export function taskOf(model) {
  if (!tasks.has(model)) tasks.set(model, model.ioiTask());
  return tasks.get(model);
}

const memo = new WeakMap();   // model -> {key, data}: the last analysis of each model

/**
 * The IOI input and analysis for the state: {kind, modelName, names, io, s, ioText, sText,
 * order, problems, notices, strip?, words?, tokens?, result?, ...} (templates also: task, t, place, object,
 * usesPlace, usesObject, heldT, sentence, words). The same object while nothing it reads changes.
 */
export function ioiInput({ model, modelName, state: st }) {
  const key = JSON.stringify([modelName, st.model, st.names, st.io, st.s, st.order, st.tpl, st.place, st.object, st.cut, st.nopos, st.abl]);
  const hit = memo.get(model);
  if (hit?.key === key) return hit.data;
  const iv = interventionOf(st, model.config);
  const order = st.order === 'SIOS' ? 1 : 0;
  const task = taskOf(model);
  const base = { modelName, model: st.model, order, intervention: { cut: [...st.cut], nopos: st.nopos, abl: st.abl } };
  const data = Object.assign(base, task ? templates(model, modelName, task, st, iv, order) : symbolic(model, st, iv, order));
  memo.set(model, { key, data });
  return data;
}
