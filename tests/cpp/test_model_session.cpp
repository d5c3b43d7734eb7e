// The page's calls on one model (cs::ModelSession), which the WASM boundary only converts: the
// sentence-template task comes from the file, spectra tabulate every head, batches and splits
// are checked with sentences, and run() keeps its cache between calls.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "analysis/model_session.h"
#include "analysis/ioi.h"
#include "checks.h"
#include "data.h"
#include "test_util.h"

namespace cs {
namespace {

TEST(ModelSession, TemplateModelCarriesItsTaskSplitsAndNames) {
  const ModelSession m(load_model_file("models/ioi-templates-1l2h.safetensors"));
  ASSERT_NE(m.ioi_task(), nullptr);
  const nlohmann::json j = m.ioi_task_json();
  ASSERT_EQ(j["splits"].size(), 4u);
  EXPECT_EQ(j["splits"][1]["split"], "held-out pairs");
  EXPECT_EQ(j["template_info"].size(), m.ioi_task()->templates.size());
  EXPECT_EQ(j["template_info"].back()["held_out"], m.ioi_task()->holdout_templates > 0);
  EXPECT_EQ(m.ioi_name_ids().size(), m.ioi_task()->names.size());
  const Batch b = m.ioi_sequences(std::nullopt);  // held-out both
  EXPECT_GT(b.B, 0);
  EXPECT_LE(b.B, ModelSession::kMaxTemplateRows);
  // The whole task: each row cut after its last word (no <PAD>), analysed there.
  const int pad = m.file().tokenizer.find("<PAD>");
  const auto rows = m.ioi_all(Intervention(), IoiSplit::Train);
  ASSERT_FALSE(rows.empty());
  for (const auto& r : rows) {
    EXPECT_NE(r.tokens.back(), pad);
    EXPECT_EQ(r.analysis.pos, static_cast<int>(r.tokens.size()) - 1);
  }
  const IoiSentence s = m.ioi_sentence({0, 0, 1, 1, 0, 0});
  // The roles: the IO name once, the S name twice, at the tokens that are those names.
  ASSERT_EQ(s.roles.size(), s.tokens.size());
  EXPECT_EQ(std::count(s.roles.begin(), s.roles.end(), "IO"), 1);
  EXPECT_EQ(std::count(s.roles.begin(), s.roles.end(), "S"), 2);
  for (std::size_t i = 0; i < s.tokens.size(); ++i) {
    if (s.roles[i] == "IO") EXPECT_EQ(s.words[i], m.ioi_task()->names[0]);
    if (s.roles[i] == "S") EXPECT_EQ(s.words[i], m.ioi_task()->names[1]);
  }
  const IoiAnalysis a = m.ioi(s.tokens, Intervention());
  EXPECT_EQ(a.io, m.ioi_name_ids()[0]);
  EXPECT_EQ(a.s, m.ioi_name_ids()[1]);
  EXPECT_EQ(a.correct, a.predicted == a.io);
  // The names ranked by probability: a permutation of the name list, most probable first, and
  // their total probability.
  const auto& ids = m.ioi_name_ids();
  ASSERT_EQ(a.name_order.size(), ids.size());
  double total = 0;
  for (std::size_t k = 0; k < ids.size(); ++k) total += a.probs[ids[k]];
  EXPECT_NEAR(a.name_prob_total, total, 1e-9);
  std::vector<int> seen(ids.size(), 0);
  for (std::size_t r = 0; r < a.name_order.size(); ++r) {
    ++seen.at(a.name_order[r]);
    if (r > 0) EXPECT_GE(a.probs[ids[a.name_order[r - 1]]], a.probs[ids[a.name_order[r]]]);
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(ids.size()));
  // Which templates have a place and an object slot, as the template text says.
  for (std::size_t t = 0; t < j["template_info"].size(); ++t) {
    const std::string text = m.ioi_task()->templates[t];
    EXPECT_EQ(j["template_info"][t]["uses_place"], text.find("{PLACE}") != std::string::npos) << text;
    EXPECT_EQ(j["template_info"][t]["uses_object"], text.find("{OBJECT}") != std::string::npos) << text;
  }
}

TEST(ModelSession, SymbolicModelUsesTheSymbolicTask) {
  const ModelSession m(load_model_file("models/ioi-1l2h.safetensors"));
  EXPECT_EQ(m.ioi_task(), nullptr);
  EXPECT_TRUE(m.ioi_task_json().is_null());
  EXPECT_EQ(m.ioi_sequences(std::nullopt).B, 60);
  EXPECT_EQ(m.ioi_name_ids().size(), 6u);
  EXPECT_EQ(m.ioi_evaluate(Intervention(), std::nullopt).n, 60);
  EXPECT_EQ(m.ioi_sentence({0, 2, 3, 0, 0, 0}).text, "C D D <MID>");
  // Each token's part: the name said once (IO) and the name said twice (S), in either order.
  EXPECT_EQ(m.ioi_sentence({0, 2, 3, 0, 0, 0}).roles, (std::vector<std::string>{"", "IO", "S", "S", ""}));
  EXPECT_EQ(m.ioi_sentence({0, 2, 3, 1, 0, 0}).roles, (std::vector<std::string>{"", "S", "IO", "S", ""}));
  const auto rows = m.ioi_all(Intervention(), std::nullopt);
  ASSERT_EQ(rows.size(), 60u);
  EXPECT_EQ(rows[0].tokens.size(), 5u);
  EXPECT_THROW(ModelSession(load_model_file("models/char-2l.safetensors")).ioi_all(Intervention(), std::nullopt), std::invalid_argument);
}

TEST(ModelSession, IoiKindSaysWhichTaskAModelIsFor) {
  EXPECT_EQ(ModelSession(load_model_file("models/ioi-templates-1l2h.safetensors")).ioi_kind(), "templates");
  EXPECT_EQ(ModelSession(load_model_file("models/ioi-1l2h.safetensors")).ioi_kind(), "symbolic");
  EXPECT_EQ(ModelSession(load_model_file("models/char-2l.safetensors")).ioi_kind(), "");
  // The names, as text: the symbolic task's six letters, a template task's names, none for others.
  EXPECT_EQ(ModelSession(load_model_file("models/ioi-1l2h.safetensors")).ioi_names(), (std::vector<std::string>{"A", "B", "C", "D", "E", "F"}));
  const ModelSession tm(load_model_file("models/ioi-templates-1l2h.safetensors"));
  EXPECT_EQ(tm.ioi_names(), tm.ioi_task()->names);
  EXPECT_TRUE(ModelSession(load_model_file("models/char-2l.safetensors")).ioi_names().empty());
  // Eight words that are not the symbolic task's (its names renamed), or the task's words with a
  // ninth: not the symbolic vocabulary, though <BOS> and <MID> are there.
  ModelFile f = load_model_file("models/ioi-1l2h.safetensors");
  f.tokenizer = Tokenizer::build_word({"<BOS>", "<MID>", "Ann", "Bob", "Cat", "Dan", "Eve", "Fay"});
  EXPECT_EQ(ModelSession(f).ioi_kind(), "");
  EXPECT_TRUE(is_symbolic_ioi_vocabulary(ioi_symbolic_tokenizer()));
  EXPECT_FALSE(is_symbolic_ioi_vocabulary(ioi_symbolic_tokenizer({"A", "B", "C", "D", "E", "F", "G"})));
  EXPECT_FALSE(is_symbolic_ioi_vocabulary(ioi_symbolic_tokenizer({"B", "A", "C", "D", "E", "F"})));
}

TEST(ModelSession, TokensFitToTheContextKeepTheBosAndTheNewestText) {
  const ModelSession m(load_model_file("models/char-2l.safetensors"));
  const int n_ctx = m.config().n_ctx;
  std::string text;
  for (int i = 0; i < n_ctx + 40; ++i) text += static_cast<char>('a' + i % 26);
  const auto all = m.tokenize(text);
  ASSERT_EQ(static_cast<int>(all.size()), n_ctx + 41);  // <BOS> and one token a character
  const auto fit = m.tokenize_to_context(text);
  EXPECT_EQ(fit.bos, 1);
  EXPECT_EQ(fit.truncated, 41);
  ASSERT_EQ(static_cast<int>(fit.tokens.size()), n_ctx);
  EXPECT_EQ(fit.tokens[0].id, m.file().tokenizer.bos_id());
  EXPECT_EQ(fit.tokens[1].begin, 41);  // the text's 42nd character: the newest n_ctx - 1 are kept
  EXPECT_EQ(fit.tokens.back().end, static_cast<int>(text.size()));
  // Without fitting, or within the context, nothing is left out.
  const auto whole = m.tokenize_to_context(text, false);
  EXPECT_EQ(whole.tokens.size(), all.size());
  EXPECT_EQ(whole.truncated, 0);
  EXPECT_EQ(whole.bos, 1);
  const auto shortText = m.tokenize_to_context("abc");
  EXPECT_EQ(shortText.tokens.size(), 4u);
  EXPECT_EQ(shortText.truncated, 0);
  // A token-id model has no <BOS>: the last n_ctx tokens.
  ModelFile f = load_model_file("models/char-2l.safetensors");
  f.tokenizer = Tokenizer::build_word({"x", "y"});
  const ModelSession w(f);
  std::string words;
  for (int i = 0; i < n_ctx + 3; ++i) words += i % 2 ? "y " : "x ";
  const auto wf = w.tokenize_to_context(words);
  EXPECT_EQ(wf.bos, 0);
  EXPECT_EQ(wf.truncated, 3);
  EXPECT_EQ(static_cast<int>(wf.tokens.size()), n_ctx);
}

// Equal bit for bit, NaN (the last position's loss) equal to NaN.
bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

TEST(ModelSession, AnalyseTextIsTheViewsPassesInOneCall) {
  // analyse_text gives what the separate calls give: the fitted tokens, the pass under the
  // intervention, and the clean pass's losses and probabilities of the ablated top k.
  ModelSession m(load_model_file("models/char-2l.safetensors"));
  const std::string text = "the cat sat on the mat. the cat sat on the mat. \u00e9\u00e9";  // two characters char-2l lacks
  Intervention iv;
  iv.ablations.push_back({1, 1});
  const int at = 30;
  int copied_T = -1;
  const ModelSession::TextAnalysis a = m.analyse_text(text, iv, at, 5, 3, true, [&](const ActivationCache<float>& c, int) { copied_T = c.n_pos; });
  const auto fit = m.tokenize_to_context(text);
  std::vector<int> ids;
  for (const Token& t : fit.tokens) ids.push_back(t.id);
  ASSERT_TRUE(a.ran);
  ASSERT_EQ(a.tokens.tokens.size(), ids.size());
  EXPECT_EQ(copied_T, static_cast<int>(ids.size()));  // the intervened pass's cache, read before the clean pass
  EXPECT_EQ(a.tokens.bos, fit.bos);
  EXPECT_EQ(a.unk_id, m.file().tokenizer.unk_id());
  EXPECT_EQ(a.unknown, 2);
  ASSERT_EQ(a.byte_offsets.size(), ids.size() + 1);
  EXPECT_EQ(a.bytes.substr(a.byte_offsets[2], a.byte_offsets[3] - a.byte_offsets[2]), "h");
  ASSERT_TRUE(a.compared);
  // The same passes asked one by one, in fresh sessions (no kept pass to start from).
  ModelSession fresh(load_model_file("models/char-2l.safetensors"));
  RunOptions o;
  o.logits = false;
  o.topk = 5;
  o.text_scores = true;
  o.repeat_at = at;
  o.top_keys = 3;
  const RunExtras r = fresh.run(ids, iv, o);
  EXPECT_TRUE(same_floats(a.run.loss, r.loss));
  EXPECT_EQ(a.run.top_keys, r.top_keys);
  // The top keys are each row of each head's pattern sorted by weight (a stable sort: the earlier
  // key on a tie), cut at 3.
  const ActivationCache<float>& cache = fresh.cache();
  const int T = static_cast<int>(ids.size()), H = m.config().n_heads;
  ASSERT_EQ(r.top_keys.size(), static_cast<std::size_t>(m.config().n_layers) * H * T * 3);
  for (int l = 0; l < m.config().n_layers; ++l)
    for (int h = 0; h < H; ++h)
      for (int q = 0; q < T; ++q) {
        const float* row = cache.layers[l].pattern.ptr() + (static_cast<std::size_t>(h) * T + q) * T;
        std::vector<int> order(q + 1);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return row[x] > row[y]; });
        order.resize(3, -1);
        const int* got = r.top_keys.data() + ((static_cast<std::size_t>(l) * H + h) * T + q) * 3;
        ASSERT_EQ(std::vector<int>(got, got + 3), order) << "L" << l << "H" << h << " query " << q;
      }
  EXPECT_EQ(a.run.top->ids.data, r.top->ids.data);
  ASSERT_TRUE(a.run.text_scores->repeat.has_value());
  EXPECT_EQ(a.run.text_scores->repeat->a, r.text_scores->repeat->a);
  EXPECT_LE(a.run.text_scores->repeat->a, at);  // the block holding the picked position
  RunOptions clean;
  clean.logits = false;
  clean.probs_of = r.top->ids.data;
  clean.probs_k = 5;
  const RunExtras c = fresh.run(ids, Intervention(), clean);
  EXPECT_TRUE(same_floats(a.clean_loss, c.loss));
  EXPECT_EQ(a.clean_probs_of, c.probs_of);
  EXPECT_EQ(a.clean_mean_loss, c.mean_loss);
  EXPECT_FALSE(same_floats(a.clean_loss, a.run.loss));  // the ablation changed something
  // Without an intervention there is one pass; a text of no tokens runs none.
  EXPECT_FALSE(m.analyse_text(text, Intervention(), -1, 5, 3).compared);
  ModelFile f = load_model_file("models/char-2l.safetensors");
  f.tokenizer = Tokenizer::build_word({"x", "y"});
  ModelSession w(f);
  const ModelSession::TextAnalysis none = w.analyse_text("", iv, -1, 5, 3);
  EXPECT_FALSE(none.ran);
  EXPECT_FALSE(none.compared);
  EXPECT_THROW(m.analyse_text(text, iv, -1, -1, 3), std::invalid_argument);
  EXPECT_THROW(m.analyse_text(text, iv, -1, 5, -1), std::invalid_argument);
}

