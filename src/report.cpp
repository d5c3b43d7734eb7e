// Report: the seeds' claims measured on the shipped models (models/REPORT.md and report.json), in
// two steps: measure_report() collects the figures, report_json() writes the claims from them.
#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "analysis/circuits.h"
#include "analysis/corpus_stats.h"
#include "analysis/ioi.h"
#include "ioi_templates.h"
#include "analysis/scores.h"
#include "analysis/training_metrics.h"
#include "io.h"
#include "model.h"

namespace cs {

namespace {

using nlohmann::json;

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}
std::string pct(double x) { return fmt("%.1f%%", 100 * x); }
std::string f3(double x) { return fmt("%.3f", x); }
std::string f2(double x) { return fmt("%.2f", x); }
std::string head_name(int l, int h) { return "L" + std::to_string(l) + "H" + std::to_string(h); }

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("report: cannot read " + path + " (run the recipes first; see models/README)");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Zoo {
  std::string dir;
  ModelFile load(const std::string& name) const { return load_model_file(dir + "/" + name + ".safetensors"); }
  json seeds(const std::string& name) const { return json::parse(read_text(dir + "/" + name + ".seeds.json")); }
  json metrics(const std::string& name) const { return json::parse(read_text(dir + "/" + name + ".metrics.json")); }
  // The extra training seeds of a recipe, trained into DIR/seeds/ by scripts/train-models.sh
  // (circuitscope train RECIPE --seed N --out models/seeds/NAME.seedN.safetensors): seeds 1, 2, ...
  // for as long as NAME.seedN.metrics.json exists. Each is then loaded by seed_name().
  std::vector<int> extra_seeds(const std::string& name) const {
    std::vector<int> out;
    for (int s = 1; std::ifstream(dir + "/" + seed_name(name, s) + ".metrics.json").good(); ++s) out.push_back(s);
    return out;
  }
  // The text models/index.json names for counting a model's corpus statistics ("statistics_text",
  // a path under DIR): the page's leading-terms panel counts on the same file.
  std::string statistics_text(const std::string& name) const {
    const json index = json::parse(read_text(dir + "/index.json"));
    for (const auto& e : index)
      if (e.value("file", "") == name + ".safetensors" && e.contains("statistics_text") && e["statistics_text"].is_string())
        return e["statistics_text"].get<std::string>();
    throw std::runtime_error("report: index.json names no statistics_text for " + name);
  }
  static std::string seed_name(const std::string& name, int seed) {
    return seed == 0 ? name : "seeds/" + name + ".seed" + std::to_string(seed);
  }
};

json claim(const std::string& id, const std::string& seed, const std::string& text, const std::string& seed_figure,
           const std::string& measured, const std::string& verdict, const std::string& view) {
  return {{"id", id}, {"seed", seed}, {"claim", text}, {"seed_figure", seed_figure}, {"measured", measured},
          {"verdict", verdict}, {"view", view}};
}

const char* verdict(bool ok) { return ok ? "reproduced" : "not reproduced"; }

// Repeated random tokens for a model, from the pool the core picks for its tokenizer (for a char
// model, the ids after <BOS> and <UNK>), 8 rows.
RepeatedTokens repeated_tokens(const ModelFile& m, long long seed) {
  RepeatedTokensSpec spec;
  spec.batch = 8;
  spec.seed = seed;
  return make_repeated_tokens(resolve_repeated_tokens(spec, m.tokenizer, m.cfg));
}

// Head scores of a char model on repeated random characters.
HeadScores char_head_scores(const ModelFile& m) { return head_scores(m.params, repeated_tokens(m, 1234)); }

std::pair<int, float> best_of(const Tensor<float>& t) {
  if (t.empty()) return {-1, 0.0f};
  auto it = std::max_element(t.data.begin(), t.data.end());
  return {static_cast<int>(it - t.data.begin()), *it};
}

double metric_at(const json& metrics, int step, const char* key) {
  const json* best = nullptr;
  for (const auto& r : metrics["records"])
    if (!best || std::abs(r["step"].get<int>() - step) < std::abs((*best)["step"].get<int>() - step)) best = &r;
  return best && (*best)[key].is_number() ? (*best)[key].get<double>() : std::nan("");
}

// Largest rise of the validation loss between consecutive records within `window` steps after
// `step` (a "bump" in the loss curve), and where it is.
std::pair<double, int> loss_bump(const json& metrics, int step, int window) {
  double rise = 0;
  int at = -1;
  const auto& recs = metrics["records"];
  for (std::size_t i = 1; i < recs.size(); ++i) {
    int s = recs[i]["step"].get<int>();
    if (s < step - window || s > step + window) continue;
    double d = recs[i]["valid_loss"].get<double>() - recs[i - 1]["valid_loss"].get<double>();
    if (d > rise) rise = d, at = s;
  }
  return {rise, at};
}

// The step where the per-token-loss trajectory (first two principal components) turns most
// sharply: the largest angle between successive displacements, each taken over `span` records.
int trajectory_turn(const json& metrics, int span) {
  if (!metrics.contains("pca")) return -1;
  const auto& c = metrics["pca"]["components"];
  const auto& recs = metrics["records"];
  if (c.size() < 2) return -1;
  const int R = static_cast<int>(c[0].size());
  double best = -1;
  int at = -1;
  for (int i = span; i + span < R; ++i) {
    double ax = c[0][i].get<double>() - c[0][i - span].get<double>(), ay = c[1][i].get<double>() - c[1][i - span].get<double>();
    double bx = c[0][i + span].get<double>() - c[0][i].get<double>(), by = c[1][i + span].get<double>() - c[1][i].get<double>();
    double na = std::hypot(ax, ay), nb = std::hypot(bx, by);
    if (na < 1e-12 || nb < 1e-12) continue;
    double angle = std::acos(std::max(-1.0, std::min(1.0, (ax * bx + ay * by) / (na * nb))));
    if (angle > best) best = angle, at = recs[i]["step"].get<int>();
  }
  return at;
}

// A sentence written twice: the mean per-token loss on its first and second occurrence, and
// where one head (the model's induction head) looks while the second occurrence is read: on the
// token after the earlier copy of the current token (the exact target), on <BOS>, and on any
// earlier position whose preceding one (match1) or two (match2) characters equal the last ones read.
struct RepeatedSentence {
  double first = 0, second = 0;
  double target = 0, bos = 0, match1 = 0, match2 = 0;
};

RepeatedSentence repeated_sentence(const ModelFile& m, const std::string& sentence, int layer, int head) {
  // Characters: <BOS>, the sentence (n), ' ', the sentence (n); the copies are n + 1 apart. A
  // byte-pair token carries the space before a word, so sub-words read <BOS>, " sentence" (n),
  // " sentence" (n), and both copies are the same n tokens, n apart.
  const bool subword = m.tokenizer.kind() == Tokenizer::Kind::Bpe;
  std::vector<int> ids = m.tokenizer.encode_ids(subword ? " " + sentence + " " + sentence : sentence + " " + sentence, true);
  const int T = static_cast<int>(ids.size());
  if (T > m.cfg.n_ctx) throw std::runtime_error("report: the repeated sentence is longer than the context");
  const int n = subword ? (T - 1) / 2 : (T - 2) / 2;
  const int a1 = 1, a2 = subword ? n + 1 : n + 2;  // the first token of each copy
  if (subword && (T != 2 * n + 1 || !std::equal(ids.begin() + a1, ids.begin() + a1 + n, ids.begin() + a2)))
    throw std::runtime_error("report: the two copies of a sentence tokenize differently: " + sentence);
  ActivationCache<float> cache;
  forward(m.params, ids, 1, T, cache);
  LossResult lr = loss_from_logits(cache, next_token_batch(ids, 1, T));
  // Loss index t predicts token t+1.
  RepeatedSentence r;
  for (int t = a1 - 1; t < a1 - 1 + n; ++t) r.first += lr.per_token[t];
  for (int t = a2 - 1; t < a2 - 1 + n; ++t) r.second += lr.per_token[t];
  r.first /= n, r.second /= n;
  // Queries at the second copy's tokens a2..T-1: the earlier copy of token t is t - (a2 - a1),
  // so the token to copy sits one after it.
  const int period = a2 - a1;
  const float* P = cache.layers[layer].pattern.data.data() + static_cast<std::size_t>(head) * T * T;
  for (int t = a2; t < T; ++t) {
    const float* row = P + static_cast<std::size_t>(t) * T;
    r.target += row[t - period + 1];
    r.bos += row[0];
    for (int j = 2; j <= t; ++j) {
      if (ids[j - 1] != ids[t]) continue;
      r.match1 += row[j];
      if (ids[j - 2] == ids[t - 1]) r.match2 += row[j];
    }
  }
  const double q = T - a2;
  r.target /= q, r.bos /= q, r.match1 /= q, r.match2 /= q;
  return r;
}

// Sentences of the held-out text: line-free stretches of 60-100 characters ending in '.', in
// order, at most `count` of them.
std::vector<std::string> held_out_sentences(const std::string& valid, std::size_t count) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < valid.size() && out.size() < count) {
    std::size_t end = valid.find('.', start);
    if (end == std::string::npos) break;
    std::string s = valid.substr(start, end + 1 - start);
    while (!s.empty() && (s[0] == ' ' || s[0] == '\n' || s[0] == '"')) s.erase(0, 1);
    if (s.size() >= 60 && s.size() <= 100 && s.find('\n') == std::string::npos) out.push_back(s);
    start = end + 1;
  }
  if (out.empty()) throw std::runtime_error("report: no suitable sentence in the held-out text");
  return out;
}

std::string token_label(const Tokenizer& t, int id) {
  std::string s = t.token_text(id);
  if (s == "\n") return "\\n";
  if (s == " ") return "␣";
  return s;
}

// ---- Measuring: run the models and collect the figures (no text, no thresholds) ----

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

