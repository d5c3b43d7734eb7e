// Numbers and tokens as the page shows them.
//   fmt(x, d)            `d` decimals, and an en dash for a value that is not finite (a score the
//                        core leaves NaN, e.g. with no repeated token)
//   showToken(s)         a token's text made visible: every space as ␣, newline as ↵, tab as ⇥,
//                        other control characters as \u…; so a sub-word token's leading space
//                        shows (" the" is "␣the"). Its real text goes in a tooltip: tokenTitle(s).
//   readsText(kind)      whether a tokenizer kind reads typed text as it is (char, bpe), rather
//                        than words or ids separated by spaces
//   vocabularyText(kind, n)  how a model's vocabulary is described ("char-level vocabulary of 82",
//                        "sub-word (byte-pair) vocabulary of 2048 tokens")
// No imports (local-models.js, which store.js imports, uses it).
export const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');

const SHOWN = { ' ': '␣', '\n': '↵', '\t': '⇥' };
const INVISIBLE = /[ \n\t]|[\u0000-\u001f\u007f]/g;

/** A token's text with spaces, newlines, tabs and other control characters made visible. */
export const showToken = (s) => String(s).replace(INVISIBLE, (c) => SHOWN[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** A token's real text for a tooltip: quoted, with escapes (JSON), e.g. "\" the\"" or "\"\\n\"". */
export const tokenTitle = (s) => JSON.stringify(String(s));

/** Whether a tokenizer of this kind reads typed text as it is (characters or byte-pair sub-words). */
export const readsText = (kind) => kind === 'char' || kind === 'bpe';

/** The words for a model's vocabulary, by its tokenizer kind and size. */
export const vocabularyText = (kind, n) => (kind === 'bpe' ? `sub-word (byte-pair) vocabulary of ${n} tokens` : `${kind}-level vocabulary of ${n}`);
