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
  /**
   * Benchmark entry: one forward pass over a [B, T] batch (ids row-major, length B * T,
   * T <= n_ctx) into the model's own cache; returns the mean next-token cross-entropy over the
   * B * (T - 1) positions that have a target. Copies nothing bulk out.
   */
  forwardBatch(ids: Int32Array | ArrayLike<number>, B: number, T: number): number;
  /** Frees the model's memory inside the module; the object is unusable afterwards. */
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
  /** {"kind":"synthetic","size":n} | {"kind":"ioi_symbolic","names":[...]} | {"kind":"word","vocab":[...]} */
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
  /** The model as it stands, as model-file bytes (a new Uint8Array) that load() opens. */
  save(): Uint8Array;
  /** Frees the trainer's memory inside the module; the object is unusable afterwards. */
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
  /** The raw Embind module (Model and Trainer classes, version()). */
  module: unknown;
  version: string;
  /**
   * Opens a model file (safetensors bytes). Throws an Error whose message starts with
   * "model file:" when the file is corrupt or does not match its config.
   */
  load(bytes: Uint8Array | ArrayBuffer): LoadedModel;
  /**
   * Starts a training run from a recipe (an object or its JSON text). Throws an Error whose
   * message starts with "recipe:", "config:", "data:" or "tokenizer:" for a bad recipe.
   */
  trainer(recipe: Recipe | string): Trainer;
}

export function init(options?: InitOptions): Promise<Circuitscope>;

/** Opens a model file with a shared module, initialised on first use. */
export function load(bytes: Uint8Array | ArrayBuffer, options?: InitOptions): Promise<LoadedModel>;

/** Starts a training run with the shared module, initialised on first use. */
export function trainer(recipe: Recipe | string, options?: InitOptions): Promise<Trainer>;