SeedSweep seed_sweep(const json& s) {
  SeedSweep w;
  w.solved = s["solved"].get<int>();
  w.runs = s["runs"].get<int>();
  w.min_accuracy = s["min_accuracy"].get<double>();
  w.max_accuracy = s["max_accuracy"].get<double>();
  w.mean_accuracy = s["mean_accuracy"].get<double>();
  return w;
}

std::vector<double> as_doubles(const Tensor<float>& t) { return std::vector<double>(t.data.begin(), t.data.end()); }

// A symbolic IOI model on the 60 sequences (and, with cuts, under each composition cut).
IoiFigures measure_ioi(const Zoo& zoo, const std::string& name, bool cuts) {
  ModelFile m = zoo.load(name);
  IoiEvaluation ev = ioi_evaluate(m.params);
  IoiFigures f;
  f.n_heads = m.cfg.n_heads;
  f.sweep = seed_sweep(zoo.seeds(name));
  f.accuracy = ev.accuracy;
  f.mean_logit_diff = ev.mean_logit_diff;
  f.mean_prob_io = ev.mean_prob_io;
  f.mean_prob_s = ev.mean_prob_s;
  f.head_cos_sum = as_doubles(ev.mean_head_cos_sum);
  f.head_cos_diff = as_doubles(ev.mean_head_cos_diff);
  f.head_diff = as_doubles(ev.mean_head_diff);
  if (cuts) {
    for (int k = 0; k < 3; ++k) f.cut_accuracy.push_back(ioi_evaluate(m.params, cut_composition(m.cfg, static_cast<Input>(k))).accuracy);
    f.cut_by_kind = ioi_cut_accuracies(m.params);
    // Every seed that solves the task, from the sweep (circuitscope sweep writes "cuts").
    f.sweep_cuts.assign(std::size(kAblations), std::vector<std::vector<double>>(3));
    const json sweep = zoo.seeds(name);
    for (const auto& s : sweep["seeds"]) {
      if (s["accuracy"].get<double>() != 1.0) continue;
      if (!s.contains("cuts"))
        throw std::runtime_error("report: " + name + ".seeds.json has no cuts for seed " + std::to_string(s["seed"].get<int>()) +
                                 "; run circuitscope sweep models/recipes/" + name + ".json --seeds 10");
      for (std::size_t a = 0; a < std::size(kAblations); ++a)
        for (int k = 0; k < 3; ++k) f.sweep_cuts[a][k].push_back(s["cuts"][ablation_name(kAblations[a])][std::string(1, "QKV"[k])].get<double>());
    }
  }
  return f;
}

// An IOI model on sentence templates, on every split of the task it was trained on.
TemplateFigures measure_templates(const Zoo& zoo, const std::string& name) {
  ModelFile m = zoo.load(name);
  if (!m.info.contains("task")) throw std::runtime_error(name + ": the model file carries no task");
  const IoiTemplateTask task = ioi_template_task(m.info["task"]);
  const std::vector<int> ids = ioi_template_name_ids(task, m.tokenizer);
  TemplateFigures f;
  f.name = name;
  f.n_layers = m.cfg.n_layers;
  f.n_heads = m.cfg.n_heads;
  f.n_names = task.names.size();
  f.n_templates = task.templates.size();
  f.holdout_templates = task.holdout_templates;
  f.holdout_pair_fraction = task.holdout_pair_fraction;
  IoiEvaluation both;
  for (IoiSplit sp : kIoiSplits) {
    IoiEvaluation e = ioi_evaluate(m.params, ioi_template_sequences(task, m.tokenizer, sp, 4000), {}, ids);
    f.splits.push_back({ioi_split_name(sp), e.n, e.accuracy, e.mean_prob_io, e.mean_prob_s});
    if (sp == IoiSplit::Train) f.train = e.accuracy;
    if (sp == IoiSplit::HeldOutTemplates) f.held_out_templates = e.accuracy;
    if (sp == IoiSplit::HeldOutBoth) f.held_out_both = e.accuracy, both = e;
  }
  f.both_prob_io = both.mean_prob_io;
  f.both_prob_s = both.mean_prob_s;
  f.head_sum = as_doubles(both.mean_head_sum);
  f.head_diff = as_doubles(both.mean_head_diff);
  f.head_cos_sum = as_doubles(both.mean_head_cos_sum);
  f.head_cos_diff = as_doubles(both.mean_head_cos_diff);
  // The heads' roles by the core's one rule (ioi_head_roles; the page names them the same way).
  const IoiHeadRoles roles = ioi_head_roles(both.mean_head_diff, both.mean_head_sum, both.mean_logit_diff, 0.0);
  f.additive = roles.additive;
  f.contrastive = roles.contrastive;
  return f;
}

// Phase change, ICL score, loss bump and trajectory turn, from the metrics recorded in training
// of one seed of a recipe.
TrainingFigures measure_training_seed(const Zoo& zoo, const std::string& name, int seed, bool expect_phase_change) {
  json mt = zoo.metrics(Zoo::seed_name(name, seed));
  const auto& recs = mt["records"];
  TrainingFigures f;
  f.name = name;
  f.seed = seed;
  f.expect_phase_change = expect_phase_change;
  f.icl_early = mt["icl_indices"]["early"].get<int>();
  f.icl_late = mt["icl_indices"]["late"].get<int>();
  f.icl_first = recs[0]["icl"].get<double>();
  f.icl_last = recs.back()["icl"].get<double>();
  f.icl_first_se = metric_at(mt, recs[0]["step"].get<int>(), "icl_se");
  f.icl_last_se = metric_at(mt, recs.back()["step"].get<int>(), "icl_se");
  const auto p = phase_change(recs);
  const int pc = f.phase_change = p ? static_cast<int>(p->step) : -1;
  if (p) f.before_phase_change = static_cast<int>(p->before_step);
  if (pc >= 0) {
    f.icl_before = metric_at(mt, std::max(0, pc - 250), "icl");
    f.icl_after = metric_at(mt, pc + 250, "icl");
    f.icl_before_se = metric_at(mt, std::max(0, pc - 250), "icl_se");
    f.icl_after_se = metric_at(mt, pc + 250, "icl_se");
  }
  if (expect_phase_change && pc >= 0) {
    std::tie(f.bump_rise, f.bump_at) = loss_bump(mt, pc, 500);
    f.turn = trajectory_turn(mt, 3);
  }
  return f;
}

// The shipped run's figures, with every seed's (the shipped one first) in .seeds.
TrainingFigures measure_training(const Zoo& zoo, const std::string& name, bool expect_phase_change) {
  TrainingFigures f = measure_training_seed(zoo, name, 0, expect_phase_change);
  f.seeds.push_back(f);
  for (int s : zoo.extra_seeds(name)) f.seeds.push_back(measure_training_seed(zoo, name, s, expect_phase_change));
  return f;
}

// One sentence is a noisy measurement: take the first 50 of the held-out text, each written
// twice, and record the median ratio. Where the induction head looks while it reads the second
// copy says why a model copies well or not (e.g. a head that mostly rests on <BOS>).
RepeatModelFigures measure_repeat(const Zoo& zoo, const std::string& name, const std::map<std::string, HeadScores>& hs,
                                  const std::vector<std::string>& sentences) {
  ModelFile m = zoo.load(name);
  const HeadScores s = hs.count(name) ? hs.at(name) : char_head_scores(m);
  const int i = best_of(s.prefix_matching).first, layer = i / m.cfg.n_heads, head = i % m.cfg.n_heads;
  std::vector<double> ratios;
  RepeatModelFigures r;
  r.name = name;
  r.head = head_name(layer, head);
  RepeatedSentence mean;  // the attention figures averaged over the sentences
  for (const std::string& sentence : sentences) {
    RepeatedSentence x = repeated_sentence(m, sentence, layer, head);
    if (ratios.empty()) r.first_a = x.first, r.first_b = x.second;
    ratios.push_back(x.second / x.first);
    mean.target += x.target, mean.bos += x.bos, mean.match1 += x.match1, mean.match2 += x.match2;
  }
  const double k = static_cast<double>(sentences.size());
  r.target = mean.target / k, r.bos = mean.bos / k, r.match1 = mean.match1 / k, r.match2 = mean.match2 / k;
  r.halved = std::count_if(ratios.begin(), ratios.end(), [](double x) { return x <= 0.5; });
  r.median = median_of(ratios);
  r.seeds.push_back({0, r.head, r.median, r.halved});
  // The extra training seeds: the same sentences, each model with its own induction head.
  for (int seed : zoo.extra_seeds(name)) {
    ModelFile ms = zoo.load(Zoo::seed_name(name, seed));
    const int j = best_of(char_head_scores(ms).prefix_matching).first, l = j / ms.cfg.n_heads, h = j % ms.cfg.n_heads;
    std::vector<double> rs;
    for (const std::string& sentence : sentences) {
      RepeatedSentence x = repeated_sentence(ms, sentence, l, h);
      rs.push_back(x.second / x.first);
    }
    const long halved = std::count_if(rs.begin(), rs.end(), [](double x) { return x <= 0.5; });
    r.seeds.push_back({seed, head_name(l, h), median_of(rs), halved});
  }
  return r;
}