TEST(ModelSession, SpectraTablesChecksAndTheKeptCache) {
  ModelSession m(load_model_file("models/char-2l.safetensors"));
  const Config& c = m.config();
  const SpectraTable t = m.spectra(true);
  EXPECT_EQ(t.L, c.n_layers);
  EXPECT_EQ(t.H, c.n_heads);
  EXPECT_EQ(t.copying.size(), static_cast<std::size_t>(c.n_layers * c.n_heads));
  EXPECT_EQ(t.re.size(), static_cast<std::size_t>(c.n_layers * c.n_heads * t.K));
  const Spectrum s = ov_spectrum(m.file().params, 1, 2);
  EXPECT_FLOAT_EQ(t.copying[c.n_heads + 2], static_cast<float>(s.copying_score));
  EXPECT_FLOAT_EQ(t.re[(c.n_heads + 2) * t.K], static_cast<float>(s.eigenvalues[0].real()));

  EXPECT_EQ(batch_length(12, 3, "ablate"), 4);
  try {
    batch_length(10, 3, "ablate");
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "ablate: 10 token ids do not make 3 sequence(s) of equal length");
  }
  EXPECT_EQ(ioi_split_from_name("held-out templates"), IoiSplit::HeldOutTemplates);
  EXPECT_THROW(ioi_split_from_name("test"), std::invalid_argument);
  EXPECT_THROW(m.forward_batch({1, 2, 3}, 2, 2), std::invalid_argument);

  const std::vector<Token> toks = m.tokenize("abc");
  std::vector<int> ids;
  for (const Token& t : toks) ids.push_back(t.id);
  RunOptions o;
  o.text_scores = true;
  const RunExtras x = m.run(ids, Intervention(), o);
  EXPECT_EQ(m.cache().n_pos, static_cast<int>(ids.size()));
  EXPECT_TRUE(std::isnan(x.loss.back()));
  ASSERT_TRUE(x.text_scores.has_value());
  EXPECT_FALSE(x.text_scores->repeat.has_value());
  const double loss = m.forward_batch(ids, 1, static_cast<int>(ids.size()));
  double mean = 0;
  for (std::size_t i = 0; i + 1 < x.loss.size(); ++i) mean += x.loss[i];
  EXPECT_NEAR(loss, mean / (x.loss.size() - 1), 1e-5);
}

