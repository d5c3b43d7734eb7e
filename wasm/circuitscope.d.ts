// Types for circuitscope.js, the friendly API over the WebAssembly core.

/**
 * A bulk array copied out of the module (a fresh typed array: it stays valid after the model is
 * deleted or the module's memory grows), tagged with its row-major shape and one name per axis:
 * data.length === product(shape) and axes.length === shape.length.
 *
 * Axis names: "layer", "head", "pos" (sequence position), "query_pos"/"key_pos" (attention),
 * "d_vocab" (a logit per vocabulary entry), "d_model" (residual-stream dimension), "stage"
 * (residual stream stage: 0 = blocks.0.hook_resid_pre, l+1 = blocks.l.hook_resid_post), "batch",
 * "rank" (top-k), "sequence", "kind" (q, k, v), "src_layer"/"src_head"/"dst_layer"/"dst_head",
 * "dest_token"/"src_token"/"out_token" (token ids of a circuit table), "inner" (a factor's inner
 * dimension, d_head), "eigenvalue", "part"/"path" (attribution rows).
 */
export interface Tagged<D extends Float32Array | Int32Array = Float32Array> {
  data: D;
  shape: number[];
  axes: string[];
}

/** The architecture (TransformerLens names), as stored in the model file. */
export interface ModelConfig {
  n_layers: number;
  n_heads: number;
  d_model: number;
  d_head: number;
  n_ctx: number;
  d_vocab: number;
  pos_embed: 'none' | 'standard' | 'shortformer';
  smeared_keys: boolean;
  use_bias: boolean;
  init_std: number;
  /** TransformerLens's normalization_type: ln1 (and ln2) in every block and ln_final. */
  normalization_type: 'none' | 'LN' | 'LNPre';
  /** The MLP's width; 0 for an attention-only model. */
  d_mlp: number;
  /** The MLP's activation (null without MLPs): exact GELU, the tanh form, or ReLU. */
  act_fn: 'gelu' | 'gelu_new' | 'relu' | null;
}

/**
 * How a TransformerLens file is read: "default" applies from_pretrained's weight processing
 * (fold_ln, center_writing_weights, center_unembed, fold_value_biases, where TransformerLens
 * applies them; info.processing says which), "none" reads the weights as written
 * (from_pretrained_no_processing). circuitscope's own files are always read as written.
 */
export interface LoadOptions {
  processing?: 'default' | 'none';
  /**
   * A TransformerLens config.json (its text, or the parsed object) opened beside the weights:
   * its normalization_type, positional_embedding_type and act_fn say what a state dict cannot,
   * its dimensions must match the tensors, and a setting circuitscope does not run is refused.
   */
  config?: string | Record<string, unknown>;
  /**
   * A Hugging Face tokenizer.json's text (GPT-2's, GPT-NeoX's, ...) for a file that carries no
   * tokenizer (a TransformerLens state dict): the model then reads typed text. Saved with the model.
   */
  tokenizer?: string;
  /** The token put first; default "<|endoftext|>", TransformerLens's BOS for GPT-2 and GPT-NeoX tokenizers. */
  bosToken?: string;
}

/**
 * The tokenizer as stored in the model file: kind "char", "word", "bpe", "hf" or "ids" and its
 * vocabulary. "bpe" (byte-pair, sub-word): "<BOS>", "<UNK>", single characters, then merged
 * tokens such as " the" (a leading space is part of the token), with `merges`. "ids" is for files
 * without a tokenizer (TransformerLens state dicts): text is token ids separated by spaces
 * ("12 7 7 3"), the vocabulary is "#0", "#1", ..., and there is no <BOS>.
 */
export interface TokenizerJson {
  kind: string;
  /** Each token's text; for "hf", as drawn ("␣the", "<0xE2>" for one byte of a character). */
  vocab: string[];
  /** Whether any typed text becomes tokens (char, bpe, hf); word and ids models read only their words or ids. */
  reads_text: boolean;
  /** The vocabulary in words, e.g. "sub-word (byte-pair) vocabulary of 2048 tokens". */
  description: string;
  /** What to type, for a text box's label: "Text (character-level: every character is a token)", ... */
  typing_hint: string;
  /** What a token is called in a sentence: "characters" for a character-level vocabulary, else "tokens". */
  units: 'characters' | 'tokens';
  /** The id tokenize() puts first (<BOS>, or <|endoftext|> for "hf"), -1 when there is none. */
  bos_id?: number;
  /**
   * The stages of the tokenizer pipeline in words (normalizer, pre_tokenizer, model, added_tokens,
   * post_processor, decoder): for "hf", what the tokenizer.json configures; for circuitscope's own
   * kinds, e.g. {"pre_tokenizer": "circuitscope's pieces", "model": "BPE (2048 tokens, 1966 merges)"}.
   */
  summary: Record<string, unknown>;
  /** "bpe" only: the merges in order, each a pair of earlier ids. */
  merges?: [number, number][];
  [key: string]: unknown;
}

export interface Tokens {
  /** Token ids; a <BOS> token (with an empty span) comes first when the vocabulary has one. */
  ids: Int32Array;
  /** Start of each token's span in the input string, in UTF-16 code units (<BOS>: 0). */
  begins: Int32Array;
  /** End (exclusive) of each token's span in the input string (<BOS>: 0). */
  ends: Int32Array;
  /** 1 when ids[0] is the <BOS> tokenize() put first, else 0. */
  bos: number;
  /** Tokens left out from the start of the text to fit the model's context ({fit: true}); 0 otherwise. */
  truncated: number;
}

/**
 * Tokens to run: text (tokenized with tokenize(), so <BOS> comes first when the vocabulary has
 * one) or token ids (integers in 0..d_vocab-1, at most n_ctx of them).
 */
export type TokensIn = string | Int32Array | ArrayLike<number>;

/**
 * What to change in a forward pass, as plain data. Heads are [layer, head]. Errors (a head that
 * does not exist, a cut that does not go from an earlier layer to a later one, a mean of the
 * wrong length, an unknown field) are thrown as Errors naming the field, e.g.
 * "run: the intervention: ablate[0].layer must be an integer, got \"x\"" or
 * "intervention: there is no head L5H0 in a model with 2 layers of 4 heads".
 */
export interface Intervention {
  /**
   * Heads whose output is replaced: by zero, or by `mean` (d_model values, the same at every
   * position, or n_ctx * d_model values, one row per position) for a mean-ablation.
   */
  ablate?: { layer: number; head: number; mean?: Float32Array | ArrayLike<number> }[];
  /**
   * Layers whose MLP output (blocks.l.hook_mlp_out) is replaced: by zero, or by `mean` (d_model or
   * n_ctx * d_model values). Only for models with MLPs; `ablation` kinds other than 'zero' need a
   * `mean` here (the reference runs keep heads' outputs only).
   */
  ablateMlp?: { layer: number; mean?: Float32Array | ArrayLike<number> }[];
  /**
   * Paths removed: the output of head `from` no longer reaches input `input` (query, key or
   * value) of head `to`, a head of a later layer (the residual stream that input reads is
   * recomputed without that head's output).
   */
  cut?: { from: [number, number]; to: [number, number]; input: 'q' | 'k' | 'v' }[];
  /** Act as if W_pos were zero. */
  removePos?: boolean;
  /**
   * What replaces a cut head's contribution (and the output of an `ablate` head without its own
   * `mean`), seed 001's ablations: 'zero' (default: removed), 'mean' (the head's output averaged
   * over the IOI task's sequences, at each position), 'mean-all' (averaged over the sequences and
   * their positions), 'resample' (the head's output on another sequence of the task, the partner
   * drawn with a fixed seed from the sequence's tokens). The core computes the means and resamples
   * from the task's sequences (the symbolic task's 60; a template model's training split,
   * subsampled to 256 rows), for run(), patch(), ioi() and ioiEvaluate() of an IOI model; a model
   * without an IOI task, or another call, refuses a kind other than 'zero' with a cut or ablation
   * with an Error.
   */
  ablation?: AblationKind;
}

export type AblationKind = 'zero' | 'mean' | 'mean-all' | 'resample';