// Which composition feeds the induction head (seed 003): char-2l's layer-0 previous-token head
// into its layer-1 induction head, by composition score and by cutting each path.
KCompositionFigures measure_k_composition(const Zoo& zoo, const HeadScores& s) {
  ModelFile m = zoo.load("char-2l");
  const int H = m.cfg.n_heads;
  int prev = 0, ind = H;
  for (int h = 0; h < H; ++h)
    if (s.previous_token.data[h] > s.previous_token.data[prev]) prev = h;
  for (int h = H; h < 2 * H; ++h)
    if (s.prefix_matching.data[h] > s.prefix_matching.data[ind]) ind = h;
  KCompositionFigures f;
  f.prev_head = prev;
  f.induction_head = ind - H;
  f.prev_score = s.previous_token.data[prev];
  f.prefix_matching = s.prefix_matching.data[ind];
  CompositionScores comp = composition_scores(m.params, 200, 0);
  // Index: [kind, src_layer=0, src_head, dst_layer=1, dst_head] in [3, 2, H, 2, H].
  for (int kind = 0; kind < 3; ++kind)
    f.composition[kind] = comp.scores.data[(((static_cast<std::size_t>(kind) * 2 + 0) * H + prev) * 2 + 1) * H + (ind - H)];
  f.baseline = comp.baseline;
  RepeatedTokens rt = repeated_tokens(m, 99);
  const int L = rt.L;
  auto second_half_loss = [&](const Intervention& iv) {
    ActivationCache<float> c;
    forward(m.params, rt.tokens, rt.B, rt.T(), c, iv);
    Tensor<float> pt = per_token_loss(c);
    double sum = 0;
    int cnt = 0;
    for (int b = 0; b < rt.B; ++b)
      for (int t = L + 1; t < 2 * L; ++t) sum += pt.data[static_cast<std::size_t>(b) * 2 * L + t], ++cnt;
    return sum / cnt;
  };
  f.clean_loss = second_half_loss(Intervention());
  for (int k = 0; k < 3; ++k) {
    Intervention iv;
    iv.cuts.push_back({0, prev, 1, ind - H, static_cast<Input>(k)});
    f.cut_loss[k] = second_half_loss(iv);
  }
  return f;
}

// Copying heads by OV eigenvalues, and the skip-trigrams of the most copying head (seed 000).
CopyingFigures measure_copying(const Zoo& zoo, const std::string& name) {
  ModelFile m = zoo.load(name);
  std::vector<Spectrum> sp = ov_spectra(m.params);
  CopyingFigures f;
  f.model = name;
  for (const Spectrum& s : sp) f.copying_score.push_back(s.copying_score);
  int best = 0;
  for (std::size_t i = 1; i < sp.size(); ++i)
    if (sp[i].copying_score > sp[best].copying_score) best = static_cast<int>(i);
  f.best = best;
  SkipTrigrams st = skip_trigrams(m.params, 0, best, 8, m.tokenizer.bos_id());
  for (std::size_t i = 0; i < st.top.size() && i < 6; ++i) {
    const auto& t = st.top[i];
    f.top.push_back({token_label(m.tokenizer, t.source), token_label(m.tokenizer, t.dest), token_label(m.tokenizer, t.out)});
  }
  return f;
}

// Gradient leading terms (seed 002): early in training the direct path follows the bigram map and
// a head's OV circuit the context map. Measured on char-1l's snapshots: the cosine (each learned
// table centred per row, as softmax ignores a per-row constant) between W_E W_U and
// row-centred(diag(pi) B), and between each head's W_E W_V W_O W_U and row-centred(Phi^T diag(rho)),
// with B, Phi and the frequencies counted on the training corpus (window kLeadingTermsWindow, 8).
// The sub-word model's snapshots the leading-terms row reads (its recipe writes them).
const std::vector<int> kSubwordLeadingSteps = {0, 250, 500, 1000, 2000, 6000};

// name: the one-layer model; corpus: its training text (in the models folder); steps: its snapshots
// to measure, the last being the shipped model itself.
LeadingTermsFigures measure_leading_terms(const Zoo& zoo, const std::string& name, const std::string& corpus_file,
                                          const std::vector<int>& steps) {
  ModelFile m = zoo.load(name);
  const std::string corpus = read_text(zoo.dir + "/" + corpus_file);
  std::vector<int> stream = m.tokenizer.encode_ids(corpus, false);
  CorpusStats st = corpus_stats(stream, m.tokenizer.size(), kLeadingTermsWindow);
  LeadingTermsFigures f;
  f.model = name;
  f.corpus = corpus_file;
  for (int step : steps) {
    const std::string path = step == steps.back() ? zoo.dir + "/" + name + ".safetensors"
                                                  : zoo.dir + "/snapshots/" + name + "/step" + std::to_string(step) + ".safetensors";
    ModelFile snap = load_model_file(path);
    double d = direct_path_cosine(snap.params, st), ov = 0;
    for (double x : ov_cosines(snap.params, st)) ov = std::max(ov, x);  // one layer: its heads
    f.steps.push_back({step, d, ov});
  }
  // The seed's measurement, committed by scripts/train-models.sh (models/README.md).
  const std::string curve_path = zoo.dir + "/" + name + ".leading.json";
  json cj;
  try {
    cj = json::parse(read_text(curve_path));
  } catch (const json::exception& e) {
    throw std::runtime_error("report: " + curve_path + " is not valid JSON (" + e.what() + ")");
  }
  const LeadingCurve c = leading_curve_from_json(cj);
  f.curve_command = "circuitscope leading models/recipes/" + name + ".json --steps " + std::to_string(c.spec.steps) + " --init-scale " +
                    fmt("%g", c.spec.init_scale) + " --lr " + fmt("%g", c.lr) + " --out models/" + name + ".leading.json";
  f.init_scale = c.spec.init_scale;
  f.lr = c.lr;
  for (const auto& p : c.points) {
    double best = -1;
    for (std::size_t h = 0; h < p.ov.size(); ++h) best = std::max(best, std::max(p.ov[h], p.ov_composed[h]));
    f.curve_steps.push_back(p.step);
    f.curve_direct.push_back(p.direct);
    f.curve_best_ov.push_back(best);
    f.curve_gram.push_back(p.unembed_gram);
  }
  return f;
}

// ---- Writing: the claims, their thresholds and verdicts, from the figures alone ----

const char* const kIoiSeed = "001 (minimal IOI circuit)";
const char* const kInductionSeed = "004 (induction heads)";

std::string sweep_line(const SeedSweep& s) {
  return std::to_string(s.solved) + " of " + std::to_string(s.runs) + " random seeds reach 100%; accuracy " + pct(s.min_accuracy) +
         " to " + pct(s.max_accuracy) + ", mean " + pct(s.mean_accuracy);
}

// Seed 001's composition cuts under each ablation kind (the seed does not say which it used): per
// kind, the shipped model's accuracy with each cut and its spread over the random seeds that solve
// the task; then which kind, if any, gives the seed's drops (Q about 100 points, V about 93) on the
// shipped model by the threshold the zero-ablation rows use (at least 80% of the seed's drop).
void write_ablation_claims(const IoiFigures& ev, json& claims) {
  const char* names[3] = {"Q", "K", "V"};
  const char* what[4] = {"removed (zero ablation)", "replaced by its mean over the 60 sequences at each position",
                         "replaced by its mean over the 60 sequences and their positions",
                         "replaced by its output on another of the 60 sequences (resampled, seed 0)"};
  std::vector<std::string> matching;
  std::string summary;
  for (std::size_t a = 0; a < ev.cut_by_kind.size(); ++a) {
    const std::string kind = ablation_name(kAblations[a]);
    std::string measured = "shipped: accuracy " + pct(ev.accuracy) + " ->";
    for (int k = 0; k < 3; ++k) measured += std::string(k ? "," : "") + " " + names[k] + " " + pct(ev.cut_by_kind[a][k]);
    const std::size_t n = ev.sweep_cuts[a][0].size();
    measured += "; over the " + std::to_string(n) + " random seeds that solve the task:";
    for (int k = 0; k < 3; ++k) {
      const auto& v = ev.sweep_cuts[a][k];
      if (v.empty()) continue;
      double sum = 0;
      for (double x : v) sum += x;
      measured += std::string(k ? ";" : "") + " " + names[k] + " " + pct(*std::min_element(v.begin(), v.end())) + " to " +
                  pct(*std::max_element(v.begin(), v.end())) + ", mean " + pct(sum / v.size());
    }
    const double dq = ev.accuracy - ev.cut_by_kind[a][0], dv = ev.accuracy - ev.cut_by_kind[a][2];
    const bool ok = dq >= 0.8 * 1.0 && dv >= 0.8 * 0.93;
    if (ok) matching.push_back(kind);
    int seeds_ok = 0;  // solving seeds (accuracy 100%) whose drops pass the same threshold
    for (std::size_t i = 0; i < n; ++i) seeds_ok += 1 - ev.sweep_cuts[a][0][i] >= 0.8 && 1 - ev.sweep_cuts[a][2][i] >= 0.8 * 0.93;
    summary += (a ? "; " : "") + kind + ": Q drop " + fmt("%.1f", 100 * dq) + ", V drop " + fmt("%.1f", 100 * dv) + " points (" +
               std::to_string(seeds_ok) + " of " + std::to_string(n) + " solving seeds pass)";
    claims.push_back(claim("ioi-2l1h-cut-" + kind, kIoiSeed,
                           std::string("Composition cuts (Q, K, V) with the cut head's contribution ") + what[a],
                           "Q drops about 100%, V about 93%", measured,
                           ok ? "reproduced (Q and V drops at least 80% of the seed's)" : "not reproduced",
                           std::string("#view=ioi&model=ioi-2l1h&cut=Q") + (a ? "&abl=" + kind : std::string())));
  }
  std::string verdict_text = "not reproduced by any of the four kinds";
  if (!matching.empty()) {
    verdict_text = "reproduced with";
    for (std::size_t i = 0; i < matching.size(); ++i) verdict_text += (i ? ", " : " ") + matching[i];
    verdict_text += " ablation";
  }
  claims.push_back(claim("ioi-2l1h-cut-kind", kIoiSeed,
                         "Which ablation of the composition paths gives the seed's drops (the seed does not say which it used)",
                         "Q drops about 100%, V about 93%", "shipped model, " + summary, verdict_text,
                         "#view=ioi&model=ioi-2l1h&cut=V"));
}