// A model whose weights are each allowed (|w| <= 10,000) but whose second layer overflows
// float32: every call that runs a forward pass refuses with the overflow sentence instead of
// returning NaN scores (head scores and ablation returned NaN before they checked, the WASM
// corrupt-model corpus found it).
TEST(ModelSession, EveryForwardPassRefusesAnOverflow) {
  ModelFile f = load_model_file("models/ioi-2l1h.safetensors");
  for_each_tensor(f.params, [](Tensor<float>& t) {
    for (std::size_t i = 0; i < t.data.size(); ++i) t.data[i] = i % 3 ? 9999.0f : -9999.0f;
  });
  ModelSession m(std::move(f));
  const std::vector<int> ids = m.ioi_sentence({0, 0, 1, 0, 0, 0}).tokens;
  ActivationCache<float> cache;
  forward(m.file().params, ids, 1, static_cast<int>(ids.size()), cache);
  ASSERT_THROW(check_output_finite(cache), std::runtime_error) << "the weights no longer overflow: the test needs larger ones";
  auto refuses = [](const char* what, auto&& fn) {
    try {
      fn();
      ADD_FAILURE() << what << " returned";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("the forward pass overflowed float32: ", 0), 0u) << what << ": " << e.what();
    }
  };
  refuses("run", [&] { m.run(ids, Intervention(), RunOptions()); });
  refuses("attribution", [&] { m.attribution(ids, -1 + static_cast<int>(ids.size()), Intervention()); });
  refuses("top_k", [&] { m.top_k(ids, 3); });
  refuses("head_scores", [&] { m.head_scores(RepeatedTokensSpec()); });
  refuses("ablate", [&] { m.ablate(ids, 1, Intervention(), 0, 1); });
  refuses("ioi", [&] { m.ioi(ids, Intervention()); });
  refuses("ioi_evaluate", [&] { m.ioi_evaluate(Intervention(), std::nullopt); });
}

}  // namespace
}  // namespace cs