export interface RunOptions {
  /** Also return the residual stream at every stage (default false). */
  resid?: boolean;
  /** Also return every head's output, hook_result (default false). */
  result?: boolean;
  /** Return the attention patterns (default true); false copies nothing for them. */
  patterns?: boolean;
  /**
   * Return the logits (default true); false copies nothing for them, and the core keeps no [T,
   * d_vocab] table either: the loss, top-k rows and probsOf come from blocks of 2,048 logits
   * computed for every row at once, with the same bits (at a 50,000-token vocabulary the table is
   * 100 MB at 512 tokens, and a 1,024-token pass fits only so).
   */
  logits?: boolean;
  /**
   * Caller-owned buffers that receive the results instead of new arrays, for callers that run on
   * every keystroke and want to allocate nothing: the result's `data` is then a subarray of the
   * buffer (overwritten by the next run that uses it). Each is optional; each must hold at least
   * the result (patterns n_layers * n_heads * T * T, logits T * d_vocab, loss T floats; size them
   * for T = n_ctx to fit any sequence), or run throws a RangeError.
   */
  into?: { patterns?: Float32Array; logits?: Float32Array; loss?: Float32Array };
  /**
   * Also return the k most probable next tokens at every position, from the same pass:
   * `top_ids` / `top_probs` (softmax probabilities over the whole vocabulary). 1 <= k <= d_vocab;
   * default 0 (none).
   */
  topk?: number;
  /**
   * Also return the head scores on this text (`text_scores`) and its longest repeated block
   * (`repeat`), read from this pass's attention patterns (default false). Cheap enough for every
   * keystroke.
   */
  textScores?: boolean;
  /**
   * With textScores: the repeated block described (`repeat`, its stripe and copy losses) is the
   * longest one with a copy holding this token position, e.g. the token the user picked; the
   * longest of all when none holds it or when left out (findRepeat() chooses the same block).
   */
  repeatAt?: number;
  /**
   * Token ids, T rows of k (flat, row-major), whose softmax probabilities to return as `probs_of`
   * [T, k]: e.g. a clean pass's probability of the tokens an ablated pass ranks first
   * (run(ids, undefined, {probsOf: ablated.top_ids.data})), without copying any logits.
   */
  probsOf?: Int32Array | ArrayLike<number>;
  /** The k keys each query attends to most in every head, as `top_keys` (0 or absent: none). */
  topKeys?: number;
  /**
   * false: the last position's row of logits is not computed (no loss reads it), so its top_ids
   * are -1, its top_probs and probs_of NaN. At a 50,000-token vocabulary that row reads all of
   * W_U: most of a keystroke at the end of a text. Tokens appended after rows the last run left
   * out leave those rows out too, with every row after them (reading the row only for the new
   * token's loss would read all of W_U again): their losses are NaN until a run with lastRow
   * computes them (`pending_from` says from which row). Default true.
   */
  lastRow?: boolean;
}

/** A block of tokens that occurs twice: first copy [a, a + r), second copy [a + d, a + d + r). */
export interface Repeat {
  a: number;
  d: number;
  r: number;
  /** Chosen because one of its copies holds the position asked for (repeatAt / findRepeat's at); false for the longest block. */
  held: boolean;
  /** Long enough (8 tokens or more) for the induction view to compare its two copies: the core's rule. */
  compared: boolean;
}

/**
 * Induction-heads scores on the typed text (cs::text_scores), each shape [n_layers, n_heads], axes
 * ["layer", "head"]. A leading <BOS> is left out: positions run from `from` = 1 after a <BOS>, else 0.
 */
export interface TextScores {
  /** Mean attention from q to q - 1 over the queries q > from (NaN with none). */
  previous_token: Tagged;
  /**
   * Prefix matching: over the queries q whose token occurred earlier (at j >= from, j + 1 < q),
   * the mean over those q of the attention summed over every such j + 1 (NaN when no token repeats).
   */
  prefix_matching: Tagged;
  /**
   * The induction stripe of `repeat`: mean attention from each second-copy token q to the token
   * after its first copy, q - d + 1 (counted when that is before q, i.e. d > 1). NaN without a repeat.
   */
  stripe: Tagged;
}

export interface RunResult {
  /** The token ids that were run (a copy). */
  tokens: Int32Array;
  /** shape [T, d_vocab], axes ["pos", "d_vocab"]; absent with {logits: false} */
  logits: Tagged;
  /**
   * hook_pattern of every layer: shape [n_layers, n_heads, T, T], axes ["layer", "head",
   * "query_pos", "key_pos"]; absent with {patterns: false}
   */
  patterns: Tagged;
  /**
   * Cross-entropy of predicting token t+1 at position t; shape [T], axes ["pos"].
   * The last position has no target and holds NaN.
   */
  loss: Tagged;
  /** The mean loss per predicted token, over the tokens after a leading <BOS> (NaN with none). */
  mean_loss: number;
  /**
   * The first position whose results may differ from the previous run() of this model under the
   * same intervention: such a run computes only the positions from the first changed token (a
   * key-value cache, as a language model serves typing; the core keeps the last pass per
   * intervention of the model that ran last, 128 MB of them in all, the least recently used
   * dropped first), and rows before this one are those of that run. 0 when every position was
   * computed (the first run, after another model's run, a pass dropped from the budget, a path
   * cut or a resample ablation). Pattern, loss, top-k and probsOf rows before it may be left as
   * drawn.
   */
  changed_from: number;
  /** Whether every row was computed, the last position's top k and probs_of included (pending_from is T). */
  last_row: boolean;
  /**
   * Rows from here on were not computed (lastRow: false): their top_ids are -1, their top_probs
   * and probs_of NaN, and the losses they give (loss[t] for t >= pending_from) NaN. T when every
   * row was.
   */
  pending_from: number;
  /** With {probsOf}: shape [T, k], axes ["pos", "rank"], each asked token's probability. */
  probs_of?: Tagged;
  /**
   * With {textScores: true} and a repeated block (`repeat`): the mean loss per token of its first
   * and of its second copy (the induction-heads paper's in-context copying); NaN otherwise.
   */
  first_copy_loss: number;
  second_copy_loss: number;
  /**
   * With {resid: true}: shape [n_layers + 1, T, d_model], axes ["stage", "pos", "d_model"]; stage 0
   * is blocks.0.hook_resid_pre (the embedding, plus W_pos for standard positions), stage l+1 is
   * blocks.l.hook_resid_post (so, without normalization, the last stage times W_U (+ b_U) gives
   * the logits; with it, ln_final of the last stage does).
   */
  resid?: Tagged;
  /** With {result: true}: blocks.l.attn.hook_result, shape [n_layers, n_heads, T, d_model], axes ["layer", "head", "pos", "d_model"]. */
  result?: Tagged;
  /** With {topk: k}: the k most probable next tokens, most probable first: shape [T, k], axes ["pos", "rank"]. */
  top_ids?: Tagged<Int32Array>;
  /** With {topk: k}: their softmax probabilities, shape [T, k], axes ["pos", "rank"]. */
  top_probs?: Tagged;
  /** With {textScores: true}: the head scores on this text. */
  text_scores?: TextScores;
  /**
   * With {topKeys: k}: the k keys each query position attends to most, for every head: shape
   * [n_layers, n_heads, T, k], axes ["layer", "head", "query_pos", "rank"], the largest attention
   * weight first, the earlier key on a tie, -1 where a query has fewer than k keys.
   */
  top_keys?: Tagged<Int32Array>;
  /**
   * With {textScores: true}: the longest block occurring twice without overlap (over the tokens
   * after a leading <BOS>; the earliest, nearest one among equals), or null below 4 tokens.
   */
  repeat?: Repeat | null;
}

/** analyseText()'s options. */
export interface AnalyseTextOptions {
  /** The text scores' repeated block is the one holding this position (as run()'s repeatAt); -1 or absent: the longest. */
  at?: number;
  /** How many most probable next tokens to give at every position (default 5; 0: none). */
  topk?: number;
  /** How many keys each query attends to most to give, for every head, as run()'s topKeys (default 3; 0: none). */
  topKeys?: number;
  /**
   * false: the last position's top k (and under an intervention the clean pass's probabilities of
   * them) are left out, and the rows of tokens appended after it, as run()'s lastRow (the result's
   * `pending_from`), unless `at` is one of them (the view then shows that token's next tokens).
   * Default true.
   */
  lastRow?: boolean;
  /**
   * Caller-owned Float32Arrays that receive the patterns, the losses and the clean losses
   * instead of new arrays, each long enough for the whole context (patterns: n_layers * n_heads *
   * n_ctx * n_ctx floats; loss, cleanLoss: n_ctx), as run()'s into. Called again with the same
   * patterns buffer, the same intervention and as many tokens (and no run() between), only the
   * rows from run.changed_from on are written: the rows before are the last call's, which the
   * caller must leave as they are.
   */
  into?: { patterns?: Float32Array; loss?: Float32Array; cleanLoss?: Float32Array };
}

