// Embind registration of the WASM module: the names the JS wrapper (wasm/circuitscope.js) calls.
// Nothing else: the conversions and the handles are in wasm/convert.{h,cpp}, the logic in src/.
#include <emscripten/bind.h>

#include "analysis/training_metrics.h"
#include "convert.h"
#include "tokenizer/hf.h"

EMSCRIPTEN_BINDINGS(circuitscope) {
  using csjs::Model;
  using csjs::Trainer;
  emscripten::function("version", &csjs::version);
  emscripten::function("memoryStats", &csjs::memoryStats);
  emscripten::function("phaseChange", &csjs::phaseChange);
  emscripten::function("checkpointMetrics", &csjs::checkpointMetrics);
  emscripten::function("checkpointLabel", &csjs::checkpointLabel);
  emscripten::function("recipeFiles", &csjs::recipeFiles);
  emscripten::function("recipeWithTexts", &csjs::recipeWithTexts);
  emscripten::function("recipeWithSteps", &csjs::recipeWithSteps);
  emscripten::constant("minInductionScore", cs::kMinInductionScore);
  emscripten::constant("leadingTermsWindow", cs::kLeadingTermsWindow);
  emscripten::constant("maxWeights", static_cast<double>(cs::kMaxWeights));
  emscripten::constant("maxTrainWeights", static_cast<double>(cs::kMaxTrainWeights));
  emscripten::constant("maxModelFileBytes", static_cast<double>(cs::kMaxModelFileBytes));
  emscripten::constant("maxHeldOutBytes", static_cast<double>(cs::kMaxHeldOutBytes));
  emscripten::constant("maxTokenizerBytes", static_cast<double>(cs::hf::kMaxFileBytes));
  emscripten::class_<csjs::ModelReader>("ModelReader")
      .constructor<double, const emscripten::val&>()
      .function("write", &csjs::ModelReader::write)
      .function("finish", &csjs::ModelReader::finish);
  emscripten::class_<Model>("Model")
      .function("config", &Model::config)
      .function("tokenize", &Model::tokenize)
      .function("tokenBytes", &Model::tokenBytes)
      .function("run", &Model::run)
      .function("analyseText", &Model::analyseText)
      .function("attribution", &Model::attribution)
      .function("qk", &Model::qk)
      .function("ov", &Model::ov)
      .function("posQk", &Model::posQk)
      .function("composedQk", &Model::composedQk)
      .function("eigen", &Model::eigen)
      .function("spectra", &Model::spectra)
      .function("composition", &Model::composition)
      .function("headScores", &Model::headScores)
      .function("sampleText", &Model::sampleText)
      .function("defaultHead", &Model::defaultHead)
      .function("findRepeat", &Model::findRepeat)
      .function("topK", &Model::topK)
      .function("ablate", &Model::ablate)
      .function("ioi", &Model::ioi)
      .function("ioiAll", &Model::ioiAll)
      .function("ioiSequences", &Model::ioiSequences)
      .function("ioiEvaluate", &Model::ioiEvaluate)
      .function("ioiTask", &Model::ioiTask)
      .function("ioiKind", &Model::ioiKind)
      .function("ioiNames", &Model::ioiNames)
      .function("ioiSentence", &Model::ioiSentence)
      .function("cutComposition", &Model::cutComposition)
      .function("skipTrigrams", &Model::skipTrigrams)
      .function("corpusStats", &Model::corpusStats)
      .function("corrupt", &Model::corrupt)
      .function("patch", &Model::patch)
      .function("save", &Model::save)
      .function("forwardBatch", &Model::forwardBatch)
      .function("checkpointScores", &Model::checkpointScores)
      .function("heldOutIds", &Model::heldOutIds);
  emscripten::class_<Trainer>("Trainer")
      .constructor<const std::string&>()
      .function("step", &Trainer::step)
      .function("beginStep", &Trainer::beginStep)
      .function("shardGradient", &Trainer::shardGradient)
      .function("finishStep", &Trainer::finishStep)
      .function("cancelStep", &Trainer::cancelStep)
      .function("params", &Trainer::params)
      .function("setParams", &Trainer::setParams)
      .function("stepsDone", &Trainer::stepsDone)
      .function("headScores", &Trainer::headScores)
      .function("save", &Trainer::save)
      .function("config", &Trainer::config);
}
