// The README's example as a page script would write it, type-checked against
// wasm/circuitscope.d.ts (npm test runs `tsc -p tests/types`): which head of char-2l is the
// induction head, and what the core computes for the views (top-k, text scores, IOI sentences,
// the phase change). Never run; it only has to type-check.
import { load, argmax, at, phaseChange } from '../../wasm/circuitscope.js';
import type { LoadedModel, RunResult, HeadScores, IoiAnalysis, PhaseChange, IoiSentence, Tagged } from '../../wasm/circuitscope.js';

export async function strongestInductionHead(bytes: Uint8Array): Promise<string> {
  const model: LoadedModel = await load(bytes);
  const scores: HeadScores = model.headScores();
  const { index: [l, h], value } = argmax(scores.prefix_matching);
  const { ov } = model.eigen(l, h);
  model.delete();
  return `strongest induction head: L${l}H${h} (prefix matching ${value.toFixed(2)}, OV copying ${ov.copying.toFixed(2)})`;
}

export function keystroke(model: LoadedModel, text: string, into: { patterns: Float32Array; logits: Float32Array; loss: Float32Array }): string[] {
  const r: RunResult = model.run(text, undefined, { into, topk: 5, textScores: true });
  const lines: string[] = [];
  const stripe: Tagged | undefined = r.text_scores?.stripe;
  if (stripe && r.repeat) lines.push(`repeat of ${r.repeat.r} tokens at distance ${r.repeat.d}; L0H0 stripe ${at(stripe, 0, 0).toFixed(2)}`);
  if (r.top_ids && r.top_probs) {
    const T = r.top_ids.shape[0];
    const best = at(r.top_ids, T - 1, 0);
    lines.push(`next: ${model.tokenText([best])[0]} (${(100 * at(r.top_probs, T - 1, 0)).toFixed(1)}%)`);
  }
  return lines;
}

export function ioiSentence(model: LoadedModel): string {
  const task = model.ioiTask();
  const split = task?.splits[0].what ?? '';
  const readable = task?.template_info[0].readable[1] ?? '';
  const s: IoiSentence = model.ioiSentence({ template: 0, order: 1, io: 0, s: 1, place: 0, object: 0 });
  const a: IoiAnalysis = model.ioi(s.text);
  const pIo = a.probs.data[a.io];
  return `${readable} / ${s.split} (${split}): p(IO) ${pIo.toFixed(3)}; contrastive ${a.most_contrastive ?? '-'}, additive ${a.most_additive ?? '-'}`;
}

export function phase(records: { step: number; prefix_matching: number[] }[]): number | null {
  const pc: PhaseChange | null = phaseChange(records, { nHeads: 4 });
  return pc ? pc.step : null;
}