/** What the induction view draws for a text: analyseText()'s result. */
export interface TextAnalysis {
  /** The text fitted to the context as tokenize(text, {fit: true}) fits it: ids, each token's UTF-16 span, bos, truncated. */
  ids: Int32Array;
  begins: Int32Array;
  ends: Int32Array;
  bos: number;
  truncated: number;
  /** The vocabulary's <UNK> id (-1 without one), and how many of the tokens read as it. */
  unk_id: number;
  unknown: number;
  /** The bytes each token stands for, as tokenBytes(ids) gives them. */
  bytes: { bytes: Uint8Array; offsets: Int32Array };
  /**
   * The pass under the intervention, as run(ids, intervention, {logits: false, textScores: true,
   * repeatAt: at, topk, topKeys}) returns it (patterns included, no logits); null when the text gives no tokens.
   */
  run: RunResult | null;
  /**
   * Under an intervention: the same tokens without it, for comparison: its losses (shape [T]), its
   * mean loss, and with topk its probability of each of the intervened pass's top k (shape [T, k],
   * as run()'s probsOf gives them). Null without an intervention (the pass is then the clean one).
   */
  clean: { loss: Tagged; mean_loss: number; probs_of?: Tagged } | null;
}

/**
 * Direct logit attribution / path expansion of the logits at one position (Framework paper,
 * "Path Expansion of Logits"). Every row of `parts` sums with the others to `logits`; each head's
 * group of `paths` (virtual heads, one composition step deep) sums to that head's row of parts.
 * With a final LayerNorm its scale at pos is frozen (TransformerLens's apply_ln_to_stack): each
 * part is centred, divided by it and read through diag(ln_final.w) W_U; ln_final.b W_U is in
 * "bias". Models with LayerNorm or MLPs have no paths yet (Q = 0).
 */
export interface Attribution {
  pos: number;
  /** The token id at pos. */
  token: number;
  /** The logits at pos: shape [d_vocab], axes ["d_vocab"]. */
  logits: Tagged;
  /**
   * Row names of parts (P = 3 + n_layers * n_heads, + n_layers with MLPs): "embed", "pos_embed",
   * "bias", then "L{l}H{h}", then "MLP{l}" (each MLP's output, b_out included).
   */
  names: string[];
  /** shape [P, d_vocab], axes ["part", "d_vocab"] */
  parts: Tagged;
  /** Row names of paths: "L{l2}H{h2}<-embed" | "<-pos_embed" | "<-bias" | "<-L{l1}H{h1}". */
  path_names: string[];
  /** For each path, the row of parts (the head h2) it belongs to: [Q]. */
  path_part: Int32Array;
  /** shape [Q, d_vocab], axes ["path", "d_vocab"] */
  paths: Tagged;
  /** The token with the largest logit: the model's prediction. */
  predicted: number;
  /** The token the expansion explains: options.target, or `predicted` when none was given. */
  target: number;
  /** The paths by the size of their logit for `target`, largest first: [Q]. */
  path_order: Int32Array;
}

export interface CircuitOptions {
  /** How many top and bottom entries to list (default 10). */
  k?: number;
  /** Materialise the whole table (default true; refused past 64 MB: ask for `top` rows and columns instead). */
  table?: boolean;
  /** Also return the factors A and B, table = A B (default false). */
  factors?: boolean;
  /**
   * The display order returned in `rows` and `cols` (default "none": index order): "row" orders
   * the rows by decreasing row mean, "col" the columns by decreasing column mean, "both" both.
   * Ties keep the lower index first.
   */
  sort?: 'none' | 'row' | 'col' | 'both';
  /**
   * Keep only the `top` rows and the `top` columns whose entries vary most (largest variance
   * along the row / column over the whole table; ties: lower index first) in `rows` and `cols`,
   * before sorting; 0 (default) or at least the table's size keeps them all.
   */
  top?: number;
}

/**
 * A full circuit kept as two factors A B, with its largest and smallest entries. Entry objects
 * name the row and column by the circuit's kind: qk {dest, src, value}, ov {src, out, value},
 * posQk {query, key, value}.
 */
export interface Circuit<E> {
  /** [rows, cols] of the table */
  shape: [number, number];
  axes: [string, string];
  /** The k largest entries, largest first. */
  top: E[];
  /** The k smallest (most negative) entries, smallest first. */
  bottom: E[];
  /**
   * How the search for `top` and `bottom` went. A large table (a 48,262-token vocabulary has 2.3
   * billion entries) is searched row by row in order of decreasing row norm, leaving out rows and
   * columns whose norms cannot reach the k-th entry found; it is `exact` when every row was read or
   * ruled out. Otherwise it stopped at the time one analysis may take: the entries are the best of
   * the `rows_searched` rows of largest norm, every entry of the other rows has |value| <= `bound`,
   * and `note` says so in a sentence to show beside them ('' when exact).
   */
  search: Record<'top' | 'bottom', { exact: boolean; rows_searched: number; bound: number; note: string }>;
  /** The whole table (unless {table: false}; refused past 64 MB), shape and axes as above. */
  table?: Tagged;
  /**
   * The rows of the table to show, in display order (options sort and top): indices into the
   * table's rows. Present with the table (or when sort or top is given). Means and variances come
   * from the factors, so a large vocabulary is ordered without forming its table.
   */
  rows?: Int32Array;
  /** The columns of the table to show, in display order, as `rows`. */
  cols?: Int32Array;
  /**
   * The entries at rows x cols, in display order: shape [rows.length, cols.length], the table's
   * axes. Present with `rows`; refused when it would pass 64 MB (choose a smaller `top`).
   */
  shown?: Tagged;
  /** With {factors: true}: shape [rows, d_head], axes [rows axis, "inner"]. */
  A?: Tagged;
  /** With {factors: true}: shape [d_head, cols], axes ["inner", cols axis]. */
  B?: Tagged;
}

/** Eigenvalues of one circuit (the non-zero ones of the table, from the small d_head x d_head product). */
export interface Spectrum {
  /** Real parts, by decreasing |lambda|: [d_head]. */
  re: Float64Array;
  /** Imaginary parts, same order: [d_head]. */
  im: Float64Array;
  /** Re(sum lambda) / sum |lambda|, in [-1, 1]: near 1 for a copying (OV) / same-token-matching (QK) head. */
  copying: number;
  /** Share of the non-zero eigenvalues with a positive real part. */
  positive_fraction: number;
}

export interface Spectra {
  /** shape [n_layers, n_heads], axes ["layer", "head"] */
  copying: Tagged;
  /** shape [n_layers, n_heads], axes ["layer", "head"] */
  positive_fraction: Tagged;
  /** shape [n_layers, n_heads, d_head], axes ["layer", "head", "eigenvalue"], by decreasing |lambda| */
  re: Tagged;
  im: Tagged;
}

export interface CompositionResult {
  /**
   * ||L R||_F / (||L||_F ||R||_F) for every pair of heads (ARENA 1.2 definitions):
   * shape [3, n_layers, n_heads, n_layers, n_heads],
   * axes ["kind", "src_layer", "src_head", "dst_layer", "dst_head"]; kind 0/1/2 = Q/K/V
   * composition; zero unless src_layer < dst_layer (all zeros for a 1-layer model).
   */
  scores: Tagged;
  kinds: ['q', 'k', 'v'];
  /** Mean score of random matrix pairs of the same shapes, and its standard deviation. */
  baseline: number;
  baseline_std: number;
  baseline_samples: number;
  /** 1 where a score exceeds baseline + sigmas * baseline_std, else 0: same shape and axes as scores. */
  above_baseline: Tagged;
  /** The largest score over the pairs from an earlier layer into a later one (the baseline without pairs). */
  max_score: number;
  /** How many standard deviations above the baseline count as standing out (2). */
  sigmas: number;
}

export interface HeadScoreOptions {
  /**
   * Length of the random segment R (rows are [BOS] R R, T = 2L + 1 <= n_ctx); default min(n, (n_ctx - 1) / 2).
   * Every option left out is chosen by the core (cs::resolve_repeated_tokens), the same way for a
   * model, a trainer and the CLI; the result reports the values used.
   */
  L?: number;
  /** Rows (default 16). */
  batch?: number;
  /** Seed of the portable generator (default 0). */
  seed?: number;
  /** R is drawn from ids [first, first + n): by default the ids after the vocabulary's leading <...> special tokens (cs::random_token_pool). */
  first?: number;
  n?: number;
  /** The id put at position 0 (default the <BOS> id, else 0). */
  bos?: number;
}

