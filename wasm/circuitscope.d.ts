// Types for circuitscope.js, the friendly API over the WebAssembly core.

/** A bulk array copied out of the module, tagged with its shape and axis names (row-major). */
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
}

/** The tokenizer as stored in the model file (kind "char" or "word" and its vocabulary). */
export interface TokenizerJson {
  kind: string;
  vocab: string[];
  [key: string]: unknown;
}

export interface Tokens {
  /** Token ids; a <BOS> token (with an empty span) comes first when the vocabulary has one. */
  ids: Int32Array;
  /** Start of each token's span in the input string, in UTF-16 code units (<BOS>: 0). */
  begins: Int32Array;
  /** End (exclusive) of each token's span in the input string (<BOS>: 0). */
  ends: Int32Array;
}

export interface RunResult {
  /** shape [T, d_vocab], axes ["pos", "d_vocab"] */
  logits: Tagged;
  /** shape [n_layers, n_heads, T, T], axes ["layer", "head", "query_pos", "key_pos"] */
  patterns: Tagged;
  /**
   * Cross-entropy of predicting token t+1 at position t; shape [T], axes ["pos"].
   * The last position has no target and holds NaN.
   */
  loss: Tagged;
}

export interface LoadedModel {
  config: ModelConfig;
  tokenizer: TokenizerJson;
  /** Free-form training information (recipe, step, losses...). */
  info: Record<string, unknown>;
  /** Throws an Error (e.g. a word not in a word-level vocabulary). */
  tokenize(text: string): Tokens;
  /** One forward pass over one sequence of at most n_ctx tokens. Throws an Error otherwise. */
  run(ids: Int32Array | ArrayLike<number>): RunResult;
  /** Frees the model's memory inside the module; the object is unusable afterwards. */
  delete(): void;
}

export interface InitOptions {
  /** The .wasm bytes; by default read from disk (node) or fetched from beside circuitscope.js. */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /** Browser only: where to fetch circuitscope.wasm from. */
  wasmUrl?: string;
  print?: (text: string) => void;
  printErr?: (text: string) => void;
}

export interface Circuitscope {
  /** The raw Embind module (Model class, version()). */
  module: unknown;
  version: string;
  /**
   * Opens a model file (safetensors bytes). Throws an Error whose message starts with
   * "model file:" when the file is corrupt or does not match its config.
   */
  load(bytes: Uint8Array | ArrayBuffer): LoadedModel;
}

export function init(options?: InitOptions): Promise<Circuitscope>;

/** Opens a model file with a shared module, initialised on first use. */
export function load(bytes: Uint8Array | ArrayBuffer, options?: InitOptions): Promise<LoadedModel>;
