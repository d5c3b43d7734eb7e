// The WASM boundary's conversions: JS values in (typed arrays, plain option and intervention
// objects, checked for type with a sentence naming the argument), results out as copied typed
// arrays tagged with shape and axis names, and the two handles the page holds (Model, Trainer),
// whose methods convert their arguments, make one call into the core and convert its result.
// No analysis happens here (it is all in src/); wasm/bindings.cpp only registers these.
//
// Conventions (wasm/circuitscope.d.ts documents each result):
//   - bulk results are {data, shape, axes}: a new typed array (a copy, never a view into the
//     heap), its row-major shape and one axis name per dimension;
//   - scalar arguments arrive as JS values and are checked here ("qk: head must be an integer,
//     got 1.5"); ranges (no such head, too many tokens) are checked by the core, whose sentence
//     the caller gets;
//   - options arrive as the plain JS object the wrapper was given (unknown keys are refused by
//     the wrapper); a missing option takes the core's default;
//   - an intervention is a plain JS object, converted here into cs::Intervention:
//       {ablate: [{layer, head, mean?}], cut: [{from: [l, h], to: [l, h], input: 'q'|'k'|'v'}],
//        removePos: bool}
//     (mean: d_model or n_ctx * d_model numbers; without it the head is zero-ablated);
//   - every method catches std::exception and rethrows it as a JS Error with the same sentence.
#pragma once
#include <emscripten/val.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/model_session.h"
#include "io.h"
#include "train.h"

namespace csjs {

using emscripten::val;

// A model file opened for the page (cs::ModelSession).
class Model {
 public:
  explicit Model(cs::ModelFile file);
  std::string config() const;
  val tokenize(const val& text, bool fit) const;  // text: a JS string (see convert.cpp)
  val tokenBytes(const val& ids) const;
  val run(const val& ids, const val& intervention, const val& options);
  val analyseText(const val& text, const val& intervention, const val& options);
  val attribution(const val& ids, const val& pos, const val& intervention, const val& target) const;
  val qk(const val& layer, const val& head, const val& k, bool table, bool factors, const val& sort,
         const val& top) const;
  val ov(const val& layer, const val& head, const val& k, bool table, bool factors, const val& sort,
         const val& top) const;
  val composedQk(const val& layer, const val& head, const val& src_layer, const val& src_head, const val& input,
                 const val& k, bool table, bool factors, const val& sort, const val& top) const;
  val posQk(const val& layer, const val& head, const val& k, bool table, bool factors, const val& sort,
            const val& top) const;
  val eigen(const val& layer, const val& head) const;
  val spectra() const;
  val composition(const val& samples, const val& seed) const;
  val headScores(const val& options) const;
  val sampleText(const val& seed, const val& length) const;
  val defaultHead() const;
  val findRepeat(const val& ids, const val& at) const;
  val topK(const val& ids, const val& k) const;
  val ablate(const val& ids, const val& batch, const val& intervention, const val& early, const val& late) const;
  val ioi(const val& ids, const val& intervention) const;
  val ioiAll(const val& intervention, const val& split) const;
  val ioiSequences(const val& split) const;
  val ioiEvaluate(const val& intervention, const val& split) const;
  val ioiTask() const;
  val ioiKind() const;
  val ioiNames() const;
  val ioiSentence(const val& options) const;
  val cutComposition(const val& input) const;
  val skipTrigrams(const val& layer, const val& head, const val& k, const val& max_bugs) const;
  val corpusStats(const val& ids, const val& window, bool leading_terms, bool interchange) const;
  val corrupt(const val& ids, const val& options) const;
  val patch(const val& ids, const val& options) const;
  val save() const;
  double forwardBatch(const val& ids, int B, int T);
  // cs::evaluate_checkpoint on this model as one checkpoint of a series: options {step, text,
  // window, batch, iclEarly, iclLate, iclPairs, repeatLen, seed}; checkpoint_eval_json's object.
  val checkpointScores(const val& options) const;
  val heldOutIds(const val& text) const;

 private:
  std::unique_ptr<cs::ModelSession> session_;
  // What analyseText() last wrote into a caller's patterns buffer (`into.patterns`): the buffer,
  // the number of tokens and the intervention of the pass. The next analyseText() into the same
  // buffer under the same intervention over as many tokens writes only the rows from its pass's
  // changed_from on (the rows before are that pass's, in this session's kept pass); any run()
  // forgets it, since it may change the kept pass the rows are counted from.
  struct PatternsWritten {
    val buffer = val::undefined();
    int T = -1;
    cs::Intervention iv;
  };
  std::optional<PatternsWritten> written_;
};

// A model file given in pieces, in order (cs::ModelReader): new ModelReader(size, options), then
// write(piece) for each piece (a Uint8Array), then finish(), which gives the Model. options as
// load(): {processing, config, tokenizer, bosToken}. The file is never copied whole into the
// module's memory: a safetensors file's values go straight into the weights.
class ModelReader {
 public:
  ModelReader(double size, const val& options);
  void write(const val& bytes);
  Model finish();

 private:
  std::unique_ptr<cs::ModelReader> reader_;
  std::vector<std::uint8_t> piece_;
};

// A training run driven one optimisation step per call (cs::Trainer). The recipe is the CLI's
// JSON; recipes whose tokenizer or data read files fail with the C++ sentence.
class Trainer {
 public:
  explicit Trainer(const std::string& recipe_json);
  val step();
  // Data-parallel steps across Web Workers (cs::Trainer::begin_step / finish_step): the next
  // batch as `shards` shards {B, T, tokens, targets, mask, mask_total}; one shard's result with
  // this trainer's weights {grads, loss, per_token}; the step finished from every shard's result
  // in order (returns the step's metrics, as step()); a begun step forgotten.
  val beginStep(const val& shards);
  val shardGradient(const val& shard);
  val finishStep(const val& results);
  void cancelStep();
  // Every weight as one Float32Array (file order), and back.
  val params() const;
  void setParams(const val& flat);
  int stepsDone() const;
  val headScores(const val& options) const;
  val save() const;
  std::string config() const;

 private:
  std::unique_ptr<cs::Trainer> trainer_;
};

std::string version();
// {heapSize, allocated} in bytes, for leak checks.
val memoryStats();
// cs::phase_change over [{step, prefix_matching}] records: {step, record, layer, head, final, threshold} or null.
val phaseChange(const val& records, const val& n_heads);
// A checkpoint series' metrics (cs::metrics_json: records and the per-token-loss PCA) from
// checkpointScores() results given as a JSON array text.
val checkpointMetrics(const std::string& scores_json);
// cs::checkpoint_label of a file name: the checkpoint's number, or null.
val checkpointLabel(const std::string& file_name);
// cs::recipe_files of a recipe's JSON text: the files its trainer reads, as the recipe names them.
val recipeFiles(const std::string& recipe_json);
// cs::recipe_with_texts: the recipe's JSON text with those files' texts ({path: text}) written in.
std::string recipeWithTexts(const std::string& recipe_json, const val& texts);
// cs::recipe_with_steps: the recipe's JSON text trained for `steps` steps instead.
std::string recipeWithSteps(const std::string& recipe_json, int steps);

}  // namespace csjs