/** Induction-heads paper scores on repeated random tokens; each [n_layers, n_heads], axes ["layer", "head"]. */
export interface HeadScores {
  /** Mean attention from position i to i - 1. */
  previous_token: Tagged;
  /** Mean attention from a second-copy position to its earlier copy. */
  duplicate_token: Tagged;
  /** The induction score: mean attention from a second-copy position to the token after its earlier copy. */
  prefix_matching: Tagged;
  /** Signed rank of the attended token among the OV circuit's logits, in [-1, 1]. */
  copying: Tagged;
  /** The repeated-token batch used: shape [batch, 2L + 1], axes ["batch", "pos"]. */
  tokens: Tagged<Int32Array>;
  L: number;
  batch: number;
  seed: number;
  first: number;
  n: number;
  bos: number;
}

export interface TopKResult {
  /** Most probable next tokens, most probable first: shape [T, k], axes ["pos", "rank"]. */
  ids: Tagged<Int32Array>;
  /** Their softmax probabilities: shape [T, k], axes ["pos", "rank"]. */
  probs: Tagged;
}

export interface AblateOptions {
  /** Token indices of the ICL score (loss at late - loss at early; indices into the T-1 losses).
   *  Defaults: late = min(500, T - 2), early = min(50, floor(late / 2)). */
  iclEarly?: number;
  iclLate?: number;
  /** Rows when the tokens are a flat [B * T] array (default 1; a tagged [B, T] input gives its own). */
  batch?: number;
}

/** A forward pass under an intervention compared with the clean one (induction-heads paper, argument 3). */
export interface AblationResult {
  /** shape [B, T, d_vocab], axes ["batch", "pos", "d_vocab"] */
  logits: Tagged;
  /** Next-token losses: shape [B, T - 1], axes ["batch", "pos"] */
  per_token: Tagged;
  /** intervened - clean: shape [B, T, d_vocab], axes ["batch", "pos", "d_vocab"] */
  logits_delta: Tagged;
  /** intervened - clean: shape [B, T - 1], axes ["batch", "pos"] */
  per_token_delta: Tagged;
  loss: number;
  icl: number;
  clean_loss: number;
  clean_icl: number;
  loss_delta: number;
  icl_delta: number;
  icl_early: number;
  icl_late: number;
}

/** One IOI sequence analysed at its last position (IOI seed: residual decomposition and logit lens). */
export interface IoiAnalysis {
  tokens: Int32Array;
  pos: number;
  /** The name said once (the answer) and the name said twice. */
  io: number;
  s: number;
  /** argmax of the logits at pos. */
  predicted: number;
  logit_io: number;
  logit_s: number;
  /** logit_io - logit_s = sum(head_diff) + sum(mlp_diff) + direct_diff + bias_diff (with a final LayerNorm, every term read with its scale at pos frozen) */
  logit_diff: number;
  prob_io: number;
  prob_s: number;
  /** Each head's direct effect on logit(IO) - logit(S): shape [n_layers, n_heads], axes ["layer", "head"] */
  head_diff: Tagged;
  /** ... on logit(IO) + logit(S): [n_layers, n_heads] */
  head_sum: Tagged;
  /** Cosines of each head's output with W_U[:, IO] - W_U[:, S] and with the sum: [n_layers, n_heads] */
  head_cos_diff: Tagged;
  head_cos_sum: Tagged;
  direct_diff: number;
  direct_sum: number;
  bias_diff: number;
  bias_sum: number;
  /** Each layer's MLP output's direct effect on logit(IO) - logit(S) and on the sum: shape [n_layers], axes ["layer"]; null without MLPs. */
  mlp_diff: Tagged | null;
  mlp_sum: Tagged | null;
  /** Logit lens at pos, each shape [n_layers + 1], axes ["stage"]. */
  lens: { logit_io: Tagged; logit_s: Tagged; prob_io: Tagged; prob_s: Tagged };
  /** The softmax at pos over the whole vocabulary: shape [d_vocab], axes ["d_vocab"] (p of name id = probs.data[id]). */
  probs: Tagged;
  /** The 5 most probable tokens at pos (fewer for a smaller vocabulary): shape [k], axes ["rank"]. */
  top_ids: Tagged<Int32Array>;
  top_probs: Tagged;
  /** The model's name tokens: a template task's names in its order, or a symbolic vocabulary's A..F. */
  name_ids: Int32Array;
  /**
   * Each head's share of the logit difference: head_diff / logit_diff, shape [n_layers, n_heads].
   * The shares of all heads plus (direct_diff + bias_diff) / logit_diff sum to 1.
   */
  head_share_diff: Tagged;
  /** Each head's share of the logit sum: head_sum / (logit_io + logit_s), shape [n_layers, n_heads]. */
  head_share_sum: Tagged;
  /**
   * The head ("L{l}H{h}") with the largest share of the logit difference (head_share_diff), and
   * the one with the largest share of the logit sum (head_share_sum); the first in layer-major
   * order among equals; null when the total is exactly 0. A near-silent head has a share near 0.
   */
  most_contrastive: string | null;
  most_additive: string | null;
  /** predicted === io: the model's most probable token is the answer. */
  correct: boolean;
  /** The names ranked by probability: indices into name_ids, most probable first (ties in list order). */
  name_order: Int32Array;
  /** The probability all the model's names get together. */
  name_prob_total: number;
}

/** Over the 60 sequences <BOS> IO S S <MID> and <BOS> S IO S <MID> (names A..F). */
export interface IoiEvaluation {
  n: number;
  correct: number;
  accuracy: number;
  mean_logit_diff: number;
  mean_prob_io: number;
  mean_prob_s: number;
  /** mean -log p(IO) */
  mean_loss: number;
  /** Each [n], axes ["sequence"] (order of ioiSequences()). */
  predicted: Tagged<Int32Array>;
  logit_diff: Tagged;
  prob_io: Tagged;
  prob_s: Tagged;
  /** Means over the sequences, each [n_layers, n_heads], axes ["layer", "head"]. */
  mean_head_diff: Tagged;
  mean_head_sum: Tagged;
  mean_head_cos_diff: Tagged;
  mean_head_cos_sum: Tagged;
}

/** A skip-trigram "source ... dest -> out" of one head, scored in nats. */
export interface SkipTrigram {
  source: number;
  dest: number;
  out: number;
  /** Full QK table [dest, source] (unscaled). */
  qk: number;
  /** Full OV table [source, out]. */
  ov: number;
  /** (qk - row mean) / sqrt(d_head) + (ov - row mean) */
  score: number;
}

/** A crossed triple forced by two strong triples sharing a source (the factorisation "bug"). */
export interface SkipTrigramBug {
  source: number;
  dest: number;
  out: number;
  own_out: number;
  partner_dest: number;
  score: number;
  crossed_in_top: boolean;
  /** Whole-model probabilities on [<BOS>] source dest: of own_out, of out (the leak), and of out on [<BOS>] dest dest. */
  p_own: number;
  p_crossed: number;
  p_crossed_without_source: number;
}

export interface SkipTrigrams {
  layer: number;
  head: number;
  /** Best first. */
  top: SkipTrigram[];
  bugs: SkipTrigramBug[];
}

export interface CorpusStatsOptions {
  /** Context window w of the context map (default the core's, 8: the window the leading terms are measured with, as the report does). */
  window?: number;
  /** Also return the two predicted leading terms (default false). */
  leadingTerms?: boolean;
  /**
   * Also return the interchangeability map B^T B (default false): V^3 multiply-adds, about 2 s
   * for a 2,048-token vocabulary, which no cosine needs.
   */
  interchange?: boolean;
}

/** Gradient-leading-terms seed: corpus maps of a token stream and their cosines with the model's tables. */
export interface CorpusStats {
  window: number;
  /** P(next = j | current = i): shape [V, V], axes ["current_token", "next_token"] */
  bigram: Tagged;
  /** With {interchange: true}: B^T B, shape [V, V], axes ["next_token", "next_token_2"] */
  interchange?: Tagged;
  /** Context map Phi (rows sum to 1): shape [V, V], axes ["token", "context_token"] */
  context: Tagged;
  /** Token frequencies: shape [V], axes ["token"] */
  current_freq: Tagged;
  next_freq: Tagged;
  /** cosine(row_centred(W_E W_U), direct-path leading term) */
  direct_path_cosine: number;
  /** cosine(row_centred(full OV table), OV leading term) per head: [n_layers, n_heads], axes ["layer", "head"] */
  ov_cosine: Tagged;
  /** With {leadingTerms: true}: [V, V], axes ["current_token", "next_token"] */
  direct_path_leading_term?: Tagged;
  /** With {leadingTerms: true}: [V, V], axes ["src_token", "out_token"] */
  ov_leading_term?: Tagged;
}