// Seed 001 on the symbolic task: 1L1H fails, 1L2H solves it with an additive and a contrastive
// head, no positions cost about 30 points, 2L1H solves it through composition.
void write_ioi_claims(const ReportFigures& f, json& claims) {
  {
    const IoiFigures& ev = f.ioi_1l1h;
    bool ok = ev.accuracy < 0.6 && std::abs(ev.mean_prob_io - ev.mean_prob_s) < 0.1;
    claims.push_back(claim("ioi-1l1h", kIoiSeed, "One layer with one head fails, with near-equal probability on both names",
                           "fails; near-equal probability on the two names",
                           "shipped (median random seed): accuracy " + pct(ev.accuracy) + ", p(IO) " + f3(ev.mean_prob_io) + ", p(S) " +
                               f3(ev.mean_prob_s) + "; " + sweep_line(ev.sweep),
                           verdict(ok), "#view=ioi&model=ioi-1l1h"));
  }
  {
    const IoiFigures& ev = f.ioi_1l2h;
    const SeedSweep& s = ev.sweep;
    bool ok = ev.accuracy == 1.0 && s.solved * 10 >= s.runs * 8;
    claims.push_back(claim("ioi-1l2h", kIoiSeed, "One layer with two heads solves the task", "100%",
                           "shipped: " + pct(ev.accuracy) + " (mean logit difference " + f2(ev.mean_logit_diff) + "); " + sweep_line(s),
                           verdict(ok), "#view=ioi&model=ioi-1l2h"));
    // Additive and contrastive heads.
    const int H = ev.n_heads;
    std::string per_head;
    int additive = -1, contrastive = -1;
    for (int h = 0; h < H; ++h) {
      double cs_ = ev.head_cos_sum[h], cd = ev.head_cos_diff[h];
      per_head += (h ? "; " : "") + head_name(0, h) + ": cos with IO+S " + f2(cs_) + ", with IO-S " + f2(cd) +
                  ", logit-difference share " + f2(ev.head_diff[h]);
      if (std::abs(cs_) > std::abs(cd)) additive = h;
      else contrastive = h;
    }
    claims.push_back(claim("ioi-1l2h-roles", kIoiSeed,
                           "The two heads divide the work: one additive (output along IO+S), one contrastive (along IO-S)",
                           "one additive head, one contrastive head", per_head,
                           verdict(additive >= 0 && contrastive >= 0), "#view=ioi&model=ioi-1l2h"));
  }
  {
    const IoiFigures& ev = f.ioi_1l2h_nopos;
    double mean = ev.sweep.mean_accuracy;
    claims.push_back(claim("ioi-nopos", kIoiSeed, "Without positional embeddings one layer of two heads reaches only about 70%",
                           "about 70%", "mean over random seeds " + pct(mean) + "; shipped (median random seed) " + pct(ev.accuracy) + "; " + sweep_line(ev.sweep),
                           std::abs(mean - 0.7) <= 0.15 ? "reproduced (within 15 points of 70%)" : "not reproduced",
                           "#view=ioi&model=ioi-1l2h-nopos"));
  }
  {
    const IoiFigures& ev = f.ioi_2l1h;
    claims.push_back(claim("ioi-2l1h", kIoiSeed, "Two layers of one head solve the task through composition", "solves it",
                           "shipped (median random seed): " + pct(ev.accuracy) + "; " + sweep_line(ev.sweep), verdict(ev.accuracy == 1.0),
                           "#view=ioi&model=ioi-2l1h"));
    const char* names[3] = {"Q", "K", "V"};
    const double seed_drop[3] = {1.0, -1, 0.93};
    for (int k = 0; k < 3; ++k) {
      const double cut = ev.cut_accuracy[k];
      double drop = ev.accuracy - cut;
      std::string sf = seed_drop[k] < 0 ? "not reported" : "accuracy drops about " + pct(seed_drop[k]);
      std::string v = seed_drop[k] < 0 ? "measured only" : verdict(drop >= 0.8 * seed_drop[k]);
      claims.push_back(claim(std::string("ioi-2l1h-cut-") + names[k], kIoiSeed,
                             std::string("Cutting ") + names[k] + "-composition (layer-0 head into layer-1 head's " + names[k] + " input)",
                             sf, "accuracy " + pct(ev.accuracy) + " -> " + pct(cut) + " (drop " + fmt("%.1f", 100 * drop) + " points)",
                             v, std::string("#view=ioi&model=ioi-2l1h&cut=") + names[k]));
    }
    write_ablation_claims(ev, claims);
  }
}

// IOI on sentence templates (this project's extension of seed 001).
void write_template_claims(const TemplateFigures& f, json& claims) {
  std::string measured;
  for (const TemplateSplitFigures& e : f.splits)
    measured += std::string(measured.empty() ? "" : "; ") + e.split + " " + pct(e.accuracy) + " of " + std::to_string(e.n) +
                " (p(IO) " + f2(e.mean_prob_io) + ", p(S) " + f2(e.mean_prob_s) + ")";
  const std::string arch = std::to_string(f.n_layers) + " layer" + (f.n_layers > 1 ? "s" : "") + " of " +
                           std::to_string(f.n_heads) + " heads";
  const std::string view = "#view=ioi&model=" + f.name;
  const double held_out = f.held_out_both, train = f.train, templates = f.held_out_templates;
  claims.push_back(claim(f.name, "001 (minimal IOI circuit), extended",
                         "On sentence templates (\"When Mary and John went to the store, John gave a drink to\" -> Mary), " + arch +
                             " finds the indirect object for name pairs and templates held out of training",
                         "not in the seed (the symbolic task is solved by 1L2H and 2L1H)",
                         measured + "; " + std::to_string(f.n_names) + " names, " + std::to_string(f.n_templates) +
                             " templates, the last " + std::to_string(f.holdout_templates) + " and " +
                             pct(f.holdout_pair_fraction) + " of name pairs held out",
                         held_out >= 0.9                       ? "solved, held-out sentences included"
                         : train >= 0.9 && templates >= 0.9     ? "solved on held-out templates; held-out name pairs only partly"
                         : train >= 0.9                         ? "memorised, does not generalise"
                         : std::abs(f.both_prob_io - f.both_prob_s) < 0.05 ? "not solved: near-equal probability on IO and S"
                                                                           : "not solved",
                         view));
  // The symbolic model's division of labour: one head along IO+S, one along IO-S. Each head's
  // direct effect on logit(IO) + logit(S) (its sum share) and on logit(IO) - logit(S) (its
  // difference share); the contrastive head is the one with the largest difference share, the
  // additive one the other head with the largest sum share, each counted only when its output points more along its
  // own direction than along the other.
  std::string per_head;
  const int NH = f.n_layers * f.n_heads, add = f.additive, con = f.contrastive;
  for (int i = 0; i < NH; ++i)
    per_head += (per_head.empty() ? "" : "; ") + head_name(i / f.n_heads, i % f.n_heads) + " " + f2(f.head_sum[i]) + " / " +
                f2(f.head_diff[i]);
  const bool is_add = f.head_cos_sum[add] > std::abs(f.head_cos_diff[add]);
  const bool is_con = f.head_cos_diff[con] > std::abs(f.head_cos_sum[con]);
  const std::string who = head_name(add / f.n_heads, add % f.n_heads), whoc = head_name(con / f.n_heads, con % f.n_heads);
  claims.push_back(claim(f.name + "-roles", "001 (minimal IOI circuit), extended",
                         "On sentence templates the heads divide the work as in the symbolic task: additive (IO+S) and contrastive (IO-S) heads",
                         "one additive head, one contrastive head (symbolic task)",
                         "sum / difference share of each head (direct effect on logit(IO) + logit(S) and logit(IO) - logit(S), mean over the held-out sentences): " +
                             per_head + "; most additive " + who + " (cos with IO+S " + f2(f.head_cos_sum[add]) +
                             "), most contrastive " + whoc + " (cos with IO-S " + f2(f.head_cos_diff[con]) + ")",
                         is_add && is_con && add != con ? "appears" : "does not appear", view));
}

// The verdict of a claim over training seeds (ok[i]: seed i meets it; seed 0 is the shipped run):
// "reproduced on 3 of 3 seeds", "partly: reproduced on 1 of 3 seeds (not on the shipped seed)",
// "not reproduced (0 of 3 seeds)"; with one seed, the plain verdict.
std::string seeds_verdict(const std::vector<bool>& ok) {
  const int n = static_cast<int>(ok.size()), k = static_cast<int>(std::count(ok.begin(), ok.end(), true));
  const std::string of = std::to_string(k) + " of " + std::to_string(n) + " seeds";
  if (n == 1) return std::string(verdict(k == 1)) + " (one seed)";
  if (k == 0) return "not reproduced (" + of + ")";
  if (k < n) return "partly: reproduced on " + of + (ok[0] ? " (the shipped seed among them)" : " (not on the shipped seed)");
  return "reproduced on " + of;
}

// "seeds 0, 1, 2" and the figure of each seed, joined: "1350, 1400, 1250".
template <class T, class F>
std::string each_seed(const std::vector<T>& seeds, F&& figure) {
  std::string out;
  for (const T& s : seeds) out += (out.empty() ? "" : ", ") + figure(s);
  return out;
}
std::string seed_numbers(const std::vector<TrainingFigures>& seeds) {
  return "seeds " + each_seed(seeds, [](const TrainingFigures& s) { return std::to_string(s.seed); });
}

// Induction heads by prefix matching (seed 004), on the shipped model and every training seed;
// returns the "char_scores" object (the shipped models').
json write_induction_claims(const ReportFigures& f, json& claims) {
  json char_scores = json::object();
  for (const CharHeadFigures& c : f.char_heads)
    char_scores[c.name] = {{"best_prefix_matching", c.best_prefix_matching}, {"head", c.head}};
  auto row = [&](const char* id, const std::string& name, const std::string& text, const std::string& seed_figure,
                 const std::string& extra, bool (*meets)(double)) {
    const auto c = std::find_if(f.char_heads.begin(), f.char_heads.end(), [&](const CharHeadFigures& x) { return x.name == name; });
    std::vector<bool> ok;
    json seeds = json::array();
    for (const auto& s : c->seeds) {
      ok.push_back(meets(s.best_prefix_matching));
      seeds.push_back({{"seed", s.seed}, {"best_prefix_matching", s.best_prefix_matching}, {"head", s.head}, {"meets", ok.back()}});
    }
    std::string measured = "best prefix-matching score " + name + ": " + f3(c->best_prefix_matching) + " (" + c->head + ")" + extra;
    if (c->seeds.size() > 1)
      measured += "; over seeds " + each_seed(c->seeds, [](const CharHeadFigures::Seed& s) { return std::to_string(s.seed); }) + ": " +
                  each_seed(c->seeds, [](const CharHeadFigures::Seed& s) { return f3(s.best_prefix_matching) + " (" + s.head + ")"; });
    claims.push_back(claim(id, kInductionSeed, text, seed_figure, measured, seeds_verdict(ok), "#view=induction&model=" + name));
    claims.back()["seeds"] = seeds;
  };
  row("induction-2l", "char-2l", "A two-layer model forms an induction head (prefix matching on repeated random tokens)",
      "induction heads form in 2-layer models", "; uniform attention scores about 0.01", [](double x) { return x >= 0.3; });
  row("induction-1l", "char-1l", "One-layer models never form induction heads", "never", "", [](double x) { return x < 0.1; });
  row("induction-smeared", "char-1l-smeared", "Smeared keys let a one-layer model form induction heads", "they do", "",
      [](double x) { return x >= 0.3; });
  return char_scores;
}