namespace cs {
namespace {

std::vector<int> ids_of(const ModelSession& m, const std::string& text) {
  std::vector<int> ids;
  for (const Token& t : m.tokenize(text)) ids.push_back(t.id);
  return ids;
}

// The session that ran last keeps its passes, one per intervention, so a clean and an ablated pass
// typed in turn are both incremental; another session's run drops them, a session gives its
// passes back when it goes, and the least recently used pass goes when they would exceed
// kKeptPassBytes together.
TEST(ModelSession, KeptPassesArePerSessionAndInterventionWithinABudget) {
  ModelSession a(load_model_file("models/char-2l.safetensors"));
  const std::string text = "hello hello, said the cat to the hat";
  Intervention ablate;
  ablate.ablations.push_back({1, 0});
  {
    ModelSession b(load_model_file("models/char-1l.safetensors"));
    a.run(ids_of(a, text.substr(0, 20)), Intervention(), RunOptions());
    a.run(ids_of(a, text.substr(0, 20)), ablate, RunOptions());
    const double a_bytes = ModelSession::kept_bytes();
    b.run(ids_of(b, text.substr(0, 20)), Intervention(), RunOptions());
    EXPECT_TRUE(a.cache().layers.empty()) << "b's run dropped a's passes";
    EXPECT_EQ(b.cache().layers.size(), 1u);
    EXPECT_LT(ModelSession::kept_bytes(), a_bytes);
    a.run(ids_of(a, text.substr(0, 20)), Intervention(), RunOptions());
    a.run(ids_of(a, text.substr(0, 20)), ablate, RunOptions());
    EXPECT_TRUE(b.cache().layers.empty());
    for (std::size_t n = 21; n < text.size(); ++n) {
      EXPECT_GT(a.run(ids_of(a, text.substr(0, n)), ablate, RunOptions()).changed_from, 0) << n;
      EXPECT_GT(a.run(ids_of(a, text.substr(0, n)), Intervention(), RunOptions()).changed_from, 0) << n;
    }
    EXPECT_FALSE(a.cache().intervened) << "the cache of a's last pass";
    EXPECT_LE(ModelSession::kept_bytes(), kKeptPassBytes);
  }
  EXPECT_GT(ModelSession::kept_bytes(), 0.0) << "b went, a's passes stay";
  {
    ModelSession c(load_model_file("models/char-2l.safetensors"));
    c.run(ids_of(c, text), Intervention(), RunOptions());
  }
  EXPECT_EQ(ModelSession::kept_bytes(), 0.0) << "c dropped a's passes and took its own with it";
}

// A pass larger than the budget is kept alone: every other session's pass is dropped first.
TEST(ModelSession, APassOverTheBudgetIsKeptAlone) {
  ModelSession a(load_model_file("models/char-2l.safetensors"));
  ModelFile f;  // patterns of 8 heads over 2,048 tokens: 128 MB
  f.cfg = testing::tiny_norm_mlp_config(1, PosEmbed::Standard, Norm::LN, 0, Act::GELU);
  f.cfg.d_model = 16, f.cfg.d_head = 4, f.cfg.n_heads = 8, f.cfg.n_ctx = 2048, f.cfg.d_vocab = 11;
  f.params = testing::random_params<float>(f.cfg, 3);
  f.tokenizer = Tokenizer::build_ids(f.cfg.d_vocab);
  ModelSession big(std::move(f));
  a.run(ids_of(a, "hello hello"), Intervention(), RunOptions());
  ASSERT_EQ(a.cache().layers.size(), 2u);
  const std::vector<int> ids(2048, 1);
  const double bytes = forward_bytes(big.config(), 1, 2048, 0, false, false);
  ASSERT_GT(bytes, kKeptPassBytes);
  RunOptions o;
  o.logits = false;
  big.run(ids, Intervention(), o);
  EXPECT_TRUE(a.cache().layers.empty()) << "a's pass was dropped";
  EXPECT_EQ(ModelSession::kept_bytes(), bytes);
}

}  // namespace
}  // namespace cs