/** The splits of a sentence-template IOI task: what was trained on, and what was held out. */
export type IoiSplit = 'train' | 'held-out pairs' | 'held-out templates' | 'held-out both';

/** A sentence-template IOI task, as the model file stores it. */
export interface IoiTemplateTask {
  kind: 'ioi_templates';
  /** Written in the IO S S order with the slots {IO}, {S}, {PLACE}, {OBJECT}; S IO S swaps the first two names. */
  templates: string[];
  names: string[];
  places: string[];
  objects: string[];
  /** The last this many templates were never trained on. */
  holdout_templates: number;
  /** This fraction of unordered name pairs was never trained on. */
  holdout_pair_fraction: number;
  /** The four evaluation splits in order, with what each holds in one line. */
  splits: { split: IoiSplit; what: string }[];
  /**
   * Per template (same order as `templates`): its text, its readable forms in the two orders
   * (readable[0] "When [IO] and [S] went to the [place], [S] gave a [object] to", readable[1]
   * the S IO S order), whether it was held out of training, and whether it has a place and an
   * object slot.
   */
  template_info: { index: number; text: string; readable: [string, string]; held_out: boolean; uses_place: boolean; uses_object: boolean }[];
}

/**
 * ioiSentence()'s choice, as indices: a template model reads them all (template into
 * task.templates, io and s into task.names, place, object); a symbolic model reads order, io and s
 * (indices into its names A..F). order 0 = IO S S, 1 = S IO S. Defaults: 0, io 0, s 1, 0, 0.
 */
export interface IoiSentenceOptions {
  template?: number;
  order?: 0 | 1;
  io?: number;
  s?: number;
  place?: number;
  object?: number;
}

/** One IOI sentence, built by the core's own builder (the training batches' text). */
export interface IoiSentence {
  /** The text without <BOS> (run(), ioi() read it back to `tokens`): "When Mary and John ... to", "A B B <MID>". */
  text: string;
  /** Its tokens, with <BOS> first. */
  tokens: Int32Array;
  /** The text of each token. */
  words: string[];
  /** Each token's part in the task: 'IO' (the name said once, the answer), 'S' (the name said twice), else ''. */
  roles: ('IO' | 'S' | '')[];
  template_held_out: boolean;
  pair_held_out: boolean;
  /** The split it belongs to ('train' for the symbolic task, which trains on every sequence). */
  split: IoiSplit;
}

/** The phase change of a training run (cs::phase_change). */
export interface PhaseChange {
  /** The first record's step at which the best head passes the threshold. */
  step: number;
  /** That record's index. */
  record: number;
  /** The best head at that record (flat index split by nHeads; layer 0 without it). */
  layer: number;
  head: number;
  /** The final record's best prefix-matching score (at least 0.1). */
  final: number;
  /** Half of it. */
  threshold: number;
  /**
   * "Before the phase change": the step of the record two before it (the one just before is often
   * inside the change already), -1 when there is none. The report's ICL row and
   * `circuitscope icl --before-phase-change` compare the end with it.
   */
  before_step: number;
}

/** checkpointScores()'s options: each one left out is the core's choice (cs::checkpoint_eval_spec). */
export interface CheckpointScoreOptions {
  /** The checkpoint's label: its training step, or the tokens it had seen (default 0). */
  step?: number;
  /** Held-out text (read with the model's tokenizer; token ids for a model that reads none); none: no validation loss or ICL score. */
  text?: string;
  /** Or the text's ids as heldOutIds() gives them (not both): a series tokenizes its text once. */
  ids?: Int32Array | number[];
  /** Tokens a validation window holds (default min(n_ctx, 256)). */
  window?: number;
  /** Validation windows (default 8, fewer for a large vocabulary). */
  batch?: number;
  /** The ICL score's token indices (default 50 and 500 where the context allows, else 20 and 200). */
  iclEarly?: number;
  iclLate?: number;
  /** Paired windows of the ICL score (default 64, fewer for a large model; 0: none). */
  iclPairs?: number;
  /** The repeated random segment's length for the head scores (default: the core's fit). */
  repeatLen?: number;
  seed?: number;
}

/** A training record: what the shipped runs' metrics files and a checkpoint's scores hold. */
export interface TrainingRecord {
  step: number;
  train_loss: number | null;
  valid_loss: number | null;
  icl: number | null;
  icl_se: number | null;
  repeated_loss: number | null;
  /** [n_layers * n_heads], layer-major. */
  prefix_matching: number[];
  copying: number[];
  previous_token: number[];
  /** The validation windows' per-token losses (the trajectory's vectors). */
  per_token?: number[];
}

/** checkpointScores(): one checkpoint's record and the settings it was measured with. */
export interface CheckpointScores {
  record: TrainingRecord;
  spec: { window: number; batch: number; icl_early: number; icl_late: number; icl_pairs: number; repeat_len: number; seed: number };
  /** Tokens of the held-out text. */
  held_out_tokens: number;
}

/** checkpointMetrics(): a series' records in step order and its per-token-loss trajectory, as a metrics file holds them. */
export interface SeriesMetrics {
  records: TrainingRecord[];
  /** The ICL score's indices (absent when no checkpoint had an ICL score). */
  icl_indices?: { early: number; late: number; windows: number; paired?: boolean; note: string };
  /** Projections of each record on the first principal components (absent with fewer than 2 records or no text). */
  pca?: { components: number[][]; explained_variance: number[]; n_positions: number };
  every: number;
}

/** One training record as phaseChange() reads it (metrics files' records, the trainer worker's). */
export interface PhaseChangeRecord {
  step: number;
  /** Every head's prefix-matching score, layer-major [n_layers * n_heads]; missing counts as none. */
  prefix_matching?: ArrayLike<number> | null;
}

/**
 * The standard corruption of a clean input, made by the core (corrupt(), and patch() without
 * `corrupted`). kind 'auto' (the default) is 'swap_names' for an IOI model (a sentence-template
 * model, or the symbolic vocabulary with <MID>) and 'break_repeat' for any other.
 */
export interface CorruptOptions {
  /**
   * 'swap_names' (IOI; the IOI paper's and TransformerLens's corruption for activation patching):
   * the second mention of S becomes IO ("A B B <MID>" -> "A B A <MID>"), so the corrupted
   * sentence's answer is S; the answer position is the last one, correct = IO, wrong = S.
   * 'break_repeat' (induction): the first copy of the longest repeated block (4 tokens or more)
   * becomes tokens drawn, with `seed`, from those that occur nowhere in the text (never <BOS>,
   * <PAD>, <UNK>, <MID>); the answer position is the second copy's last token but one, correct =
   * the token after it, wrong = what replaced that token in the first copy.
   */
  kind?: 'auto' | 'swap_names' | 'break_repeat';
  /** break_repeat's draw (default 0): the same seed gives the same tokens natively and in WASM. */
  seed?: number;
}

export interface Corruption {
  kind: 'swap_names' | 'break_repeat' | 'given';
  /** The corrupted sequence (as long as the clean one). */
  tokens: Int32Array;
  /** The answer position: logit difference = logit[correct] - logit[wrong] there. */
  pos: number;
  correct: number;
  wrong: number;
  /** Positions whose token differs from the clean input. */
  changed: number[];
  /** One sentence saying what was changed. */
  description: string;
}

export interface PatchOptions extends CorruptOptions {
  /**
   * A corrupted input of your own (same length as the clean one) instead of the core's
   * corruption; then `correct` and `wrong` (token ids) are required and `pos` defaults to the last
   * position (negative counts from the end).
   */
  corrupted?: TokensIn;
  pos?: number;
  correct?: number;
  wrong?: number;
  /**
   * 'denoise' (default; TransformerLens's activation patching): each head's output from the clean
   * run patched into the corrupted run. 'noise': from the corrupted run into the clean run.
   */
  direction?: 'denoise' | 'noise';
  /**
   * Also patch each head at each position alone (default true): L * H * (pos + 1) more passes.
   * 'auto': each position when that fits the work one analysis may take, else whole heads only,
   * with `note` saying so (what the page asks for).
   */
  positions?: boolean | 'auto';
  /** Applied to both runs and every patched pass (a patch overrides it for its own head). */
  intervention?: Intervention;
}