// The thresholds of the training claims, for one seed.
bool meets_phase_change(const TrainingFigures& s) { return s.expect_phase_change ? s.phase_change >= 0 : s.phase_change < 0; }
bool meets_icl(const TrainingFigures& s) {
  return s.expect_phase_change ? s.phase_change >= 0 && s.icl_last < s.icl_first - 0.3 : s.phase_change < 0;
}
bool meets_bump(const TrainingFigures& s) { return s.phase_change >= 0 && s.bump_rise > 0.005; }
bool meets_turn(const TrainingFigures& s) { return s.phase_change >= 0 && s.turn >= 0 && std::abs(s.turn - s.phase_change) <= 500; }

// Every seed's training figures and whether it meets each claim (report.json's "seeds").
json training_seeds_json(const TrainingFigures& f) {
  json out = json::array();
  for (const TrainingFigures& s : f.seeds) {
    json j = {{"seed", s.seed}, {"phase_change", s.phase_change}, {"icl_first", s.icl_first}, {"icl_last", s.icl_last},
              {"meets_phase_change", meets_phase_change(s)}, {"meets_icl", meets_icl(s)}};
    if (s.phase_change >= 0) j.update({{"icl_before", s.icl_before}, {"icl_after", s.icl_after}});
    if (s.expect_phase_change && s.phase_change >= 0)
      j.update({{"bump_rise", s.bump_rise}, {"bump_at", s.bump_at}, {"turn", s.turn}, {"meets_bump", meets_bump(s)}, {"meets_turn", meets_turn(s)}});
    out.push_back(j);
  }
  return out;
}

std::vector<bool> seeds_meeting(const TrainingFigures& f, bool (*meets)(const TrainingFigures&)) {
  std::vector<bool> ok;
  for (const TrainingFigures& s : f.seeds) ok.push_back(meets(s));
  return ok;
}

// An ICL figure with its standard error when the metrics file records one.
std::string icl_se(double icl, double se) { return std::isnan(se) ? f3(icl) : f3(icl) + " ± " + f3(se); }

std::string step_or_none(int step) { return step >= 0 ? std::to_string(step) : "none"; }

// Phase change, ICL score, loss bump and trajectory turn of one character model (seed 004): the
// shipped run's figures, then each training seed's, with the verdict over all seeds.
// The loss bump and trajectory turn at the phase change (seed 004), when the model has one.
void write_bump_claim(const TrainingFigures& f, json& claims, const std::string& over, const json& seeds) {
  const std::string& name = f.name;
  const int pc = f.phase_change;
  const bool expect = f.expect_phase_change;
  if (expect && pc >= 0) {
    const double rise = f.bump_rise;
    const int at = f.bump_at, turn = f.turn;
    claims.push_back(claim("bump-" + name, kInductionSeed,
                           "The loss curve bumps and the per-token-loss trajectory turns at the phase change (" + name + ")",
                           "bump and turn coincide with the phase change",
                           "largest validation-loss rise within 500 steps: " + f3(rise) + " nats" +
                               (at >= 0 ? " at step " + std::to_string(at) : std::string("")) +
                               "; sharpest turn of the PCA trajectory at step " + std::to_string(turn) + " (phase change at " +
                               std::to_string(pc) + ")" + over + "rise " +
                               each_seed(f.seeds, [](const TrainingFigures& s) { return s.phase_change >= 0 ? f3(s.bump_rise) : std::string("(none)"); }) +
                               " nats; turn at step " +
                               each_seed(f.seeds, [](const TrainingFigures& s) {
                                 return s.phase_change >= 0 ? std::to_string(s.turn) + " (phase change " + std::to_string(s.phase_change) + ")"
                                                            : std::string("(no phase change)");
                               }),
                           "bump (a rise over 0.005 nats): " + seeds_verdict(seeds_meeting(f, meets_bump)) +
                               "; turn (within 500 steps): " + seeds_verdict(seeds_meeting(f, meets_turn)),
                           "#view=training&model=" + name));
    claims.back()["seeds"] = seeds;
  }
}

// icl_row: whether this model's ICL claim is written here from its training records (false for
// the sub-word models, whose ICL claim is write_subword_icl_claim's, on 4,096 paired tokens rather
// than the records' 512 or 256 windows; a one-layer model's row is still written, as its claim is the
// missing phase change).
void write_training_claims(const TrainingFigures& f, json& claims, bool icl_row = true) {
  const std::string& name = f.name;
  const int pc = f.phase_change;
  const bool expect = f.expect_phase_change;
  const std::string over = "; over " + seed_numbers(f.seeds) + ": ";
  const json seeds = training_seeds_json(f);
  if (expect) {
    claims.push_back(claim("phase-change-" + name, kInductionSeed,
                           "Induction heads form in a phase change: the best head's prefix matching jumps during training (" + name + ")",
                           "a phase change as induction heads form",
                           "phase change (best head's prefix matching passes half its final value) at step " + step_or_none(pc) +
                               " on the shipped seed" + over + "at steps " +
                               each_seed(f.seeds, [](const TrainingFigures& s) { return step_or_none(s.phase_change); }),
                           seeds_verdict(seeds_meeting(f, meets_phase_change)), "#view=training&model=" + name));
    claims.back()["seeds"] = seeds;
  }
  const bool has_se = !std::isnan(f.icl_first_se);
  std::string m = "ICL score (loss at token " + std::to_string(f.icl_late) + " minus token " + std::to_string(f.icl_early) +
                  (has_se ? ", ± its standard error over the validation windows" : ", over the validation windows; this run recorded no standard error") +
                  ") " + icl_se(f.icl_first, f.icl_first_se) + " at step 0 -> " + icl_se(f.icl_last, f.icl_last_se) + " at the end";
  if (pc >= 0) {
    m += "; phase change (best head's prefix matching passes half its final value) at step " + std::to_string(pc) +
         "; ICL " + icl_se(f.icl_before, f.icl_before_se) + " 250 steps before -> " + icl_se(f.icl_after, f.icl_after_se) + " 250 steps after";
  } else {
    m += "; no phase change (no head's prefix matching reaches 0.1)";
  }
  m += over + "ICL score " + each_seed(f.seeds, [](const TrainingFigures& s) { return icl_se(s.icl_first, s.icl_first_se) + " -> " + icl_se(s.icl_last, s.icl_last_se); });
  if (expect) {
    m += "; 250 steps either side of each seed's phase change " + each_seed(f.seeds, [](const TrainingFigures& s) {
           return s.phase_change >= 0 ? icl_se(s.icl_before, s.icl_before_se) + " -> " + icl_se(s.icl_after, s.icl_after_se) : std::string("(none)");
         });
  } else {
    m += "; phase change at steps " + each_seed(f.seeds, [](const TrainingFigures& s) { return step_or_none(s.phase_change); });
  }
  if (expect && !icl_row) {
    write_bump_claim(f, claims, over, seeds);
    return;
  }
  claims.push_back(claim("icl-" + name, kInductionSeed,
                         expect ? "The in-context-learning score improves sharply at the phase change (" + name + ")"
                                : "No phase change in a one-layer model without smeared keys",
                         expect ? "ICL score jumps as induction heads form" : "1-layer models never get it", m,
                         seeds_verdict(seeds_meeting(f, meets_icl)), "#view=training&model=" + name));
  claims.back()["seeds"] = seeds;
  write_bump_claim(f, claims, over, seeds);
}

// A repeated sentence of held-out text is predicted far better the second time (seed 004; the
// bar of half the loss is this project's).
void write_repeat_claim(const RepeatFigures& f, json& claims, const std::string& id_suffix) {
  const std::string k = std::to_string(f.n_sentences);
  const std::string unit = id_suffix.empty() ? "character" : "token";
  std::string measured = "the first " + k + " held-out sentences of 60-100 characters, each written twice, e.g. \"" + f.first_sentence + "\"";
  std::string verdicts;
  json seeds = json::array();
  for (const RepeatModelFigures& r : f.models) {
    const std::string& name = r.name;
    measured += "; " + name + ": median ratio " + f2(r.median) + " (" + std::to_string(r.halved) + " of " + k +
                " sentences at most 0.5; first sentence " + f3(r.first_a) + " -> " + f3(r.first_b) +
                " nats per " + unit + "); while reading the second copy its induction head " + r.head + " puts " + f2(r.target) +
                " of its attention on the token to copy, " + f2(r.match1) + " on positions after the current " + unit + " (" +
                f2(r.match2) + " after the last two) and " + f2(r.bos) + " on <BOS>";
    std::vector<bool> ok;
    for (const auto& s : r.seeds) ok.push_back(s.median <= 0.5);
    if (r.seeds.size() > 1)
      measured += "; " + name + " over seeds " + each_seed(r.seeds, [](const RepeatModelFigures::Seed& s) { return std::to_string(s.seed); }) +
                  ": median ratio " + each_seed(r.seeds, [](const RepeatModelFigures::Seed& s) { return f2(s.median); }) + " (" +
                  each_seed(r.seeds, [](const RepeatModelFigures::Seed& s) { return std::to_string(s.halved); }) + " of " + k +
                  " sentences at most 0.5; induction heads " +
                  each_seed(r.seeds, [](const RepeatModelFigures::Seed& s) { return s.head; }) + ")";
    verdicts += (verdicts.empty() ? "" : "; ") + name + ": " + seeds_verdict(ok) +
                (r.median <= 0.5 ? std::string() : ", the shipped seed " + f2(r.median - 0.5) + " over the bar");
    for (const auto& s : r.seeds)
      seeds.push_back({{"model", name}, {"seed", s.seed}, {"head", s.head}, {"median", s.median}, {"halved", s.halved}, {"meets", s.median <= 0.5}});
  }
  std::string names;
  for (const RepeatModelFigures& r : f.models) names += (names.empty() ? "" : ", ") + r.name;
  claims.push_back(claim("repeat-sentence" + id_suffix, kInductionSeed,
                         "A repeated sentence of held-out text is predicted far better the second time (" + names +
                             (id_suffix.empty() ? ")" : "; sub-word tokens on natural text)"),
                         "second occurrence at most half the loss of the first (this project's bar)", measured, verdicts,
                         "#view=induction&model=" + f.models.at(0).name));
  claims.back()["seeds"] = seeds;
}

