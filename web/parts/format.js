// Numbers and tokens as the page shows them.
//   fmt(x, d)            `d` decimals, and an en dash for a value that is not finite (a score the
//                        core leaves NaN, e.g. with no repeated token)
//   showToken(s)         a token's text made visible: every space as ␣, newline as ↵, tab as ⇥,
//                        other control characters as \u…; so a sub-word token's leading space
//                        shows (" the" is "␣the"). Its real text goes in a tooltip: tokenTitle(s),
//                        with its id and bytes: tokenIdBytes(id, bytes).
//   readsText(tokenizer) whether the model reads typed text as it is (the core's reads_text:
//                        char, bpe, hf), rather than words or ids separated by spaces
//   vocabularyText(tokenizer)  how a model's vocabulary is described (the core's description:
//                        "sub-word (byte-pair) vocabulary of 2048 tokens")
// No imports (local-models.js, which store.js imports, uses it).
export const fmt = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '–');

const SHOWN = { ' ': '␣', '\n': '↵', '\t': '⇥' };
const INVISIBLE = /[ \n\t]|[\u0000-\u001f\u007f]/g;

/** A token's text with spaces, newlines, tabs and other control characters made visible. */
export const showToken = (s) => String(s).replace(INVISIBLE, (c) => SHOWN[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** A token's real text for a tooltip: quoted, with escapes (JSON), e.g. "\" the\"" or "\"\\n\"". */
export const tokenTitle = (s) => JSON.stringify(String(s));

/**
 * A token's id and bytes for its tooltip, from the core's tokenBytes: "token 15496, bytes 48 65 6C
 * 6C 6F" (at most 16 bytes shown, then "…"); "token 0" when it stands for no bytes.
 * @param {number} id @param {Uint8Array} bytes
 */
export const tokenIdBytes = (id, bytes) => {
  if (!bytes.length) return `token ${id}`;
  const hex = Array.from(bytes.subarray(0, 16), (b) => b.toString(16).toUpperCase().padStart(2, '0')).join(' ');
  return `token ${id}, byte${bytes.length === 1 ? '' : 's'} ${hex}${bytes.length > 16 ? ` … (${bytes.length})` : ''}`;
};

/** Whether the model reads typed text as it is: the core's reads_text of its tokenizer. */
export const readsText = (tokenizer) => tokenizer.reads_text === true;

/** The words for a model's vocabulary: the core's description of its tokenizer. */
export const vocabularyText = (tokenizer) => String(tokenizer.description);