/**
 * Activation patching: every number is the logit difference logit[correct] - logit[wrong] at
 * corruption.pos of one real forward pass (later layers recompute on the patched stream).
 * effect = (patched - corrupted_logit_diff) / (clean_logit_diff - corrupted_logit_diff): 1 means
 * the patch restores the clean answer (denoise), 0 that it does nothing; when the clean and the
 * corrupted differences are closer than 1e-4 nats, `normalised` is false and every effect is 0
 * (never NaN).
 */
export interface PatchResult {
  /** The clean tokens. */
  tokens: Int32Array;
  corruption: Corruption;
  direction: 'denoise' | 'noise';
  clean_logit_diff: number;
  corrupted_logit_diff: number;
  normalised: boolean;
  /** Head (layer, head)'s output (hook_result) taken from the other run at every position. */
  head: Tagged<Float32Array>;          // [n_layers, n_heads]  axes ['layer', 'head']
  head_effect: Tagged<Float32Array>;   // [n_layers, n_heads]
  /**
   * The same with one position patched (null with positions: false). Positions after
   * corruption.pos cannot reach the answer (attention is causal): their entries are the unpatched
   * run's logit difference, computed without a pass.
   */
  head_pos: Tagged<Float32Array> | null;         // [n_layers, n_heads, T]  axes ['layer', 'head', 'pos']
  head_pos_effect: Tagged<Float32Array> | null;  // [n_layers, n_heads, T]
  /** The same for each layer's MLP output (hook_mlp_out); null for an attention-only model. */
  mlp: Tagged<Float32Array> | null;              // [n_layers]  axes ['layer']
  mlp_effect: Tagged<Float32Array> | null;       // [n_layers]
  mlp_pos: Tagged<Float32Array> | null;          // [n_layers, T]  axes ['layer', 'pos']
  mlp_pos_effect: Tagged<Float32Array> | null;   // [n_layers, T]
  /** Forward passes made: 2 + P (+ P (pos + 1)), P = L H heads (+ L MLPs). */
  passes: number;
  /** With positions: 'auto', a sentence saying why each position alone was left out; '' otherwise. */
  note: string;
}

/** An intervention as returned by cutComposition() (every field present). */
export interface InterventionOut {
  ablate: { layer: number; head: number; mean?: Float32Array }[];
  ablateMlp: { layer: number; mean?: Float32Array }[];
  cut: { from: [number, number]; to: [number, number]; input: 'q' | 'k' | 'v' }[];
  removePos: boolean;
  ablation: AblationKind;
}

/**
 * An open model. Every method throws an Error with a sentence for bad arguments ("qk: head must
 * be an integer, got 1.5", "full QK circuit: there is no head L0H9 in a model with 2 layer(s) of
 * 4 head(s)", "run: 301 tokens is longer than the model's context of 256 tokens") and after
 * delete() ("run: this model has been deleted"). Heads are (layer, head), 0-based.
 */
export interface LoadedModel {
  config: ModelConfig;
  tokenizer: TokenizerJson;
  /**
   * Free-form training information (recipe, step, losses...). A TransformerLens state dict gives
   * {source: "transformerlens", note: "..."}: the note says how its architecture and tokenizer were chosen.
   */
  info: Record<string, unknown>;
  /**
   * Throws an Error (e.g. a word not in a word-level vocabulary). With {fit: true}, the text as the
   * views run it: past the model's context, the <BOS> and then the last n_ctx - 1 tokens (the
   * newest text), `truncated` saying how many were left out.
   */
  tokenize(text: string, options?: { fit?: boolean }): Tokens;
  /** The vocabulary entries of some ids ("#id" for an id outside it). */
  tokenText(ids: ArrayLike<number>): string[];
  /**
   * The bytes each token stands for in text, one token after another: token i's are
   * bytes.subarray(offsets[i], offsets[i + 1]). A Hugging Face byte-level token's are the decoder's
   * (a token ending inside a character holds part of its UTF-8); a character, sub-word or word
   * token's its UTF-8; <BOS>, <UNK> and token-id vocabularies' none. Throws for an id outside the
   * vocabulary.
   */
  tokenBytes(ids: ArrayLike<number>): { bytes: Uint8Array; offsets: Int32Array };
  /**
   * One forward pass over one sequence of at most n_ctx tokens, optionally under an
   * intervention. The tokens and intervention are remembered for attribution().
   */
  run(tokens: TokensIn, intervention?: Intervention, options?: RunOptions): RunResult;
  /**
   * What the induction view draws for a text, in one call: the text fitted to the context, the
   * pass under the intervention with its top-k next tokens and text scores, and under an
   * intervention the clean pass's losses and probabilities of the intervened top k (each pass
   * incremental as run()'s are). The tokens and intervention are remembered for attribution().
   */
  analyseText(text: string, intervention?: Intervention, options?: AnalyseTextOptions): TextAnalysis;
  /**
   * Path expansion of the logits at `pos` (default the last position; negative counts from the
   * end). Uses the tokens and intervention of the last run() unless options.tokens is given
   * (then options.intervention, default none, applies). options.target: the token (id) whose logit
   * the page explains, ordering path_order by each path's share of it (default: the prediction);
   * parts and paths hold every token's logit either way. Throws for an id outside the vocabulary.
   */
  attribution(pos?: number, options?: { tokens?: TokensIn; intervention?: Intervention; target?: number }): Attribution;
  /**
   * Full QK circuit W_E W_Q W_K^T W_E^T (unscaled: attention scores divide by sqrt(d_head)):
   * table shape [d_vocab, d_vocab], axes ["dest_token", "src_token"]; entries {dest, src, value}.
   * For layer > 0 this is the direct-path term.
   */
  qk(layer: number, head: number, options?: CircuitOptions): Circuit<{ dest: number; src: number; value: number }>;
  /**
   * Full OV circuit W_E W_V W_O W_U: table shape [d_vocab, d_vocab], axes ["src_token", "out_token"];
   * entries {src, out, value}. (The transpose of the papers' W_U W_OV W_E.)
   */
  ov(layer: number, head: number, options?: CircuitOptions): Circuit<{ src: number; out: number; value: number }>;
  /**
   * Positional QK circuit W_pos W_Q W_K^T W_pos^T (unscaled): table shape [n_ctx, n_ctx], axes
   * ["query_pos", "key_pos"]; entries {query, key, value}. Throws for pos_embed "none".
   */
  posQk(layer: number, head: number, options?: CircuitOptions): Circuit<{ query: number; key: number; value: number }>;
  /**
   * A composition term of the QK circuit of head (layer, head) through an earlier head
   * options.through = [l1, h1] (Framework paper, "Two-Layer Attention-Only Transformers"; the
   * attention pattern of h1 left out, unscaled, tokens only), as qk() returns it:
   * input "k" (default, K-composition): W_E W_Q (W_E W_V^{h1} W_O^{h1} W_K)^T, table shape
   * [d_vocab, d_vocab], axes ["dest_token", "src_read_token"]: the query token against the token
   * h1 attends to from the key position (for a previous-token h1, the token before the key);
   * input "q" (Q-composition): (W_E W_V^{h1} W_O^{h1} W_Q) (W_E W_K)^T, axes
   * ["dest_read_token", "src_token"]. Entries {dest, src, value} name the rows and columns.
   * Throws unless l1 < layer, and for input "v".
   */
  composedQk(layer: number, head: number, options: CircuitOptions & { through: [number, number]; input?: 'q' | 'k' }): Circuit<{ dest: number; src: number; value: number }>;
  /** Eigenvalues of one head's full OV and QK circuits. */
  eigen(layer: number, head: number): { ov: Spectrum; qk: Spectrum };
  /** Every head's eigenvalue summary. */
  spectra(): { ov: Spectra; qk: Spectra };
  /** Q/K/V composition scores with a random baseline (default 200 samples, seed 0). */
  composition(options?: { samples?: number; seed?: number }): CompositionResult;
  /** Previous-token, duplicate-token, prefix-matching (induction) and copying scores. */
  headScores(options?: HeadScoreOptions): HeadScores;
  /**
   * A repeated random segment to type: the starting text for a model whose tokenizer does not
   * read prose (word-level, token ids), and the induction view's inserted sequence. R R, R of
   * `length` distinct random tokens (default 12, at most (n_ctx - 1) / 2), each one that shows
   * (not only white space) and that the tokenizer reads back as itself (a word holding a space
   * could never be typed), written as the tokenizer reads text; `segment` is R alone; tokens is
   * what tokenize(text) gives. Empty text when the context is too short.
   * (cs::repeated_sample_text; display text, not a measurement.)
   */
  sampleText(options?: { seed?: number; length?: number }): { text: string; segment: string; tokens: Int32Array };
  /**
   * The head every view shows when the state names none: the strongest induction head, the
   * largest prefix-matching score of headScores() with its defaults (computed once per model and
   * kept; the first in layer-then-head order on a tie). Null for a model without attention layers.
   */
  defaultHead(): { layer: number; head: number; name: string; prefix_matching: number } | null;
  /**
   * The repeated block run(ids, undefined, {textScores: true, repeatAt: at}) describes, without a
   * forward pass: the longest block occurring twice without overlap (over the tokens after a
   * leading <BOS>) with a copy holding position `at`, else the longest; null below 4 tokens.
   */
  findRepeat(ids: Int32Array | ArrayLike<number>, options?: { at?: number }): Repeat | null;
  /**
   * This model scored as one checkpoint of a training series (cs::evaluate_checkpoint, the record
   * `circuitscope train` writes): validation loss, the paired ICL score with its standard error,
   * the per-token losses of the validation windows, and every head's prefix-matching, copying and
   * previous-token scores with the loss on repeated random tokens.
   */
  checkpointScores(options?: CheckpointScoreOptions): CheckpointScores;
  /** The held-out token ids checkpointScores() reads from a text (the tokenizer's, without <BOS>). */
  heldOutIds(text: string): Int32Array;
  /** The k (default 5) most probable next tokens at every position. */
  topK(tokens: TokensIn, k?: number): TopKResult;
  /**
   * A forward pass over tokens (one sequence, a flat [B * T] array with {batch: B}, or a tagged
   * [B, T] batch such as headScores().tokens) under an intervention, compared with the clean pass.
   */
  ablate(tokens: TokensIn | Tagged<Int32Array>, intervention?: Intervention, options?: AblateOptions): AblationResult;
  /**
   * IOI analysis at the last position of one sequence (text such as "A B B <MID>" or ids), or,
   * with no tokens, of each sequence of the model's task (the 60 symbolic sequences, or a
   * template model's 'held-out both' split, up to 2,000 rows), each cut by the core after its last
   * word and carrying its `tokens`. Throws unless the sequence names one person once and another
   * twice, and (without tokens) for a model that has no IOI task.
   */
  ioi(tokens: TokensIn, intervention?: Intervention): IoiAnalysis;
  ioi(tokens?: undefined | null, intervention?: Intervention): IoiAnalysis[];
  /**
   * The IOI task's sequences, axes ["sequence", "pos"]: the 60 symbolic ones [60, 5], or for a
   * sentence-template model (ioiTask() not null) one split (default 'held-out both'), padded with
   * <PAD> (id 1) after each sentence, evenly subsampled to at most 2,000 rows.
   */
  ioiSequences(split?: IoiSplit): Tagged<Int32Array>;
  /**
   * Accuracy and logit differences over ioiSequences(split), optionally under an intervention.
   * Throws "IOI: the symbolic task's vocabulary has 8 tokens (<BOS> <MID> A..F) but this model's
   * has N" for a model of another vocabulary.
   */
  ioiEvaluate(intervention?: Intervention, split?: IoiSplit): IoiEvaluation;
  /** A sentence-template IOI model's task (templates, names, places, objects, held-out parts), else null. */
  ioiTask(): IoiTemplateTask | null;
  /**
   * Which IOI task the model is for: 'templates' (it carries a sentence-template task, ioiTask()),
   * 'symbolic' (its vocabulary is the symbolic task's: <BOS>, <MID> and the names A..F), or null
   * (not an IOI model). The page opens a model file in the IOI view when this is not null.
   */
  ioiKind(): 'templates' | 'symbolic' | null;
  /**
   * The names ioi() reports probabilities for, as text, in the order ioiSentence's io and s count
   * them: a template task's names, or the symbolic task's A..F; [] for a model that is not an IOI model.
   */
  ioiNames(): string[];
  /** One sentence of the model's IOI task (template or symbolic), with its tokens and split. */
  ioiSentence(options?: IoiSentenceOptions): IoiSentence;
  /** The intervention cutting input q, k or v of every head from all heads of earlier layers (empty for 1 layer). */
  cutComposition(input: 'q' | 'k' | 'v'): InterventionOut;
  /** Top skip-trigrams of one head (default k 20) and the "bugs" they force (default at most 32). */
  skipTrigrams(layer: number, head: number, options?: { k?: number; maxBugs?: number }): SkipTrigrams;
  /** Corpus statistics of a token stream (text is tokenized without the leading <BOS>) over this model's vocabulary. */
  corpusStats(tokens: TokensIn, options?: CorpusStatsOptions): CorpusStats;
  /** The standard corruption of a clean input (text or ids), made by the core. */
  corrupt(tokens: TokensIn, options?: CorruptOptions): Corruption;
  /**
   * Activation patching of every head, and every head at every position, between a clean input
   * and its corruption, on the logit difference at the answer position. Sized first: more than
   * about 2e10 multiply-adds (a few seconds) throws an Error saying so, e.g.
   * model.patch('The quick fox. The quick fox') or model.patch(ids, {kind: 'swap_names', direction: 'noise'}).
   */
  patch(tokens: TokensIn, options?: PatchOptions): PatchResult;
  /** The model file as bytes (a new Uint8Array, F32 safetensors) that load() opens again. */
  save(): Uint8Array;
  /**
   * Benchmark entry: one forward pass over a [B, T] batch (ids row-major, length B * T,
   * T <= n_ctx) into the model's own cache; returns the mean next-token cross-entropy over the
   * B * (T - 1) positions that have a target. Copies nothing bulk out.
   */
  forwardBatch(ids: Int32Array | ArrayLike<number>, B: number, T: number): number;
  /**
   * Frees the model's memory inside the module; the object is unusable afterwards. Call it when
   * done: the module's memory is not garbage-collected with the JS object. Results already
   * returned stay valid (they are copies).
   */
  delete(): void;
}