// K-composition feeds the induction head when its score beats the random baseline and cutting it
// does at least half the damage of the most damaging cut. Q-composition can matter as much: a
// head matching the last two characters takes the previous one into its query from the same
// previous-token head, and the verdict says so (seed 003).
void write_k_composition_claim(const KCompositionFigures& f, json& claims) {
  const double* at = f.composition;
  std::string m_text = "previous-token head " + head_name(0, f.prev_head) + " (score " + f2(f.prev_score) + "), induction head " +
                       head_name(1, f.induction_head) + " (prefix matching " + f2(f.prefix_matching) + "); composition scores Q " +
                       f3(at[0]) + ", K " + f3(at[1]) + ", V " + f3(at[2]) + " (random baseline " + f3(f.baseline) +
                       "); loss on the repeated half " + f3(f.clean_loss);
  double rise[3];
  const char* names[3] = {"Q", "K", "V"};
  for (int k = 0; k < 3; ++k) {
    m_text += std::string(", with ") + names[k] + " cut " + f3(f.cut_loss[k]);
    rise[k] = f.cut_loss[k] - f.clean_loss;
  }
  const double most = std::max({rise[0], rise[1], rise[2]});
  std::string v = verdict(most > 0 && rise[1] >= 0.5 * most && at[1] > f.baseline);
  if (most > 0 && rise[0] >= 0.5 * most)
    v += "; Q-composition is needed as well (its cut adds " + f2(rise[0]) + " nats, K's " + f2(rise[1]) + ")";
  claims.push_back(claim("k-composition", "003 (mathematical framework)",
                         "The induction head is fed by K-composition with a previous-token head (char-2l)",
                         "K-composition with a previous-token head", m_text, v, "#view=circuits&model=char-2l"));
}

// Copying heads by OV eigenvalues, and skip-trigrams (seed 000).
// id_suffix: "" for the character model's rows, "-bpe" for the sub-word model's.
void write_copying_claims(const CopyingFigures& f, json& claims, const std::string& id_suffix) {
  const std::vector<double>& sp = f.copying_score;
  int copying = 0;
  std::string per;
  for (std::size_t i = 0; i < sp.size(); ++i) {
    copying += sp[i] > 0;
    per += (i ? ", " : "") + head_name(0, static_cast<int>(i)) + " " + f2(sp[i]);
  }
  const bool subword = !id_suffix.empty();
  claims.push_back(claim("copying-heads" + id_suffix, "000 (one-layer circuits)",
                         "Most heads of a one-layer model copy: positive OV eigenvalues (copying statistic sum(l)/sum|l| > 0) (" + f.model +
                             (subword ? ", sub-word tokens on natural text, where the paper looked)" : ")"),
                         "10 of 12 heads", std::to_string(copying) + " of " + std::to_string(sp.size()) + " heads (" + per + ")",
                         verdict(copying * 2 > static_cast<int>(sp.size())), "#view=circuits&model=" + f.model));
  // Top skip-trigrams of the head with the largest copying statistic.
  std::string list;
  for (std::size_t i = 0; i < f.top.size(); ++i) {
    const auto& t = f.top[i];
    list += (i ? "; " : "") + std::string("\"") + t.source + "\" ... \"" + t.dest + "\" -> \"" + t.out + "\"";
  }
  claims.push_back(claim("skip-trigrams" + id_suffix, "000 (one-layer circuits)",
                         "One-layer heads implement skip-trigrams (source ... destination -> output) (" + f.model + ")",
                         "e.g. \"keep ... in -> mind\"", head_name(0, f.best) + ": " + list, "shown",
                         "#view=circuits&model=" + f.model + "&head=L0H" + std::to_string(f.best)));
}

// The ICL score on natural text with sub-word tokens (seed 004, the paper's own setting): the
// loss at a late token minus an early one (the paper: 500 and 50), on held-out text, with its
// standard error; the shipped files use the paired estimator (each held-out token scored with 500
// tokens before it and with 50). The paper: below 0.15 nats (in size) before the phase change, about
// 0.4 after, for every model of 2 layers or more; never such a rise for 1 layer. Thresholds (this
// project's reading): for the two-layer model, "reproduced" when the score at the last snapshot
// before its phase change is above -kIclBefore, at the end of training at most -kIclAfter, and the
// fall exceeds 3 combined standard errors; "partly" when only the fall is significant. For the
// one-layer model without smeared keys, "reproduced" when it falls by less than kIclNoRise over the
// same steps. A zero-layer model, when the family has one, is the control: its score should be 0
// within 3 standard errors.
constexpr double kIclBefore = 0.15, kIclAfter = 0.3, kIclNoRise = 0.1;

// The models whose ICL files the sub-word row reads, the two-layer model first: trained mostly on
// plain prose with a context of 512 tokens, so that the paper's tokens 500 and 50 are inside the
// positions training reached (models/recipes/bpe-2l-prose.json and bpe-1l-prose.json).
const std::vector<std::string> kIclFamily = {"bpe-2l-prose", "bpe-1l-prose"};

const IclPoint* icl_point_at_or_before(const SubwordIclRun::Model& m, int step) {
  const IclPoint* best = nullptr;
  for (const IclPoint& p : m.points)
    if (p.step <= step) best = &p;
  return best;
}
std::string icl_pm(const IclPoint& p) { return fmt("%+.3f", p.icl) + " ± " + f3(p.se); }

// One run's ICL figures judged: the shipped run's text and verdict, and whether each claim holds.
struct IclJudgement {
  std::string measured, verdict;
  bool two_layer = false;        // the 2-layer score jumps (the verdict "reproduced")
  bool falls = false;            // the 2-layer score falls by more than 3 combined standard errors (at any level)
  std::optional<bool> one_layer; // the 1-layer model without smeared keys does not rise (none: no such model scored on this seed)
  int before_step = -1, end_step = -1;  // before_step >= 0: a snapshot before the 2-layer phase change was scored
  std::string figures;           // "bpe-2l-prose +0.025 ± 0.012 -> -0.196 ± 0.017; ..." (every model)
  std::string losses;            // the 2-layer model's loss with the late and the early context, before -> after (paired files)
  json models = json::array();   // [{model, before, before_se, after, after_se}]
};

IclJudgement judge_subword_icl(const SubwordIclRun& f) {
  IclJudgement j;
  const int pc = f.phase_change;
  const SubwordIclRun::Model& two = f.models.at(0);
  const IclPoint* b = pc >= 0 && f.before_step >= 0 ? icl_point_at_or_before(two, f.before_step) : nullptr;
  if (!b) {
    j.measured = pc < 0 ? "no phase change in " + two.name + " (no head's prefix matching reaches 0.1); at the end:"
                        : "the ICL file of " + two.name + " has no snapshot at or before step " + std::to_string(f.before_step) +
                              ", two records before the phase change at step " + std::to_string(pc) + "; at the end:";
    for (const auto& m : f.models) j.measured += " " + m.name + " " + icl_pm(m.points.back()) + ";";
    j.verdict = "not measured: no before and after";
    return j;
  }
  const IclPoint& a = two.points.back();
  j.before_step = b->step;
  j.end_step = a.step;
  if (a.paired && b->paired)
    j.losses = two.name + "'s loss on the same tokens with " + std::to_string(f.icl_late) + " tokens before them " + f3(b->late_loss) + " -> " +
               f3(a.late_loss) + ", with " + std::to_string(f.icl_early) + " " + f3(b->early_loss) + " -> " + f3(a.early_loss);
  std::string others;
  for (const auto& m : f.models) {
    const IclPoint* mb = icl_point_at_or_before(m, b->step);
    if (!mb) throw std::runtime_error("report: the ICL file of " + m.name + " (seed " + std::to_string(f.seed) + ") has no snapshot at or before step " +
                                      std::to_string(b->step));
    const IclPoint& ma = m.points.back();
    j.figures += (j.figures.empty() ? "" : "; ") + m.name + " " + icl_pm(*mb) + " -> " + icl_pm(ma);
    j.models.push_back({{"model", m.name}, {"before_step", mb->step}, {"before", mb->icl}, {"before_se", mb->se}, {"after", ma.icl}, {"after_se", ma.se}});
    if (ma.paired) j.models.back().update({{"before_late_loss", mb->late_loss}, {"before_early_loss", mb->early_loss},
                                           {"after_late_loss", ma.late_loss}, {"after_early_loss", ma.early_loss}});
    const double fall = ma.icl - mb->icl;
    if (m.n_layers == 1 && !m.smeared) {
      j.one_layer = fall > -kIclNoRise;
      others += "; 1-layer (" + m.name + "): " + (*j.one_layer ? "no such rise, reproduced" : "falls by " + f3(-fall) + ", not reproduced");
    }
    if (m.n_layers == 0)
      others += "; 0-layer control: " + std::string(std::abs(ma.icl) <= 3 * ma.se ? "0 within 3 standard errors" : "not 0 (" + icl_pm(ma) + ")");
  }
  j.measured = "phase change of " + two.name + " at step " + std::to_string(pc) + "; at step " + std::to_string(b->step) +
               " (the last snapshot at least two records before it: the record just before is already changing) -> step " + std::to_string(a.step) + " (the end): " + j.figures + (j.losses.empty() ? "" : " (" + j.losses + ")");
  const double fall = a.icl - b->icl, se = std::sqrt(a.se * a.se + b->se * b->se);
  const bool significant = j.falls = fall < -3 * se;
  j.two_layer = significant && b->icl > -kIclBefore && a.icl <= -kIclAfter;
  std::string v;
  if (j.two_layer) v = "reproduced";
  else if (significant) v = "partly reproduced: the score falls by " + f3(-fall) + " ± " + f3(se) + " nats, but it is " + fmt("%+.3f", b->icl) +
                            " before (the paper: above -" + f2(kIclBefore) + ") and " + fmt("%+.3f", a.icl) + " after (the paper: about -0.4)";
  else v = "not reproduced: no significant fall (" + fmt("%+.3f", fall) + " ± " + f3(se) + " nats)";
  j.verdict = "2-layer: " + v + others;
  return j;
}

