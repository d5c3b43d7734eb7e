// A small promise/event client for web/trainer-worker.js: training runs in a module worker, this
// side sends start / pause / resume / stop / save and gets promises back, plus callbacks for the
// metrics the worker posts as it trains.
//
//   const run = new TrainerClient({ onMetrics: (m) => plot(m.history) });
//   await run.start(recipe, { metricsEvery: 10 });
//   await run.pause(); await run.resume();
//   const bytes = await run.save();      // a Uint8Array that load() opens
//   await run.stop(); run.terminate();

export class TrainerClient {
  /**
   * options.workerUrl: where trainer-worker.js is (default: beside this file).
   * options.onMetrics({step, latest, history, scores}): every metricsEvery steps (and on
   *   pause/stop); scores holds the head-score records taken since the last call (start's
   *   scoresEvery).
   * options.onStopped({step, reason}): reason 'finished' (the recipe's steps are done) or 'stopped'.
   * options.onError(Error): an error not tied to a request (e.g. training diverged).
   */
  constructor(options = {}) {
    const url = options.workerUrl ?? new URL('./trainer-worker.js', import.meta.url);
    this.onMetrics = options.onMetrics ?? null;
    this.onStopped = options.onStopped ?? null;
    this.onError = options.onError ?? null;
    /** The last metrics received ({step, loss, lr, grad_norm, loss_repeated, loss_fresh}) or null. */
    this.latest = null;
    /** 'idle' | 'starting' | 'running' | 'paused' | 'stopped' | 'failed' */
    this.state = 'idle';
    this._nextId = 1;
    this._pending = new Map();
    let settle;
    /** Resolves with {step, reason} when the run stops; rejects if it fails. */
    this.done = new Promise((resolve, reject) => { settle = { resolve, reject }; });
    this.done.catch(() => {});  // observed through onError too; never an unhandled rejection
    this._settle = settle;
    this._worker = new Worker(url, { type: 'module' });
    this._worker.onmessage = (event) => this._receive(event.data);
    this._worker.onerror = (event) => {
      event.preventDefault?.();
      this._fail(new Error(`trainer worker: ${event.message || 'failed to load'}`));
    };
  }

  _receive(msg) {
    if (msg.type === 'metrics') {
      if (msg.latest) this.latest = msg.latest;
      this.onMetrics?.(msg);
      return;
    }
    if (msg.type === 'stopped') {
      this.state = 'stopped';
      this._settle.resolve({ step: msg.step, reason: msg.reason });
      this.onStopped?.({ step: msg.step, reason: msg.reason });
    }
    const waiting = msg.id != null ? this._pending.get(msg.id) : null;
    if (waiting) {
      this._pending.delete(msg.id);
      if (msg.type === 'error') waiting.reject(new Error(msg.message));
      else waiting.resolve(msg);
    } else if (msg.type === 'error') {
      this._fail(new Error(msg.message));
    }
  }

  _fail(error) {
    this.state = 'failed';
    for (const { reject } of this._pending.values()) reject(error);
    this._pending.clear();
    this._settle.reject(error);
    this.onError?.(error);
  }

  _request(type, extra = {}) {
    const id = this._nextId++;
    return new Promise((resolve, reject) => {
      this._pending.set(id, { resolve, reject });
      this._worker.postMessage({ type, id, ...extra });
    });
  }

  /**
   * Starts training `recipe` (an object, as the CLI reads it; recipes that read files cannot run
   * in the browser). options: {metricsEvery = 10, scoresEvery = 0 (head scores every this many
   * steps: prefix matching and previous token per head, for the phase change), steps =
   * recipe.steps, wasmUrl, workers = 1 (Web Workers sharing each step's batch, data-parallel; see
   * trainer-worker.js)}. Resolves with {config, tokenizer, steps, batch_size, seed, version,
   * workers, simd}; rejects with the recipe's error.
   */
  async start(recipe, options = {}) {
    this.state = 'starting';
    try {
      const msg = await this._request('start', { recipe, ...options });
      if (this.state === 'starting') this.state = 'running';
      return msg;
    } catch (e) {
      this.state = 'failed';
      throw e;
    }
  }

  /** Stops stepping after the current step; resolves with {step}. */
  async pause() {
    const { step } = await this._request('pause');
    if (this.state === 'running') this.state = 'paused';
    return { step };
  }

  /** Continues a paused run; resolves with {step}. */
  async resume() {
    const { step } = await this._request('resume');
    this.state = 'running';
    return { step };
  }

  /** Ends the run (the trainer is kept, so save() still works); resolves with {step, reason}. */
  async stop() {
    const { step, reason } = await this._request('stop');
    return { step, reason };
  }

  /** The model as it stands, as model-file bytes (a Uint8Array that load() opens). */
  async save() {
    const { bytes } = await this._request('save');
    return new Uint8Array(bytes);
  }

  /** Ends the worker at once (pending requests reject). */
  terminate() {
    this._worker.terminate();
    const error = new Error('trainer worker: terminated');
    for (const { reject } of this._pending.values()) reject(error);
    this._pending.clear();
    if (this.state !== 'stopped' && this.state !== 'failed') this.state = 'stopped';
    this._settle.resolve({ step: this.latest?.step ?? 0, reason: 'terminated' });
  }
}