/**
 * A training recipe, as the native CLI reads it (see src/train.h). Recipes whose tokenizer or
 * data read files ("char" corpus, "text" data) cannot run in the module: creating a trainer
 * from one throws an Error ("recipe: cannot read ...", "data: cannot read ...").
 */
export interface Recipe {
  name?: string;
  description?: string;
  /** The architecture; d_vocab may be left out (it is set from the tokenizer). */
  model: Partial<ModelConfig>;
  /** {"kind":"synthetic","size":n} | {"kind":"ioi_symbolic","names":[...]} | {"kind":"word","vocab":[...]} | {"kind":"bpe","text":corpus,"vocab_size":n} */
  tokenizer: { kind: string; [key: string]: unknown };
  /** {"kind":"repeated_segment"|"periodic"|"ioi_symbolic", "seq_len": T, ...} */
  data: { kind: string; [key: string]: unknown };
  optimizer?: {
    kind?: 'adamw';
    lr?: number;
    betas?: [number, number];
    eps?: number;
    weight_decay?: number;
    /** Max global gradient L2 norm; <= 0 disables clipping. */
    grad_clip?: number;
  };
  schedule?: {
    kind?: 'onecycle' | 'constant';
    pct_start?: number;
    div_factor?: number;
    final_div_factor?: number;
    cycle_momentum?: boolean;
    base_momentum?: number;
    max_momentum?: number;
    warmup_steps?: number;
  };
  /** Total steps: the schedule's length (the trainer does not stop by itself). */
  steps?: number;
  batch_size?: number;
  seed?: number;
  snapshots?: number[];
  eval_every?: number;
  /** Multiplies the initial weights. */
  init_scale?: number;
  /** What the CLI's evaluator records while training (a trainer made here runs none). */
  eval?: { [key: string]: unknown };
  output?: string;
}

/** What one optimisation step reports. */
export interface StepMetrics {
  /** Steps completed, this one included. */
  step: number;
  /** Mean next-token cross-entropy of the batch, before the update. */
  loss: number;
  /** The learning rate this step used. */
  lr: number;
  /** Global gradient L2 norm before clipping. */
  grad_norm: number;
  /** Mean loss on tokens predictable by copying; -1 if the batch has none. */
  loss_repeated: number;
  /** Mean loss on the other tokens; -1 if the batch has none. */
  loss_fresh: number;
}

