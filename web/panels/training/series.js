// A training run opened as its checkpoint files (open-model.js: TransformerLens's
// checkpoints/NAME_N.pth, circuitscope's stepN.safetensors): each checkpoint read from its File,
// scored by the core (model.checkpointScores(), the record `circuitscope train` keeps for its own
// runs) and freed before the next is read, then the series' metrics (records in order and the
// per-token-loss trajectory) from the core's checkpointMetrics(). The scores are computed once per
// series; listeners hear the progress (the Training view shows it).
import { getModule, siteUrl } from '../../store.js';
import { readsText } from '../../parts/format.js';

// The held-out text a series is scored on when none was chosen with it: books no shipped model
// trained on (models/corpus/gutenberg-valid.txt), for a model that reads typed text.
export const DEFAULT_HELD_OUT = 'models/corpus/gutenberg-valid.txt';

const listeners = new Set();
/** Calls fn({name, done, total, file}) as a series' checkpoints are scored; returns an unsubscribe function. */
export function onSeriesProgress(fn) { listeners.add(fn); return () => listeners.delete(fn); }
/** The progress of each series scored or being scored, by model name ({name, done, total, file}). */
export const seriesProgress = new Map();

async function heldOutText(entry) {
  if (entry.series.text !== null) return { text: entry.series.text, source: entry.series.textName };
  if (!readsText(entry.model.tokenizer)) return { text: '', source: null };
  const res = await fetch(siteUrl(DEFAULT_HELD_OUT));
  if (!res.ok) throw new Error(`could not download the held-out text ${DEFAULT_HELD_OUT} (HTTP ${res.status})`);
  return { text: await res.text(), source: DEFAULT_HELD_OUT.split('/').pop() };
}

/**
 * Scores every checkpoint of a local series entry (local-models.js) and returns {metrics (the
 * core's checkpointMetrics), source (the held-out text's name, or null: head scores only)}.
 * Rejects with a sentence naming the checkpoint that could not be read or scored.
 */
export async function scoreSeries(entry) {
  const cs = await getModule();
  const { text, source } = await heldOutText(entry);
  const { checkpoints } = entry.series;
  const scores = [];
  const tell = (done, file) => {
    const p = { name: entry.name, done, total: checkpoints.length, file };
    seriesProgress.set(entry.name, p);
    for (const fn of [...listeners]) fn(p);
  };
  // One tokenizing for every checkpoint (a series shares its tokenizer): at a 50k vocabulary the
  // 600 KB books take about 0.3 s each time.
  const ids = text ? entry.model.heldOutIds(text) : null;
  try {
    for (const [i, c] of checkpoints.entries()) {
      tell(i, c.file.name);
      await new Promise((resolve) => setTimeout(resolve, 0));   // the page draws the progress first
      const own = c.file.name === entry.file;   // the opened model is one of the checkpoints
      const model = own ? entry.model : await entry.series.open(c.file);
      try {
        scores.push(model.checkpointScores(ids ? { step: c.label, ids } : { step: c.label }));
      } catch (e) {
        throw new Error(`Could not score ${String(c.file.name).slice(0, 80)}: ${e.message}`);
      } finally {
        if (!own) model.delete();
      }
    }
  } finally {
    tell(checkpoints.length, null);
  }
  return { metrics: cs.checkpointMetrics(scores), source };
}
