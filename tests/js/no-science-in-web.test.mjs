// The page only draws: every score, probability, sentence, split and threshold comes from the
// core through the API. This test reads every script under web/ and fails when one computes what
// the core computes (a softmax or log-probability, a head score, the phase change, the IOI
// templates' grammar, the held-out pair hash, a checkpoint file's number, or the thresholds that
// go with them). It also checks that it catches each kind on a sample, so it cannot pass by
// reading nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const web = path.join(root, 'web');

// [what the core owns, a pattern that computes it in JavaScript]
const FORBIDDEN = [
  ['softmax / probabilities (run({topk}), ioi().probs)', /Math\.exp\s*\(/],
  ['log-probabilities and losses (run().loss)', /Math\.log\s*\(|Math\.log1p\s*\(/],
  ['the held-out name-pair hash (ioiSentence().pair_held_out)', /BigInt|0x9E3779B9|0xBF58476D|0x94D049BB/i],
  ['the phase change (phaseChange())', /function\s+phaseChange|MIN_INDUCTION_SCORE\s*=/],
  ['the IOI template grammar and splits (ioiSentence(), ioiTask().splits)', /templatePieces|fillTemplate|ioiPairHeldOut|templateHeldOut|IOI_SPLITS\s*=/],
  ['head scores on a text (run({textScores}))', /function\s+findRepeat|textScores\s*\(\s*a\b|prefix_matching\s*\[[^\]]*\]\s*\+?=/],
  ['the most additive / contrastive head (ioi().most_additive, most_contrastive)', /\|difference\|\s*\/\s*\|sum\||Math\.abs\([^)]*diff\)\s*\/\s*\(?Math\.abs/],
  ['a threshold against a baseline (composition().above_baseline)', /baseline\s*\+\s*\d+(\.\d+)?\s*\*\s*\w*\.?baseline_std/],
  ['a table\'s rows and columns ordered by their means and variances (qk()/ov() {sort, top}: rows, cols)', /\b(?:row|col|column)s?(?:Mean|Means|Var|Vars|Variance|Variances)\b/i],
  ['the mean loss and the loss on each copy of a repeat (run().mean_loss, first_copy_loss, second_copy_loss)', /\b(?:const|let|function)\s+(?:meanLoss|copyLoss|mean_loss)\b/],
  ['the ICL score\'s standard error (metrics records\' icl_se, from `circuitscope train`)', /\b(?:const|let|var|function)\s+\w*(?:stderr|standardError|std_?err)\b|\.icl_se\s*=(?!=)|Math\.sqrt\s*\([^)]*\/\s*\(?\s*\w*(?:windows|\.length)\b/i],
  ['the head with the largest score (the wrapper\'s argmax)', /for\s*\([^)]*\)\s*if\s*\(\s*\w+\[\w+\]\s*>\s*\w+\[best\]\s*\)\s*best\s*=/],
  ['the repeat long enough to compare its copies (the repeat\'s `compared`)', /MIN_REPEAT|\brepeat\w*\??\.r\s*>=?\s*\w/],
  ['a text cut to the context around its <BOS> (tokenize(text, {fit: true}))', /n_ctx\s*-\s*\(?\s*bos\b|ids\.length\s*>\s*\w+\.n_ctx/],
  ['which IOI task a vocabulary is for (ioiKind())', /SYMBOLIC_NAMES|[!=]==?\s*['"]<(?:BOS|MID)>['"]/],
  ['the leading terms\' window (corpusStats()\'s default, leadingTermsWindow)', /\bWINDOW\s*=\s*\d|corpusStats\([^)]*window:\s*\d/],
  ['the symbolic IOI task\'s names (ioiNames())', /\[\s*['"]A['"]\s*,\s*['"]B['"]\s*,\s*['"]C['"]/],
  ['the keys a query attends to most (run({topKeys}).top_keys)', /\.sort\(\s*\(\s*\w+\s*,\s*\w+\s*\)\s*=>\s*\w+\[[^\]]*\b\w+\]\s*-\s*\w+\[/],
  ['a checkpoint file\'s number (checkpointLabel())', /\\d(?:[+*]|\{[\d,]+\})\)?\\\.\(?(?:\?:)?(?:pth|safetensors)/i],
];

function scripts(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'vendor' ? [] : scripts(p);
    return /\.m?js$/.test(e.name) ? [p] : [];
  });
}

/** Every forbidden computation in a script's text: [{what, line}] (comments are not code). */
function findScience(text) {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, ' ')).replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
  const found = [];
  code.split('\n').forEach((line, i) => {
    for (const [what, re] of FORBIDDEN) if (re.test(line)) found.push({ what, line: i + 1, text: line.trim().slice(0, 120) });
  });
  return found;
}

test('no script under web/ computes a score, probability, sentence, split or threshold', () => {
  const files = scripts(web);
  assert.ok(files.length >= 8, `read ${files.length} scripts`);
  const problems = files.flatMap((f) => findScience(readFileSync(f, 'utf8')).map((x) => `${path.relative(root, f)}:${x.line}: ${x.what}: ${x.text}`));
  assert.deepEqual(problems, []);
});

test('the check catches each kind of computation on a sample', () => {
  const samples = [
    'const p = Math.exp(v - mx) / z;',
    'const nll = -Math.log(p);',
    'let z = (BigInt(a) << 32n) + 0x9E3779B97F4A7C15n;',
    'export function phaseChange(records) {',
    'export const MIN_INDUCTION_SCORE = 0.1;',
    'const text = fillTemplate(t, order, fill);',
    'function findRepeat(ids, from) {',
    'Most contrastive head: ${x} (|difference| / |sum| = 1)',
    'const strong = v > c.baseline + 2 * c.baseline_std;',
    'for (let j = 0; j < C; j++) { rowMean[i] += d[i * C + j] / C; }',
    'const meanLoss = (loss, from, to) => {',
    'for (let i = 1; i < d.length; i++) if (d[i] > d[best]) best = i;',
    'const standardError = (xs) => {',
    'r.icl_se = sd / Math.sqrt(n);',
    'const se = Math.sqrt(variance / windows);',
    'const label = /_(\\d+)\\.pth$/.exec(file.name);',
    'export const repeatOf = (a) => (a.repeat && a.repeat.r >= 8 ? a.repeat : null);',
    'const from = ids.length - (c.n_ctx - bos);',
    "const names = model.tokenizer.vocab.filter((w) => w !== '<BOS>' && w !== '<MID>');",
    'const st = m.corpusStats(text, { window: 8 });',
    "export const LETTERS = ['A', 'B', 'C', 'D', 'E', 'F'];",
    'const keys = order.sort((x, y) => P[base + y] - P[base + x]).slice(0, 3);',
  ];
  for (const s of samples) assert.equal(findScience(s).length, 1, s);
  assert.equal(findScience('// Math.exp(x) in a comment\n/* BigInt */').length, 0, 'comments are not code');
});