export interface Trainer {
  /** The architecture being trained (d_vocab set from the tokenizer). */
  config: ModelConfig;
  tokenizer: TokenizerJson;
  /** The recipe as given. */
  recipe: Recipe;
  /** The recipe's total steps, batch size and seed. */
  steps: number;
  batch_size: number;
  seed: number;
  /** Steps completed so far. */
  readonly stepsDone: number;
  /**
   * Runs n optimisation steps (default 1), each a separate call into the module, and returns the
   * metrics of the last one (call it in a loop to record every step). Throws an Error whose
   * message starts with "training diverged at step" when a loss, gradient or weight becomes
   * NaN or Inf.
   */
  step(n?: number): StepMetrics;
  /**
   * Head scores of the model as it stands, the same as load(save()).headScores(options) without
   * the round trip (the training view records prefix matching with it as the run goes).
   */
  headScores(options?: HeadScoreOptions): HeadScores;
  /** The model as it stands, as model-file bytes (a new Uint8Array) that load() opens. */
  save(): Uint8Array;
  /**
   * Data-parallel steps (the page's training worker and its helper workers): the next batch
   * split by rows into n shards (the first B % n one row larger). Each shard's loss and gradient
   * are its share of the whole batch's mean (mask_total is the whole batch's mask sum).
   */
  beginStep(n: number): TrainingShard[];
  /** One shard's result with this trainer's weights (a helper sets them first with setParams). */
  shardGradient(shard: TrainingShard): ShardResult;
  /**
   * Finishes the begun step from every shard's result, in shard order: the gradients are summed
   * in that order, then the same checks, clipping and optimiser step as step(). Returns its
   * metrics. Equal to step() up to the order of summation.
   */
  finishStep(results: ShardResult[]): StepMetrics;
  /** Forgets a begun step (a helper failed); its batch is used up. */
  cancelStep(): void;
  /** Every weight as one Float32Array, tensor after tensor in file order. */
  params(): Float32Array;
  /** Sets every weight from params()'s layout; throws unless the length is the parameter count. */
  setParams(flat: Float32Array): void;
  /** Frees the trainer's memory inside the module; the object is unusable afterwards. */
  delete(): void;
}

/** One shard of a training batch: B rows of T tokens, their targets and loss mask. */
export interface TrainingShard {
  B: number;
  T: number;
  tokens: Int32Array;
  targets: Int32Array;
  mask: Float32Array;
  /** The whole batch's mask sum, which the shard's loss divides by. */
  mask_total: number;
}

/** A shard's gradient (params() layout), its share of the mean loss and its per-token losses [B, T]. */
export interface ShardResult {
  grads: Float32Array;
  loss: number;
  per_token: Float32Array;
}

export interface InitOptions {
  /** The .wasm bytes; by default read from disk (node) or fetched from beside circuitscope.js. */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /** Browser only: where to fetch circuitscope.wasm from. */
  wasmUrl?: string;
  /**
   * Which module: 'relaxed' (circuitscope-relaxed.wasm, fused multiply-adds; needs an engine with
   * WebAssembly relaxed SIMD) or 'simd128' (circuitscope.wasm, runs everywhere). Default 'auto':
   * relaxed where the engine has it (and, in node, the file is there), else simd128; with
   * wasmBinary or wasmUrl given, 'simd128'.
   */
  simd?: 'auto' | 'relaxed' | 'simd128';
  /**
   * A module of its own, for one large file: it is not the one the module-level phaseChange() uses,
   * so once nothing holds it (or a model it loaded), its whole memory is given back. Every init()
   * makes a new instance; in a browser the .wasm is compiled once per URL and instantiated again.
   */
  separate?: boolean;
  print?: (text: string) => void;
  printErr?: (text: string) => void;
}

export interface Circuitscope {
  /** The raw Embind module (Model and Trainer classes, version()). */
  module: unknown;
  /** The module in use: 'relaxed' (circuitscope-relaxed.wasm) or 'simd128' (circuitscope.wasm). */
  simd: 'relaxed' | 'simd128';
  version: string;
  /** Below this final prefix-matching score no head became an induction head (phaseChange() gives null). */
  minInductionScore: number;
  /** The context window the gradient leading terms are measured with (corpusStats()'s default, the report's): 8. */
  leadingTermsWindow: number;
  /**
   * The core's size limits (src/config.h): the weights a model may hold, the weights a recipe may
   * train, the largest model file read (the largest model in float32 and a 64 MB header), the
   * most held-out text a checkpoint is scored on, and the largest tokenizer.json read
   * (src/tokenizer/hf.h).
   */
  limits: { maxWeights: number; maxTrainWeights: number; maxModelFileBytes: number; maxHeldOutBytes: number; maxTokenizerBytes: number };
  /**
   * Opens a model file (safetensors bytes, or a .pth state dict as torch.save writes it). Throws
   * an Error whose message starts with "model file:" when the file is corrupt or does not match
   * its config.
   */
  load(bytes: Uint8Array | ArrayBuffer, options?: LoadOptions): LoadedModel;
  /**
   * Opens a model file read from a File or Blob as a stream: a safetensors file's values go
   * straight into the weights, so the file is never held whole beside them, and a wrong header,
   * config or tokenizer.json is refused before the weights are read. onProgress(read, total) is
   * called as the pieces arrive. Rejects as load() throws.
   */
  loadFile(file: Blob, options?: LoadOptions, onProgress?: (read: number, total: number) => void): Promise<LoadedModel>;
  /**
   * Starts a training run from a recipe (an object or its JSON text). Throws an Error whose
   * message starts with "recipe:", "config:", "data:" or "tokenizer:" for a bad recipe.
   */
  trainer(recipe: Recipe | string): Trainer;
  /**
   * The files a recipe's trainer reads, as the recipe names them (relative to the recipe's
   * folder): tokenizer.corpus, data.path, data.names_path. eval.valid_path is not among them (the
   * CLI's evaluator reads it; a trainer made here runs no evaluation).
   */
  recipeFiles(recipe: Recipe | string): string[];
  /**
   * The recipe with those files' texts written in beside their paths (tokenizer.text,
   * data.text, data.names), so that trainer() trains it as the CLI does reading the files; the
   * model file it saves records the paths, not the texts. Throws when a file's text is missing
   * from `texts`.
   */
  recipeWithTexts(recipe: Recipe | string, texts: Record<string, string>): Recipe;
  /**
   * The recipe trained for `steps` steps instead (1 to 10^7; its schedule spans them), without
   * the snapshots it lists past the new end: what `circuitscope train --steps` does.
   */
  recipeWithSteps(recipe: Recipe | string, steps: number): Recipe;
  /**
   * {heapSize, allocated} in bytes: the module's linear memory (it grows and never shrinks) and
   * the bytes malloc has handed out and not freed. For leak checks.
   */
  memory(): { heapSize: number; allocated: number };
  /** phaseChange() on this instance. */
  phaseChange(records: PhaseChangeRecord[] | null | undefined, options?: { nHeads?: number }): PhaseChange | null;
  /** A series' metrics from its checkpoints' checkpointScores() results (sorted by step; all scored alike). */
  checkpointMetrics(scores: CheckpointScores[]): SeriesMetrics;
  /**
   * The number a checkpoint file's name ends with (TransformerLens's checkpoints/NAME_N.pth, N the
   * tokens seen; circuitscope's stepN.safetensors), or null (e.g. model_final.pth).
   */
  checkpointLabel(fileName: string): number | null;
}

export function init(options?: InitOptions): Promise<Circuitscope>;

/** True when this engine runs WebAssembly relaxed SIMD (init() then loads circuitscope-relaxed.wasm by default). */
export function hasRelaxedSimd(): boolean;

/** Opens a model file with a shared module, initialised on first use. */
export function load(bytes: Uint8Array | ArrayBuffer, options?: InitOptions & LoadOptions): Promise<LoadedModel>;

/** Starts a training run with the shared module, initialised on first use. */
export function trainer(recipe: Recipe | string, options?: InitOptions): Promise<Trainer>;

/** The induction-heads paper's ICL score token indices (50 and 500). */
/**
 * The phase change (the report's definition): over records in step order, the first whose best
 * head (the maximum over every head) reaches half the final record's best prefix-matching score;
 * null when that final best is below 0.1 or there are no records. {nHeads} splits the head
 * index into layer and head. Synchronous; needs a module already loaded in this thread (after
 * `await init()`, `load()` or `trainer()`), else throws.
 */
export function phaseChange(records: PhaseChangeRecord[] | null | undefined, options?: { nHeads?: number }): PhaseChange | null;

export const PAPER_ICL_EARLY: number;
export const PAPER_ICL_LATE: number;

/** One element of a tagged array, one index per axis. Throws a RangeError otherwise. */
export function at<D extends Float32Array | Int32Array>(t: Tagged<D>, ...index: number[]): number;

/** The index (one entry per axis) and value of the largest element of a tagged array. */
export function argmax<D extends Float32Array | Int32Array>(t: Tagged<D>): { index: number[]; value: number };