void write_subword_icl_claim(const SubwordIclFigures& f, json& claims) {
  int windows = 0;
  double worst_se = 0;
  bool paired = true;
  for (const SubwordIclRun& run : f.seeds)
    for (const auto& m : run.models)
      for (const auto& p : m.points) windows = std::max(windows, p.windows), worst_se = std::max(worst_se, p.se), paired = paired && p.paired;
  const SubwordIclRun& first = f.seeds.at(0);  // the shipped run
  const std::string late = std::to_string(first.icl_late), early = std::to_string(first.icl_early);
  const std::string score =
      paired ? "ICL score (the loss of a held-out token with " + late + " tokens before it minus with " + early + ", mean over " +
                   std::to_string(windows) + " tokens spread over the held-out text ± standard error over blocks of them; largest standard error " +
                   f3(worst_se) + ")"
             : "ICL score (loss at token " + late + " minus token " + early + ", mean ± standard error over " + std::to_string(windows) +
                   " evenly spaced held-out windows; largest standard error " + f3(worst_se) + ")";
  const IclJudgement shipped = judge_subword_icl(first);
  std::string measured = score + ": " + shipped.measured, v = shipped.verdict;
  json seeds = json::array();
  std::vector<bool> two_ok, falls, one_ok;
  std::string spread;
  for (const SubwordIclRun& run : f.seeds) {
    const IclJudgement j = run.seed == 0 ? shipped : judge_subword_icl(run);
    two_ok.push_back(j.two_layer);
    falls.push_back(j.falls);
    if (j.one_layer) one_ok.push_back(*j.one_layer);
    seeds.push_back({{"seed", run.seed}, {"phase_change", run.phase_change}, {"before_step", j.before_step}, {"end_step", j.end_step},
                     {"models", j.models}, {"meets_two_layer", j.two_layer}, {"falls", j.falls}});
    if (j.one_layer) seeds.back()["meets_one_layer"] = *j.one_layer;
    if (run.seed == 0) continue;
    spread += "; seed " + std::to_string(run.seed) + ": " +
              (j.before_step >= 0 ? "phase change at step " + std::to_string(run.phase_change) + ", step " + std::to_string(j.before_step) + " -> " +
                                       std::to_string(j.end_step) + ": " + j.figures + (j.losses.empty() ? "" : " (" + j.losses + ")")
                                 : j.measured);
  }
  const std::string& two = first.models.at(0).name;
  if (f.seeds.size() > 1) {
    measured += "; the other training seeds (the models retrained with that seed; the snapshot before that seed's " + two + " phase change and the end)" +
                spread;
    const auto n_falls = std::count(falls.begin(), falls.end(), true);
    v = "2-layer jump: " + seeds_verdict(two_ok) + ", a fall of over 3 standard errors on " + std::to_string(n_falls) + " of " +
        std::to_string(falls.size()) + " seeds" + (one_ok.empty() ? "" : "; 1-layer no rise: " + seeds_verdict(one_ok)) + ". Shipped seed: " + v;
  }
  std::string names;
  for (const auto& m : first.models) names += (names.empty() ? "" : ", ") + m.name + (m.n_layers == 0 ? " (the control)" : "");
  claims.push_back(claim("icl-jump-bpe", kInductionSeed,
                         "On natural text with sub-word tokens the in-context-learning score improves sharply at the phase change of a two-layer "
                         "model, and not in a one-layer model (" + names + ")",
                         "below 0.15 nats before, about 0.4 after (tokens 500 and 50; 2+ layers); 1-layer models never", measured, v,
                         "#view=training&model=" + two));
  claims.back()["seeds"] = seeds;
}

// NAME(.seedN).icl.json as its points; none when the file is missing and not `required`.
std::optional<SubwordIclRun::Model> read_icl_file(const Zoo& zoo, const std::string& name, int seed, int early, int late, bool required) {
  const std::string stem = Zoo::seed_name(name, seed);
  const std::string path = zoo.dir + "/" + stem + ".icl.json";
  if (!std::ifstream(path).good()) {
    if (!required) return std::nullopt;
    throw std::runtime_error("report: " + stem + ".icl.json is missing (scripts/train-models.sh writes it)");
  }
  SubwordIclRun::Model m;
  m.name = name;
  const ModelFile mf = zoo.load(stem);
  m.n_layers = mf.cfg.n_layers;
  m.smeared = mf.cfg.smeared_keys;
  const json j = json::parse(read_text(path));
  if (!j.is_array() || j.empty()) throw std::runtime_error("report: " + stem + ".icl.json must be a non-empty array");
  for (const auto& r : j) {
    IclPoint p;
    p.step = r.at("step").get<int>();
    p.icl = r.at("icl").get<double>();
    p.se = r.at("se").get<double>();
    p.windows = r.at("windows").get<int>();
    p.paired = r.value("paired", false);
    if (p.paired) p.late_loss = r.at("late_loss").get<double>(), p.early_loss = r.at("early_loss").get<double>();
    if (r.at("early").get<int>() != early || r.at("late").get<int>() != late)
      throw std::runtime_error("report: " + stem + ".icl.json scores tokens " + std::to_string(r.at("late").get<int>()) + " and " +
                               std::to_string(r.at("early").get<int>()) + ", not the training metrics' " + std::to_string(late) + " and " +
                               std::to_string(early));
    m.points.push_back(p);
  }
  std::sort(m.points.begin(), m.points.end(), [](const IclPoint& a, const IclPoint& b) { return a.step < b.step; });
  return m;
}

// two_layer: the family's two-layer model's training figures, with .seeds (the shipped run first).
// Each seed's ICL files are scored at the snapshot before that seed's two-layer phase change and at
// the end (scripts/train-models.sh): the two-layer model's for every seed, the others' where they exist.
SubwordIclFigures measure_subword_icl(const Zoo& zoo, const TrainingFigures& two_layer, const std::vector<std::string>& family) {
  SubwordIclFigures f;
  for (const TrainingFigures& t : two_layer.seeds) {
    SubwordIclRun run;
    run.seed = t.seed;
    run.phase_change = t.phase_change;
    run.before_step = t.before_phase_change;
    run.icl_early = two_layer.icl_early;
    run.icl_late = two_layer.icl_late;
    for (const std::string& name : family) {
      // A control may be scored on fewer seeds than the two-layer model; the two-layer model's
      // file, and every model's on the shipped seed, is always needed.
      auto m = read_icl_file(zoo, name, t.seed, run.icl_early, run.icl_late, name == family[0] || t.seed == 0);
      if (m) run.models.push_back(std::move(*m));
    }
    f.seeds.push_back(std::move(run));
  }
  return f;
}

// Gradient leading terms (seed 002). The seed's definition: from small weights, under full-batch
// gradient descent, the learned weights keep a cosine above 0.99 with their leading terms early in
// training ("e.g. > 0.99 for the attention and value matrices"). Verdict, read generously: reproduced
// when, at some step 1..N of the committed curve, the direct path exceeds kLeadingCosine with the
// bigram term, and at some step the best head's OV circuit exceeds it with its term (the context
// term, or the context term composed with B^T B).
constexpr double kLeadingCosine = 0.99;
void write_leading_terms_claim(const LeadingTermsFigures& f, json& claims, const std::string& id_suffix) {
  std::size_t peak_direct = 0, peak_ov = 0;
  std::string at;
  for (std::size_t i = 0; i < f.curve_steps.size(); ++i) {
    const int s = f.curve_steps[i];
    if (s >= 1 && (f.curve_steps[peak_direct] < 1 || f.curve_direct[i] > f.curve_direct[peak_direct])) peak_direct = i;
    if (s >= 1 && (f.curve_steps[peak_ov] < 1 || f.curve_best_ov[i] > f.curve_best_ov[peak_ov])) peak_ov = i;
    if (s == 1 || s == 10 || s == 50 || i + 1 == f.curve_steps.size())
      at += (at.empty() ? "" : "; ") + std::string("step ") + std::to_string(s) + ": direct path " + f3(f.curve_direct[i]) +
            ", best OV " + f3(f.curve_best_ov[i]) + ", W_U Gram with B^T B " + f3(f.curve_gram[i]);
  }
  const bool have = f.curve_steps.size() > 1;
  const double top_direct = have ? f.curve_direct[peak_direct] : 0, top_ov = have ? f.curve_best_ov[peak_ov] : 0;
  const bool ok = have && top_direct > kLeadingCosine && top_ov > kLeadingCosine;
  std::string line = "from weights scaled by " + fmt("%g", f.init_scale) + ", full-batch gradient descent (lr " + fmt("%g", f.lr) +
                     "): " + at;
  if (have)
    line += "; highest: direct path " + f3(top_direct) + " at step " + std::to_string(f.curve_steps[peak_direct]) + ", OV " + f3(top_ov) +
            " at step " + std::to_string(f.curve_steps[peak_ov]);
  line += " (`" + f.curve_command + "`)";
  std::string normal;
  for (const auto& s : f.steps)
    normal += (normal.empty() ? "" : "; ") + std::string("step ") + std::to_string(s.step) + " direct " + f2(s.direct) + ", best OV " + f2(s.best_ov);
  line += ". From the normal initialisation (shipped snapshots, AdamW, context window 8, statistics counted on " + f.corpus + "): " + normal;
  std::string why = ok ? "" : ": the highest cosine stays below 0.99 (the tables here are products of learned factors, W_E W_U and "
                                "W_E W_V W_O W_U, not the seed's single V x V matrices)";
  claims.push_back(claim("leading-terms" + id_suffix, "002 (gradient leading terms)",
                         "Early in training, from small weights, the direct path follows the bigram leading term and the OV circuits the context leading term (" +
                             f.model + ")",
                         "cosine similarity above 0.99 early in training (attention and value matrices)", line,
                         std::string(verdict(ok)) + why, "#view=training&model=" + f.model));
}

}  // namespace

