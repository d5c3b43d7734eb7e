// One opened model and the page's calls on it (see model_session.h).
#include "analysis/model_session.h"
#include "checks.h"
#include "data.h"

#include <algorithm>
#include <cmath>
#include <list>
#include <stdexcept>

namespace cs {

SpectraTable spectra_table(const std::vector<Spectrum>& ss, int L, int H) {
  SpectraTable t;
  t.L = L;
  t.H = H;
  for (const auto& s : ss) t.K = std::max(t.K, static_cast<int>(s.eigenvalues.size()));
  t.re.assign(static_cast<std::size_t>(L) * H * t.K, 0.0f);
  t.im.assign(t.re.size(), 0.0f);
  for (std::size_t i = 0; i < ss.size(); ++i) {
    t.copying.push_back(static_cast<float>(ss[i].copying_score));
    t.positive_fraction.push_back(static_cast<float>(ss[i].positive_fraction));
    for (std::size_t j = 0; j < ss[i].eigenvalues.size(); ++j) {
      t.re[i * t.K + j] = static_cast<float>(ss[i].eigenvalues[j].real());
      t.im[i * t.K + j] = static_cast<float>(ss[i].eigenvalues[j].imag());
    }
  }
  return t;
}

HeadScoresRun head_scores_run(const Params<float>& p, const Tokenizer& tok, const RepeatedTokensSpec& spec) {
  HeadScoresRun r;
  r.spec = resolve_repeated_tokens(spec, tok, p.cfg);
  r.tokens = make_repeated_tokens(r.spec);
  r.scores = head_scores(p, r.tokens);
  return r;
}

int batch_length(std::size_t n, int B, const std::string& what) {
  if (B < 1 || n == 0 || n % static_cast<std::size_t>(B) != 0)
    throw std::invalid_argument(what + ": " + std::to_string(n) + " token ids do not make " + std::to_string(B) +
                                " sequence(s) of equal length");
  return static_cast<int>(n / static_cast<std::size_t>(B));
}

IoiSplit ioi_split_from_name(const std::string& name) {
  for (IoiSplit sp : kIoiSplits)
    if (name == ioi_split_name(sp)) return sp;
  throw std::invalid_argument("IOI split must be 'train', 'held-out pairs', 'held-out templates' or 'held-out both', got \"" +
                              name + "\"");
}

ModelSession::ModelSession(ModelFile file) : file_(std::move(file)) {
  // A sentence-template IOI model carries its task (templates, names, places, objects).
  const nlohmann::json& info = file_.info;
  if (info.is_object() && info.contains("task") && info["task"].is_object() && info["task"].value("kind", "") == "ioi_templates") {
    task_ = ioi_template_task(info["task"]);
    names_ = ioi_template_name_ids(*task_, file_.tokenizer);
  }
  name_ids_ = task_ ? names_ : ioi_symbolic_name_ids(file_.tokenizer);
}

nlohmann::json ModelSession::describe() const {
  nlohmann::json j;
  j["config"] = config_to_json(file_.cfg);
  // The API always names the block's parts, in TransformerLens's words (config_to_json leaves
  // out those of an attention-only model, so its files keep their config).
  j["config"]["normalization_type"] = norm_name(file_.cfg.normalization);
  j["config"]["d_mlp"] = file_.cfg.d_mlp;
  j["config"]["act_fn"] = file_.cfg.d_mlp > 0 ? nlohmann::json(act_name(file_.cfg.act_fn)) : nlohmann::json(nullptr);
  j["tokenizer"] = file_.tokenizer.describe();
  j["info"] = file_.info;
  return j;
}

std::vector<Token> ModelSession::tokenize(const std::string& text) const {
  return file_.tokenizer.encode(text, file_.tokenizer.bos_id() >= 0);
}

ModelSession::ContextTokens ModelSession::tokenize_to_context(const std::string& text, bool fit) const {
  ContextTokens out;
  out.tokens = tokenize(text);
  const int bos_id = file_.tokenizer.bos_id();
  std::vector<Token>& t = out.tokens;
  // The <BOS> encode() adds has an empty span at 0 (a <BOS> typed into the text does not).
  out.bos = bos_id >= 0 && !t.empty() && t[0].id == bos_id && t[0].end == 0 ? 1 : 0;
  const int n_ctx = config().n_ctx;
  if (fit && static_cast<int>(t.size()) > n_ctx) {
    const int from = static_cast<int>(t.size()) - (n_ctx - out.bos);
    out.truncated = from - out.bos;
    t.erase(t.begin() + out.bos, t.begin() + from);
  }
  return out;
}

namespace {
// One kept pass: the forward cache of one session's run() under one intervention (or of its
// forward_batch()), with what an incremental pass reuses from it.
struct PassSlot {
  const ModelSession* owner = nullptr;
  bool batch = false;  // forward_batch()'s: never incremental
  Intervention iv;
  ActivationCache<float> cache;
  KeptRun kept;
  double bytes = 0;  // forward_bytes of its last pass
};
// Every kept pass of the thread, the most recently used first.
std::list<PassSlot>& pass_slots() {
  thread_local std::list<PassSlot> slots;
  return slots;
}
const ActivationCache<float>& empty_cache() {
  static const ActivationCache<float> none;
  return none;
}
}  // namespace

ModelSession::~ModelSession() {
  pass_slots().remove_if([this](const PassSlot& s) { return s.owner == this; });
}

double ModelSession::kept_bytes() {
  double sum = 0;
  for (const PassSlot& s : pass_slots()) sum += s.bytes;
  return sum;
}

const ActivationCache<float>& ModelSession::cache() const {
  for (const PassSlot& s : pass_slots())
    if (s.owner == this) return s.cache;
  return empty_cache();
}

// The slot for a pass of `bytes` under `iv` (found, or made), moved to the front; another
// session's slots are dropped, and the least recently used of this one's until it fits beside
// the rest within kKeptPassBytes.
static PassSlot& pass_slot(const ModelSession* owner, const Intervention& iv, bool batch, double bytes) {
  std::list<PassSlot>& slots = pass_slots();
  slots.remove_if([owner](const PassSlot& s) { return s.owner != owner; });
  auto it = std::find_if(slots.begin(), slots.end(), [&](const PassSlot& s) {
    return s.batch == batch && (batch || same_intervention(s.iv, iv));
  });
  if (it == slots.end()) {
    slots.emplace_front();
    slots.front().owner = owner;
    slots.front().batch = batch;
    slots.front().iv = iv;
  } else {
    slots.splice(slots.begin(), slots, it);
  }
  PassSlot& slot = slots.front();
  slot.bytes = bytes;
  double others = 0;
  for (auto s = std::next(slots.begin()); s != slots.end(); ++s) others += s->bytes;
  while (slots.size() > 1 && others + bytes > kKeptPassBytes) {
    others -= slots.back().bytes;
    slots.pop_back();
  }
  return slot;
}

RunExtras ModelSession::run(const std::vector<int>& ids, const Intervention& iv, const RunOptions& o) {
  const Intervention full = with_ablation_reference(iv);
  // Refused before a slot is made, so that a text too long drops no other kept pass.
  check_context_length(file_.cfg, static_cast<int>(ids.size()), "run");
  const double bytes = forward_bytes(file_.cfg, 1, static_cast<double>(ids.size()), o.logits ? -1 : 0, false, !full.empty());
  PassSlot& slot = pass_slot(this, full, false, bytes);
  return run_sequence(file_.params, ids, full, o, file_.tokenizer.bos_id(), slot.cache, "run", &slot.kept);
}

ModelSession::TextAnalysis ModelSession::analyse_text(const std::string& text, const Intervention& iv, int at, int topk, int top_keys,
                                                      bool last_row, const std::function<void(const ActivationCache<float>&, int)>& read_pass) {
  if (topk < 0) throw std::invalid_argument("analyseText: topk must be 0 or more, got " + std::to_string(topk));
  if (top_keys < 0) throw std::invalid_argument("analyseText: topKeys must be 0 or more, got " + std::to_string(top_keys));
  TextAnalysis a;
  a.tokens = tokenize_to_context(text, true);
  const Tokenizer& tok = file_.tokenizer;
  a.unk_id = tok.unk_id();
  std::vector<int> ids;
  ids.reserve(a.tokens.tokens.size());
  for (const Token& t : a.tokens.tokens) {
    ids.push_back(t.id);
    if (t.id == a.unk_id) ++a.unknown;
  }
  a.bytes = tok.token_bytes(ids, a.byte_offsets);
  if (ids.empty()) return a;
  RunOptions& o = a.options;
  o.logits = false;
  o.topk = topk;
  o.text_scores = true;
  o.repeat_at = at;
  o.top_keys = top_keys;
  // The picked token's next tokens are shown: its row is computed whatever was asked.
  o.last_row = last_row;
  o.shown_row = at;
  a.run = run(ids, iv, o);
  a.ran = true;
  if (read_pass) read_pass(cache(), a.run.changed_from);
  if (iv.empty()) return a;
  RunOptions clean;
  clean.logits = false;
  clean.last_row = o.last_row;
  clean.shown_row = o.shown_row;
  if (a.run.top) {
    clean.probs_of = a.run.top->ids.data;
    clean.probs_k = a.run.top->k;
  }
  RunExtras c = run(ids, Intervention(), clean);
  a.compared = true;
  a.clean_loss = std::move(c.loss);
  a.clean_mean_loss = c.mean_loss;
  a.clean_probs_of = std::move(c.probs_of);
  return a;
}

double ModelSession::forward_batch(const std::vector<int>& ids, int B, int T) {
  if (B < 1 || T < 1) throw std::invalid_argument("forwardBatch: B and T must be positive");
  if (ids.size() != static_cast<std::size_t>(B) * static_cast<std::size_t>(T))
    throw std::invalid_argument("forwardBatch: " + std::to_string(ids.size()) + " token ids do not make a [" + std::to_string(B) +
                                ", " + std::to_string(T) + "] batch");
  check_context_length(file_.cfg, T, "forwardBatch");
  ActivationCache<float>& cache = pass_slot(this, Intervention(), true, forward_bytes(file_.cfg, B, T, -1, false, false)).cache;
  cache.keep_result = false;  // the loss does not need each head's output
  cache.skip_logits = false;
  forward<float>(file_.params, ids, B, T, cache);
  check_output_finite(cache);
  return loss_from_logits<float>(cache, next_token_batch(ids, B, T)).loss;
}

Attribution ModelSession::attribution(const std::vector<int>& ids, int pos, const Intervention& iv, int target) const {
  const int T = static_cast<int>(ids.size());
  check_context_length(file_.cfg, T, "attribution");
  ActivationCache<float> cache;
  forward<float>(file_.params, ids, 1, T, cache, iv);
  check_output_finite(cache);
  return cs::attribution(file_.params, cache, 0, pos, iv, target);
}

HeadScoresRun ModelSession::head_scores(const RepeatedTokensSpec& spec) const {
  const bool unset = spec.L < 0 && spec.batch < 0 && spec.first < 0 && spec.n < 0 && spec.bos < 0 && spec.seed < 0;
  if (!unset) return head_scores_run(file_.params, file_.tokenizer, spec);
  if (!default_scores_) default_scores_ = std::make_shared<const HeadScoresRun>(head_scores_run(file_.params, file_.tokenizer, spec));
  return *default_scores_;
}

std::optional<std::pair<int, int>> ModelSession::default_head() const {
  const Config& c = file_.cfg;
  if (c.n_layers == 0) return std::nullopt;
  const Tensor<float>& pm = head_scores(RepeatedTokensSpec()).scores.prefix_matching;
  int best = 0;
  for (int i = 1; i < c.n_layers * c.n_heads; ++i)
    if (pm.data[i] > pm.data[best]) best = i;
  return std::make_pair(best / c.n_heads, best % c.n_heads);
}

TopK ModelSession::top_k(const std::vector<int>& ids, int k) const {
  const int T = static_cast<int>(ids.size());
  check_context_length(file_.cfg, T, "topK");
  ActivationCache<float> cache;
  forward<float>(file_.params, ids, 1, T, cache);
  check_output_finite(cache);
  return top_k_predictions(cache, k);
}

AblationResult ModelSession::ablate(const std::vector<int>& ids, int B, const Intervention& iv, int icl_early, int icl_late) const {
  const int T = batch_length(ids.size(), B, "ablate");
  check_context_length(file_.cfg, T, "ablate");
  return cs::ablate(file_.params, ids, B, T, iv, icl_early, icl_late);
}

SpectraTable ModelSession::spectra(bool ov) const {
  return spectra_table(ov ? ov_spectra(file_.params) : qk_spectra(file_.params), file_.cfg.n_layers, file_.cfg.n_heads);
}

CorpusStatsRun ModelSession::corpus_stats(const std::vector<int>& ids, int window) const {
  const Config& c = file_.cfg;
  CorpusStatsRun r;
  r.stats = cs::corpus_stats(ids, c.d_vocab, window);
  r.direct_path_cosine = cs::direct_path_cosine(file_.params, r.stats);
  for (double x : ov_cosines(file_.params, r.stats)) r.ov_cosine.push_back(static_cast<float>(x));
  return r;
}

std::string ModelSession::ioi_kind() const {
  if (task_) return "templates";
  return is_symbolic_ioi_vocabulary(file_.tokenizer) ? "symbolic" : "";
}

std::vector<std::string> ModelSession::ioi_names() const {
  std::vector<std::string> out;
  if (ioi_kind().empty()) return out;
  for (int id : name_ids_) out.push_back(file_.tokenizer.token_text(id));
  return out;
}

nlohmann::json ModelSession::ioi_task_json() const {
  if (!task_) return nullptr;
  nlohmann::json j = ioi_template_task_json(*task_);
  j["splits"] = nlohmann::json::array();
  for (IoiSplit sp : kIoiSplits) j["splits"].push_back({{"split", ioi_split_name(sp)}, {"what", ioi_split_description(sp)}});
  j["template_info"] = nlohmann::json::array();
  for (int t = 0; t < static_cast<int>(task_->templates.size()); ++t)
    j["template_info"].push_back({{"index", t},
                                  {"text", task_->templates[t]},
                                  {"readable", {ioi_template_readable(*task_, t, 0), ioi_template_readable(*task_, t, 1)}},
                                  {"held_out", ioi_template_held_out(*task_, t)},
                                  {"uses_place", ioi_template_uses(*task_, t, "{PLACE}")},
                                  {"uses_object", ioi_template_uses(*task_, t, "{OBJECT}")}});
  return j;
}

Batch repeated_reference_sequences(const Tokenizer& tok, const Config& c) {
  const double row_bytes = 4.0 * c.n_layers * c.n_heads * c.n_ctx * c.d_model;
  const int rows = static_cast<int>(std::min<double>(kMaxAblationReferenceRows, std::floor(kMaxAblationReferenceBytes / row_bytes)));
  if (rows < kMinAblationReferenceRows) {
    const auto mb = [](double b) { return std::to_string(static_cast<long long>(std::ceil(b / (1 << 20)))); };
    throw std::invalid_argument("mean and resample ablation replace a head's output with its outputs on at least " +
                                std::to_string(kMinAblationReferenceRows) + " reference sequences of repeated random tokens; for this model (" +
                                std::to_string(c.n_layers * c.n_heads) + " heads, " + std::to_string(c.n_ctx) + " positions, " +
                                std::to_string(c.d_model) + " wide) they would hold " + mb(row_bytes * kMinAblationReferenceRows) +
                                " MB, and circuitscope keeps at most " + mb(kMaxAblationReferenceBytes) + " MB of them: zero-ablate instead");
  }
  RepeatedTokensSpec spec;
  spec.batch = rows;
  spec.seed = 0;
  const RepeatedTokensSpec r = resolve_repeated_tokens(spec, tok, c.n_ctx);
  const RepeatedTokens rt = make_repeated_tokens(r);
  Batch out;
  out.B = rows;
  out.T = c.n_ctx;
  out.tokens.assign(static_cast<std::size_t>(rows) * c.n_ctx, r.bos);
  for (int b = 0; b < rows; ++b)
    for (int t = 1; t < c.n_ctx; ++t)
      out.tokens[static_cast<std::size_t>(b) * c.n_ctx + t] = rt.tokens[static_cast<std::size_t>(b) * rt.T() + 1 + (t - 1) % r.L];
  return out;
}

namespace {
// Mean and resample ablation of a model without an IOI task keep every head's output on its
// repeated-token rows (up to kMaxAblationReferenceBytes): one model's at a time on a thread (the
// page's instance), so trying them on model after model, or snapshot after snapshot, does not add
// up. Keyed by the session, its weights' address and a fingerprint of their values, so a session
// that took the address of a closed one never reads the closed one's reference.
struct RepeatedReferenceSlot {
  const void* owner = nullptr;
  const void* weights = nullptr;
  double print = 0;
  std::shared_ptr<const AblationReference> ref;
};
thread_local RepeatedReferenceSlot repeated_slot;

double weights_print(const Params<float>& p) {
  double s = 0;
  const auto add = [&](const Tensor<float>& t) {
    const std::size_t n = t.data.size(), step = std::max<std::size_t>(1, n / 64);
    for (std::size_t i = 0; i < n; i += step) s = s * 1.000003 + static_cast<double>(t.data[i]);
  };
  add(p.W_E);
  add(p.W_U);
  for (const auto& b : p.blocks) add(b.W_O);
  return s;
}
}  // namespace

Intervention ModelSession::with_ablation_reference(const Intervention& iv) const {
  bool replaces = !iv.cuts.empty();
  for (const auto& a : iv.ablations) replaces |= !a.mean;
  if (iv.ablation == Ablation::Zero || iv.reference || !replaces) return iv;
  if (!reference_) {
    Batch ref;
    if (task_) {
      ref = ioi_template_sequences(*task_, file_.tokenizer, IoiSplit::Train, kAblationReferenceRows);
    } else if (file_.cfg.d_vocab == ioi_symbolic_tokenizer().size()) {
      ref = ioi_symbolic_sequences();
    } else {
      RepeatedReferenceSlot& slot = repeated_slot;
      const double print = weights_print(file_.params);
      if (!(slot.ref && slot.owner == this && slot.weights == file_.params.W_E.data.data() && slot.print == print)) {
        slot.ref.reset();  // the previous model's is given up first
        const Batch rows = repeated_reference_sequences(file_.tokenizer, file_.cfg);
        slot.ref = ablation_reference(file_.params, rows.tokens, rows.B, rows.T);
        slot.owner = this;
        slot.weights = file_.params.W_E.data.data();
        slot.print = print;
      }
      Intervention out = iv;
      out.reference = slot.ref;
      return out;
    }
    reference_ = ablation_reference(file_.params, ref.tokens, ref.B, ref.T);
  }
  Intervention out = iv;
  out.reference = reference_;
  return out;
}

IoiAnalysis ModelSession::ioi(const std::vector<int>& ids, const Intervention& iv_in) const {
  check_context_length(file_.cfg, static_cast<int>(ids.size()), "ioi");
  const Intervention iv = with_ablation_reference(iv_in);
  IoiAnalysis a = ioi_analyse(file_.params, ids, iv, names_);
  ioi_rank_names(a, name_ids_);
  return a;
}

Batch ModelSession::ioi_sequences(std::optional<IoiSplit> split) const {
  if (!task_) return ioi_symbolic_sequences();
  return ioi_template_sequences(*task_, file_.tokenizer, split.value_or(IoiSplit::HeldOutBoth), kMaxTemplateRows);
}

IoiEvaluation ModelSession::ioi_evaluate(const Intervention& iv_in, std::optional<IoiSplit> split) const {
  const Intervention iv = with_ablation_reference(iv_in);
  if (!task_) return cs::ioi_evaluate(file_.params, iv);
  return cs::ioi_evaluate(file_.params, ioi_sequences(split), iv, names_);
}

std::vector<ModelSession::IoiRow> ModelSession::ioi_all(const Intervention& iv_in, std::optional<IoiSplit> split) const {
  if (!task_) check_symbolic_vocabulary(file_.cfg);
  const Intervention iv = with_ablation_reference(iv_in);
  const Batch b = ioi_sequences(split);
  std::vector<IoiRow> rows;
  for (int r = 0; r < b.B; ++r) {
    const std::size_t off = static_cast<std::size_t>(r) * b.T;
    int pos = b.T - 1;
    if (b.mask.size() == b.tokens.size())
      for (int t = 0; t < b.T; ++t)
        if (b.mask[off + t] != 0) pos = t;
    IoiRow row;
    row.tokens.assign(b.tokens.begin() + off, b.tokens.begin() + off + pos + 1);
    row.analysis = ioi(row.tokens, iv);
    rows.push_back(std::move(row));
  }
  return rows;
}

IoiSentence ModelSession::ioi_sentence(const IoiTemplateRow& row) const {
  IoiSentence out;
  if (task_) {
    out = ioi_template_sentence_of(*task_, file_.tokenizer, row);
  } else {
    const IoiSymbolicSentence x = ioi_symbolic_sentence(file_.tokenizer, row.io, row.s, row.order);
    out.text = x.text;
    out.tokens = x.tokens;
    out.words = x.words;
    out.split = IoiSplit::Train;  // the symbolic task trains on every sequence
  }
  // Both built the sentence from row.io and row.s, indices into name_ids_ that they checked.
  const int io = name_ids_.at(row.io), s = name_ids_.at(row.s);
  for (int t : out.tokens) out.roles.push_back(t == io ? "IO" : t == s ? "S" : "");
  return out;
}

Corruption ModelSession::corrupt(const std::vector<int>& ids, const std::string& kind, std::uint64_t seed) const {
  const Tokenizer& tok = file_.tokenizer;
  std::string k = kind;
  if (k == "auto") k = task_ || tok.find("<MID>") >= 0 ? "swap_names" : "break_repeat";
  if (k == "swap_names") {
    if (!task_) check_symbolic_vocabulary(file_.cfg);
    return ioi_swap_names(ids, names_);
  }
  if (k == "break_repeat") {
    std::vector<int> avoid;
    for (const char* special : {"<BOS>", "<PAD>", "<UNK>", "<MID>"})
      if (tok.find(special) >= 0) avoid.push_back(tok.find(special));
    return break_repeat(ids, text_scores_from(ids, tok.bos_id()), file_.cfg.d_vocab, avoid, seed);
  }
  throw std::invalid_argument("corrupt: the kind must be 'auto', 'swap_names' or 'break_repeat', got \"" +
                              printable_text(kind, 40) + "\"");
}

PatchRun ModelSession::patch(const PatchRequest& rq, const Intervention& iv) const {
  check_context_length(file_.cfg, static_cast<int>(rq.clean.size()), "patch");
  PatchRun run;
  if (rq.corrupted.empty()) {
    run.corruption = corrupt(rq.clean, rq.kind, rq.seed);
  } else {
    if (rq.correct < 0 || rq.wrong < 0)
      throw std::invalid_argument("patch: with a corrupted input of your own, give the correct and the wrong answer tokens");
    Corruption& k = run.corruption;
    k.kind = "given";
    k.tokens = rq.corrupted;
    k.pos = rq.pos < 0 ? static_cast<int>(rq.clean.size()) - 1 : rq.pos;
    k.correct = rq.correct;
    k.wrong = rq.wrong;
    for (std::size_t i = 0; i < rq.clean.size() && i < rq.corrupted.size(); ++i)
      if (rq.clean[i] != rq.corrupted[i]) k.changed.push_back(static_cast<int>(i));
    k.description = "the corrupted input given";
  }
  PatchSpec spec;
  spec.clean = rq.clean;
  spec.corrupted = run.corruption.tokens;
  spec.pos = run.corruption.pos;
  spec.correct = run.corruption.correct;
  spec.wrong = run.corruption.wrong;
  spec.direction = rq.direction;
  spec.per_position = rq.positions != PatchRequest::Positions::Whole;
  if (rq.positions == PatchRequest::Positions::EachIfItFits) {
    // (activation_patching refuses whole heads too, in its words, when they would not fit either)
    run.note = per_position_note(file_.cfg, spec.pos + 1);
    if (!run.note.empty()) spec.per_position = false;
  }
  run.result = activation_patching(file_.params, spec, with_ablation_reference(iv));
  return run;
}

nlohmann::json patch_run_json(const std::vector<int>& clean, const PatchRun& run) {
  const Corruption& k = run.corruption;
  const PatchResult& r = run.result;
  auto nested = [](const Tensor<float>& t) {
    nlohmann::json out = nlohmann::json::array();
    const int L = t.shape[0], H = t.shape[1], T = t.shape.size() > 2 ? t.shape[2] : 1;
    for (int l = 0; l < L; ++l) {
      nlohmann::json row = nlohmann::json::array();
      for (int h = 0; h < H; ++h) {
        const std::size_t at = (static_cast<std::size_t>(l) * H + h) * T;
        if (t.shape.size() == 2) row.push_back(t.data[at]);
        else row.push_back(std::vector<float>(t.data.begin() + at, t.data.begin() + at + T));
      }
      out.push_back(row);
    }
    return out;
  };
  nlohmann::json j;
  j["tokens"] = clean;
  j["corruption"] = {{"kind", k.kind},       {"tokens", k.tokens},   {"pos", k.pos},
                     {"correct", k.correct}, {"wrong", k.wrong},     {"changed", k.changed},
                     {"description", k.description}};
  j["direction"] = patch_direction_name(r.direction);
  j["clean_logit_diff"] = r.clean_diff;
  j["corrupted_logit_diff"] = r.corrupted_diff;
  j["normalised"] = r.normalised;
  j["head"] = nested(r.head);
  j["head_effect"] = nested(r.head_effect);
  if (!r.head_pos.data.empty()) {
    j["head_pos"] = nested(r.head_pos);
    j["head_pos_effect"] = nested(r.head_pos_effect);
  }
  if (!r.mlp.data.empty()) {  // [L], and [L][T] at each position
    j["mlp"] = r.mlp.data;
    j["mlp_effect"] = r.mlp_effect.data;
    if (!r.mlp_pos.data.empty()) {
      const int T = r.mlp_pos.shape[1];
      j["mlp_pos_effect"] = nlohmann::json::array();
      for (std::size_t l = 0; l < r.mlp.data.size(); ++l)
        j["mlp_pos_effect"].push_back(std::vector<float>(r.mlp_pos_effect.data.begin() + l * T, r.mlp_pos_effect.data.begin() + (l + 1) * T));
    }
  }
  j["passes"] = r.passes;
  return j;
}

}  // namespace cs