ReportFigures measure_report(const std::string& models_dir) {
  Zoo zoo{models_dir};
  ReportFigures f;
  f.ioi_1l1h = measure_ioi(zoo, "ioi-1l1h", false);
  f.ioi_1l2h = measure_ioi(zoo, "ioi-1l2h", false);
  f.ioi_1l2h_nopos = measure_ioi(zoo, "ioi-1l2h-nopos", false);
  f.ioi_2l1h = measure_ioi(zoo, "ioi-2l1h", true);
  for (const char* name : {"ioi-templates-1l2h", "ioi-templates-2l"}) f.templates.push_back(measure_templates(zoo, name));
  std::map<std::string, HeadScores> hs;
  for (const char* name : {"char-1l", "char-2l", "char-1l-smeared"}) {
    ModelFile m = zoo.load(name);
    hs[name] = char_head_scores(m);
    auto [i, v] = best_of(hs[name].prefix_matching);
    f.char_heads.push_back({name, v, head_name(i / m.cfg.n_heads, i % m.cfg.n_heads), {}});
    f.char_heads.back().seeds.push_back({0, v, f.char_heads.back().head});
    for (int seed : zoo.extra_seeds(name)) {
      ModelFile ms = zoo.load(Zoo::seed_name(name, seed));
      auto [j, w] = best_of(char_head_scores(ms).prefix_matching);
      f.char_heads.back().seeds.push_back({seed, w, head_name(j / ms.cfg.n_heads, j % ms.cfg.n_heads)});
    }
  }
  const std::pair<const char*, bool> runs[] = {{"char-2l", true}, {"char-1l-smeared", true}, {"char-1l", false}};
  for (const auto& [name, expect_phase_change] : runs) f.training.push_back(measure_training(zoo, name, expect_phase_change));
  const std::vector<std::string> sentences = held_out_sentences(read_text(models_dir + "/corpus/valid.txt"), 50);
  f.repeat.n_sentences = sentences.size();
  f.repeat.first_sentence = sentences[0];
  for (const char* name : {"char-2l", "char-1l-smeared", "char-2l-smeared"}) f.repeat.models.push_back(measure_repeat(zoo, name, hs, sentences));
  f.k_composition = measure_k_composition(zoo, hs["char-2l"]);
  f.copying = measure_copying(zoo, "char-1l");
  f.leading_terms = measure_leading_terms(zoo, "char-1l", zoo.statistics_text("char-1l"), {0, 250, 500, 1000, 2000, 6000});
  const std::pair<const char*, bool> subword_runs[] = {{"bpe-2l", true}, {"bpe-1l-smeared", true}, {"bpe-1l", false}, {"bpe-2l-prose", true},
                                                       {"bpe-1l-prose", false}};
  for (const auto& [name, expect_phase_change] : subword_runs) f.subword_training.push_back(measure_training(zoo, name, expect_phase_change));
  const auto two_layer = std::find_if(f.subword_training.begin(), f.subword_training.end(), [](const TrainingFigures& t) { return t.name == kIclFamily[0]; });
  if (two_layer == f.subword_training.end()) throw std::logic_error("report: " + kIclFamily[0] + " is not among the sub-word runs measured");
  f.subword_icl = measure_subword_icl(zoo, *two_layer, kIclFamily);
  const std::vector<std::string> subword_sentences = held_out_sentences(read_text(models_dir + "/corpus/gutenberg-valid.txt"), 50);
  f.subword_repeat.n_sentences = subword_sentences.size();
  f.subword_repeat.first_sentence = subword_sentences[0];
  for (const char* name : {"bpe-2l", "bpe-1l-smeared"}) f.subword_repeat.models.push_back(measure_repeat(zoo, name, hs, subword_sentences));
  f.subword_copying = measure_copying(zoo, "bpe-1l");
  f.subword_leading_terms = measure_leading_terms(zoo, "bpe-1l", zoo.statistics_text("bpe-1l"), kSubwordLeadingSteps);
  return f;
}

// The outcome of a verdict this file wrote (see report.h).
std::string claim_outcome(const std::string& verdict) {
  bool yes = false, no = false, partly = false, measured = false;
  auto starts = [](const std::string& s, const char* w) { return s.rfind(w, 0) == 0; };
  std::size_t at = 0;
  while (at <= verdict.size()) {
    std::size_t end = verdict.find("; ", at);
    if (end == std::string::npos) end = verdict.size();
    std::string part = verdict.substr(at, end - at);
    at = end + 2;
    // "char-2l: reproduced on ...", "bump (a rise over 0.005 nats): reproduced ...": the verdict
    // after the label (a part whose label holds no verdict word).
    const std::size_t colon = part.find(": ");
    if (colon != std::string::npos && !starts(part, "partly") && !starts(part, "not ") && !starts(part, "reproduced") &&
        !starts(part, "solved"))
      part = part.substr(colon + 2);
    if (part.find("partly") != std::string::npos) partly = true;
    else if (starts(part, "not ") || starts(part, "does not") || starts(part, "memorised")) no = true;
    else if (starts(part, "reproduced") || starts(part, "solved") || starts(part, "appears")) yes = true;
    else if (starts(part, "measured only") || starts(part, "shown")) measured = true;
  }
  if (partly || (yes && no)) return "partly";
  if (no) return "not reproduced";
  if (yes) return "reproduced";
  if (measured) return "measured";
  throw std::logic_error("report: the verdict \"" + verdict + "\" has no outcome");
}

json report_summary(const json& claims) {
  int n[4] = {0, 0, 0, 0};
  const char* kinds[4] = {"reproduced", "partly", "not reproduced", "measured"};
  for (const auto& c : claims)
    for (int k = 0; k < 4; ++k)
      if (c["outcome"] == kinds[k]) ++n[k];
  const int total = static_cast<int>(claims.size());
  std::string sentence = std::to_string(n[0]) + " of " + std::to_string(total) + " claims reproduced; " + std::to_string(n[1]) +
                         " partly (on some random seeds, or one part of the claim and not another); " + std::to_string(n[2]) +
                         " not reproduced at these models' scale (each row says what was measured instead); " + std::to_string(n[3]) +
                         " measured and shown without a threshold.";
  return {{"total", total}, {"reproduced", n[0]}, {"partly", n[1]}, {"not_reproduced", n[2]}, {"measured", n[3]}, {"sentence", sentence}};
}

json report_json(const ReportFigures& f) {
  json claims = json::array();
  write_ioi_claims(f, claims);
  for (const TemplateFigures& t : f.templates) write_template_claims(t, claims);
  json char_scores = write_induction_claims(f, claims);
  for (const TrainingFigures& t : f.training) write_training_claims(t, claims);
  write_repeat_claim(f.repeat, claims, "");
  write_k_composition_claim(f.k_composition, claims);
  write_copying_claims(f.copying, claims, "");
  write_leading_terms_claim(f.leading_terms, claims, "");
  for (const TrainingFigures& t : f.subword_training) write_training_claims(t, claims, false);
  write_subword_icl_claim(f.subword_icl, claims);
  write_repeat_claim(f.subword_repeat, claims, "-bpe");
  write_copying_claims(f.subword_copying, claims, "-bpe");
  write_leading_terms_claim(f.subword_leading_terms, claims, "-bpe");
  for (auto& c : claims) c["outcome"] = claim_outcome(c["verdict"].get<std::string>());
  return {{"claims", claims}, {"char_scores", char_scores}, {"summary", report_summary(claims)}};
}

json build_report(const std::string& models_dir) { return report_json(measure_report(models_dir)); }


std::string report_markdown(const json& report) {
  std::string out =
      "# Reproduction report\n\n"
      "Generated by `circuitscope report` from the shipped models in this folder; do not edit by hand.\n"
      "Each row is a claim of one of the source documents (the papers this project was built from, numbered\n"
      "000 to 004) that these small models can test, with the figure the source gives, the figure measured here,\n"
      "and the verdict by the threshold stated in `src/report.cpp`. \"Random seeds\" are training runs that differ\n"
      "only in their random initialisation and data order.\n\n";
  if (report.contains("summary")) out += report["summary"]["sentence"].get<std::string>() + "\n\n";
  out += "| claim | source | source's figure | measured | verdict |\n|---|---|---|---|---|\n";
  auto esc = [](std::string s) {
    std::string o;
    for (char c : s) {
      if (c == '|') o += "\\|";
      else if (c == '\n') o += " ";
      else o += c;
    }
    return o;
  };
  for (const auto& c : report["claims"])
    out += "| " + esc(c["claim"]) + " | " + esc(c["seed"]) + " | " + esc(c["seed_figure"]) + " | " + esc(c["measured"]) + " | " +
           esc(c["verdict"]) + " |\n";
  return out;
}

}  // namespace cs
