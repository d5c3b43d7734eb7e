// Corpus statistics (seed 002): B, B^T B and Phi against hand-computed values, the leading terms,
// the cosine similarity, and briefly trained models whose direct path follows the bigram leading
// term (0 layers) and whose OV circuit follows the context leading term early on (1 layer).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "analysis/corpus_stats.h"
#include "analysis/training_metrics.h"
#include "rng.h"
#include "test_util.h"
#include "train.h"

namespace cs {
namespace {

void expect_matrix(const Tensor<float>& m, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(m.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(m.data[i], want[i], 1e-6) << what << " entry " << i;
}

// Stream 0 1 0 2 0 1 over a vocabulary of 4 (token 3 never occurs).
const std::vector<int> kStream = {0, 1, 0, 2, 0, 1};

TEST(CorpusStats, BigramMapIsRowNormalisedNextTokenCounts) {
  // Bigrams: 0->1 twice, 0->2 once, 1->0, 2->0. Token 3 is never followed: zero row.
  expect_matrix(bigram_map(kStream, 4),
                {0, 2.0 / 3, 1.0 / 3, 0,  //
                 1, 0, 0, 0,              //
                 1, 0, 0, 0,              //
                 0, 0, 0, 0},
                "B");
}

TEST(CorpusStats, InterchangeabilityIsBTransposeB) {
  // (B^T B)[j,k] = sum_i B[i,j] B[i,k]: tokens 1 and 2 both follow only 0, so they are interchangeable.
  expect_matrix(interchangeability_map(bigram_map(kStream, 4)),
                {2, 0, 0, 0,                      //
                 0, 4.0 / 9, 2.0 / 9, 0,          //
                 0, 2.0 / 9, 1.0 / 9, 0,          //
                 0, 0, 0, 0},
                "B^T B");
}

// A vocabulary whose [V, V] tables would not fit is refused with a sentence before anything is
// allocated (a 50,000-token model's statistics used to end in std::bad_alloc).
TEST(CorpusStats, LargeVocabulariesAreRefusedBeforeAllocating) {
  const std::vector<int> stream = {1, 2, 3, 1, 2, 3};
  try {
    corpus_stats(stream, 50001, 4);
    FAIL() << "50,001 tokens were counted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(testing::contains(e.what(), "corpus statistics over a 50001-token vocabulary are 50001 x 50001 tables, about 40001 MB; "
                                            "circuitscope counts them for vocabularies of up to 2896 tokens (128 MB)")) << e.what();
  }
  Batch b;
  b.B = 1, b.T = 2, b.tokens = {1, 2}, b.targets = {2, 3}, b.mask = {1, 1};
  EXPECT_THROW(batch_stats(b, 50001, 4), std::invalid_argument);
  EXPECT_NO_THROW(corpus_stats(stream, 2896, 4));
  // B^T B is V^3: refused past 1e10 multiply-adds.
  try {
    interchangeability_map(Tensor<float>({3000, 3000}));
    FAIL() << "a 3,000-token interchangeability map was computed";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(testing::contains(e.what(), "the interchangeability map of a 3000-token vocabulary takes 2.7e+10 multiply-adds")) << e.what();
  }
}

TEST(CorpusStats, ContextMapAveragesTheWindowBeforeEachOccurrence) {
  // w = 2. Occurrences (position: token, window before it):
  //   1: 1 {0}      2: 0 {0,1}    3: 2 {1,0}    4: 0 {0,2}    5: 1 {2,0}
  // Row 0 = mean of (.5,.5,0,0) and (.5,0,.5,0); row 1 = mean of (1,0,0,0) and (.5,0,.5,0); row 2 = (.5,.5,0,0).
  expect_matrix(context_map(kStream, 4, 2),
                {0.5, 0.25, 0.25, 0,  //
                 0.75, 0, 0.25, 0,    //
                 0.5, 0.5, 0, 0,      //
                 0, 0, 0, 0},
                "Phi (w=2)");
  // w = 1 is the reversed bigram: Phi[j,k] = P(previous = k | current = j).
  expect_matrix(context_map(kStream, 4, 1),
                {0, 0.5, 0.5, 0,  //
                 1, 0, 0, 0,      //
                 1, 0, 0, 0,      //
                 0, 0, 0, 0},
                "Phi (w=1)");
  EXPECT_THROW(context_map(kStream, 4, 0), std::invalid_argument);
  EXPECT_THROW(context_map({0, 5}, 4, 1), std::invalid_argument);
}

TEST(CorpusStats, LeadingTermsAreFrequencyWeightedAndRowCentred) {
  CorpusStats s = corpus_stats(kStream, 4, 2);
  // pi: tokens at positions 0..4 = 0 1 0 2 0; rho: positions 1..5 = 1 0 2 0 1.
  const std::vector<float> pi = {0.6f, 0.2f, 0.2f, 0.0f}, rho = {0.4f, 0.4f, 0.2f, 0.0f};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(s.current_freq[i], pi[i], 1e-6);
    EXPECT_NEAR(s.next_freq[i], rho[i], 1e-6);
  }
  // Direct path: row i = pi_i (B[i,:] - 1/4).
  expect_matrix(direct_path_leading_term(s),
                {0.6 * (0 - .25), 0.6 * (2.0 / 3 - .25), 0.6 * (1.0 / 3 - .25), 0.6 * (0 - .25),  //
                 0.2 * .75, 0.2 * -.25, 0.2 * -.25, 0.2 * -.25,                                   //
                 0.2 * .75, 0.2 * -.25, 0.2 * -.25, 0.2 * -.25,                                   //
                 0, 0, 0, 0},
                "direct leading term");
  // OV: M[k, j] = rho_j Phi[j, k], then each row k minus its mean.
  const double m[4][4] = {{0.4 * 0.5, 0.4 * 0.75, 0.2 * 0.5, 0},
                          {0.4 * 0.25, 0, 0.2 * 0.5, 0},
                          {0.4 * 0.25, 0.4 * 0.25, 0, 0},
                          {0, 0, 0, 0}};
  std::vector<double> want;
  for (int k = 0; k < 4; ++k) {
    const double mean = (m[k][0] + m[k][1] + m[k][2] + m[k][3]) / 4;
    for (int j = 0; j < 4; ++j) want.push_back(m[k][j] - mean);
  }
  expect_matrix(ov_leading_term(s), want, "OV leading term");
}

TEST(CosineSimilarity, SelfIsOneNegativeIsMinusOne) {
  Tensor<float> a({3, 4}), z({3, 4}), other({4, 3});
  Rng rng(3);
  for (auto& x : a.data) x = static_cast<float>(rng.normal());
  Tensor<float> neg = a;
  for (auto& x : neg.data) x = -x;
  Tensor<float> scaled = a;
  for (auto& x : scaled.data) x *= 7.5f;
  EXPECT_NEAR(cosine_similarity(a, a), 1.0, 1e-6);
  EXPECT_NEAR(cosine_similarity(a, scaled), 1.0, 1e-6);
  EXPECT_NEAR(cosine_similarity(a, neg), -1.0, 1e-6);
  EXPECT_EQ(cosine_similarity(a, z), 0.0);
  EXPECT_THROW(cosine_similarity(a, other), std::invalid_argument);
  // Row centring removes exactly the per-row constant.
  Tensor<float> shifted = a;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) shifted.data[i * 4 + j] += static_cast<float>(10 * i);
  EXPECT_NEAR(cosine_similarity(row_centred(shifted), row_centred(a)), 1.0, 1e-6);
}

// A small deterministic English-like text with strong bigram structure.
std::string make_text() {
  const char* sentences[] = {"the cat sat on the mat. ", "a dog ran to the park. ", "the bird sang in the tree. ",
                             "my mother made a cake. ", "we went to see the sea. ", "the sun was warm and bright. ",
                             "she read a book by the fire. ", "he drank a cup of tea. "};
  Rng rng(42);
  std::string text;
  while (text.size() < 6000) text += sentences[rng.below(8)];
  return text;
}

// Writes the text to a temporary file and returns a recipe training on it (char tokenizer).
nlohmann::json text_recipe(const std::string& path, int layers) {
  return {{"name", "leading-terms-test"},
          {"model", {{"n_layers", layers}, {"n_heads", 1}, {"d_model", 32}, {"d_head", 16}, {"n_ctx", 32},
                     {"pos_embed", layers ? "shortformer" : "none"}}},
          {"tokenizer", {{"kind", "char"}, {"corpus", path}}},
          {"data", {{"kind", "text"}, {"path", path}, {"seq_len", 32}}},
          {"optimizer", {{"lr", 0.01}, {"weight_decay", 0.01}}},
          {"schedule", {{"kind", "constant"}, {"warmup_steps", 10}}},
          {"steps", 50},
          {"batch_size", 32},
          {"seed", 0}};
}

struct TextFile {
  std::string path, text;
  // A name of its own per test and run: ctest runs shards side by side, and the SIMD128 and
  // relaxed WASM runners run the same tests at once, so a fixed name was removed under another.
  TextFile()
      : path(::testing::TempDir() + "circuitscope_corpus_stats_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
             std::to_string(std::random_device{}()) + ".txt"),
        text(make_text()) {
    std::ofstream f(path, std::ios::binary);
    f << text;
  }
  ~TextFile() { std::remove(path.c_str()); }
};

// Row-centred log B (what a fully trained direct path approaches): printed for comparison.
Tensor<float> centred_log_bigram(const CorpusStats& s) {
  Tensor<float> m = s.bigram;
  for (auto& x : m.data) x = std::log(x + 1e-3f);
  return row_centred(m);
}

TEST(CorpusStats, TrainedZeroLayerDirectPathFollowsTheBigramLeadingTerm) {
  TextFile file;
  Trainer tr(recipe_from_json(text_recipe(file.path, 0)));
  const std::vector<int> stream = tr.tokenizer().encode_ids(file.text, false);
  CorpusStats s = corpus_stats(stream, tr.tokenizer().size(), 32);
  const double at_init = direct_path_cosine(tr.params(), s);
  std::printf("[ corpus ] %d characters, vocabulary %d; 0-layer direct path vs bigram leading term at init: cosine %+.3f\n",
              static_cast<int>(stream.size()), tr.tokenizer().size(), at_init);
  double cos = at_init;
  for (int step = 1; step <= 50; ++step) {
    StepMetrics m = tr.step();
    if (step == 10 || step == 25 || step == 50) {
      cos = direct_path_cosine(tr.params(), s);
      std::printf("[ corpus ] 0-layer, step %2d (loss %.3f): cosine(row-centred W_E W_U, diag(pi)(B - 1/V)) %.3f; "
                  "with row-centred log B %.3f\n",
                  step, m.loss, cos, cosine_similarity(row_centred(direct_path_table(tr.params())), centred_log_bigram(s)));
    }
  }
  EXPECT_LT(std::fabs(at_init), 0.3);
  EXPECT_GT(cos, 0.5);
}

// ov_cosines builds the leading term once for every head: the same numbers as ov_cosine per head.
TEST(CorpusStats, EveryHeadsOvCosineAtOnceEqualsEachHeadsOwn) {
  const Config c = testing::tiny_config(2, PosEmbed::Standard, false, true);
  const Params<float> p = testing::random_params<float>(c, 19);
  std::vector<int> stream;
  Rng rng(5);
  for (int i = 0; i < 300; ++i) stream.push_back(rng.below(c.d_vocab));
  const CorpusStats s = corpus_stats(stream, c.d_vocab, 4);
  const std::vector<double> all = ov_cosines(p, s);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(c.n_layers * c.n_heads));
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_heads; ++h) EXPECT_EQ(all[l * c.n_heads + h], ov_cosine(p, s, l, h)) << "L" << l << "H" << h;
  CorpusStats other = s;
  other.V = c.d_vocab + 1;
  EXPECT_THROW(ov_cosines(p, other), std::invalid_argument);
}

TEST(CorpusStats, TrainedOneLayerOvCircuitFollowsTheContextLeadingTermEarly) {
  TextFile file;
  Trainer tr(recipe_from_json(text_recipe(file.path, 1)));
  const std::vector<int> stream = tr.tokenizer().encode_ids(file.text, false);
  CorpusStats s = corpus_stats(stream, tr.tokenizer().size(), 32);
  const double at_init = ov_cosine(tr.params(), s, 0, 0);
  double ov = at_init;
  for (int step = 1; step <= 25; ++step) {
    StepMetrics m = tr.step();
    if (step == 10 || step == 25) {
      ov = ov_cosine(tr.params(), s, 0, 0);
      std::printf("[ corpus ] 1-layer 1-head, step %2d (loss %.3f): cosine(row-centred W_E W_V W_O W_U, "
                  "row-centred Phi^T diag(rho)) %.3f (at init %+.3f); direct path vs bigram term %.3f\n",
                  step, m.loss, ov, at_init, direct_path_cosine(tr.params(), s));
    }
  }
  EXPECT_LT(std::fabs(at_init), 0.3);
  EXPECT_GT(ov, 0.3);
}

// batch_stats counts the same pairs and contexts as corpus_stats when the batch is one row holding
// the whole stream (next_token_batch: the last position has no target).
TEST(CorpusStats, BatchStatsOfOneRowAreTheStreamsStats) {
  const std::vector<int> stream = {0, 1, 0, 2, 0, 1, 3, 3, 0, 2, 1};
  const Batch b = next_token_batch(stream, 1, static_cast<int>(stream.size()));
  for (int w : {1, 3, 100}) {
    const CorpusStats want = corpus_stats(stream, 5, w), got = batch_stats(b, 5, w);
    const Tensor<float> want_i = interchangeability_map(want.bigram), got_i = interchangeability_map(got.bigram);
    for (std::size_t i = 0; i < want.bigram.size(); ++i) {
      EXPECT_NEAR(got.bigram.data[i], want.bigram.data[i], 1e-6) << "bigram " << i << " window " << w;
      EXPECT_NEAR(got.context.data[i], want.context.data[i], 1e-6) << "context " << i << " window " << w;
      EXPECT_NEAR(got_i.data[i], want_i.data[i], 1e-6) << "B^T B " << i;
    }
    for (int v = 0; v < 5; ++v) {
      EXPECT_NEAR(got.current_freq[v], want.current_freq[v], 1e-6);
      EXPECT_NEAR(got.next_freq[v], want.next_freq[v], 1e-6);
    }
  }
  // Two rows: no pair and no context crosses from one row into the next.
  const Batch two = next_token_batch({0, 1, 2, 3, 4, 0}, 2, 3);  // rows 0 1 2 and 3 4 0
  const CorpusStats s2 = batch_stats(two, 5, 10);
  EXPECT_EQ(s2.bigram.data[2 * 5 + 3], 0.0f) << "2 -> 3 crosses the rows";
  EXPECT_EQ(s2.context.data[4 * 5 + 2], 0.0f) << "2 is not in 4's row";
  EXPECT_NEAR(s2.context.data[0 * 5 + 3], 0.5, 1e-6) << "0 follows 3 4: half of its context is 3";
  EXPECT_THROW(batch_stats(two, 4, 10), std::invalid_argument);
}

// The mathematics the seed relies on, in its own parameterisation (one-hot residual, a V x V output
// matrix from zero): a 0-layer model with d_model = V, W_E the identity and W_U zero. One step of
// gradient descent moves W_U by lr times the negative gradient of the logit table, which at uniform
// softmax is exactly the bigram leading term of the batch.
TEST(CorpusStats, OneGradientStepFromZeroIsTheBigramLeadingTerm) {
  TextFile file;
  nlohmann::json j = text_recipe(file.path, 0);
  Trainer tr(recipe_from_json(j));
  const int V = tr.tokenizer().size();
  j["model"]["d_model"] = V;
  Trainer t2(recipe_from_json(j));
  Params<float> p = t2.params();
  for (auto& x : p.W_U.data) x = 0;
  for (auto& x : p.W_E.data) x = 0;
  for (int i = 0; i < V; ++i) p.W_E.data[static_cast<std::size_t>(i) * V + i] = 1;
  Rng rng(5);
  const Batch b = t2.data_source().next(rng, 16).batch;
  ActivationCache<float> cache;
  ShardResult res;
  shard_gradient(p, b, cache, res);
  for (std::size_t k = 0; k < p.W_U.size(); ++k) p.W_U.data[k] -= 0.5f * res.grads.W_U.data[k];
  for (std::size_t k = 0; k < p.W_E.size(); ++k) EXPECT_EQ(res.grads.W_E.data[k], 0.0f) << "W_U = 0: no gradient on W_E";
  const CorpusStats s = batch_stats(b, V, b.T);
  const double c = cosine_similarity(row_centred(direct_path_table(p)), direct_path_leading_term(s));
  std::printf("[ corpus ] seed's parameterisation, one step from zero: cosine with the bigram term %.6f\n", c);
  EXPECT_GT(c, 0.9999);
  // The table moved by exactly lr times the term (row-centring aside).
  const Tensor<float> term = direct_path_leading_term(s), table = row_centred(direct_path_table(p));
  for (std::size_t k = 0; k < term.size(); ++k) EXPECT_NEAR(table.data[k], 0.5 * term.data[k], 1e-6);
}

// In circuitscope's own parameterisation the weights are factored (W_E W_U, W_E W_V W_O W_U) and
// start random: after one step of gradient descent from a tiny start each factor moves along its
// leading term (W_U by W_E0^T G, G the bigram term), exactly as the seed's gradient analysis says.
TEST(CorpusStats, OneGradientStepMovesEachFactorAlongItsLeadingTerm) {
  TextFile file;
  nlohmann::json j = text_recipe(file.path, 1);
  j["init_scale"] = 1e-4;
  Trainer tr(recipe_from_json(j));
  Params<float> p = tr.params();
  const int V = p.cfg.d_vocab;
  Rng rng(5);
  const Batch b = tr.data_source().next(rng, 16).batch;
  const CorpusStats s = batch_stats(b, V, b.T);
  ActivationCache<float> cache;
  ShardResult res;
  shard_gradient(p, b, cache, res);
  // -dL/dW_U = W_E^T G (the direct path; the attention output is 1e-8 smaller).
  Tensor<float> neg({p.cfg.d_model, V}), want({p.cfg.d_model, V});
  for (std::size_t k = 0; k < neg.size(); ++k) neg.data[k] = -res.grads.W_U.data[k];
  want.mat() = p.W_E.mat().transpose() * direct_path_leading_term(s).mat();
  const double cu = cosine_similarity(neg, want);
  // -dL/dW_E = G W_U^T.
  Tensor<float> nege({V, p.cfg.d_model}), wante({V, p.cfg.d_model});
  for (std::size_t k = 0; k < nege.size(); ++k) nege.data[k] = -res.grads.W_E.data[k];
  wante.mat() = direct_path_leading_term(s).mat() * p.W_U.mat().transpose();
  const double ce = cosine_similarity(nege, wante);
  std::printf("[ corpus ] init_scale 1e-4: cosine of -dL/dW_U with W_E^T G %.6f, of -dL/dW_E with G W_U^T %.6f\n", cu, ce);
  EXPECT_GT(cu, 0.999);
  EXPECT_GT(ce, 0.999);
}

// The curve: steps 0..N, every head, deterministic, and from a tiny start under gradient descent
// the first step's change of the direct path follows the bigram term once the model is wide
// enough for the initial Gram matrices W_E0 W_E0^T and W_U0^T W_U0 to be near multiples of the
// identity (d_model >> V); see leading_term_curve.
TEST(CorpusStats, LeadingTermCurveIsDeterministicAndCoversEveryHead) {
  TextFile file;
  nlohmann::json j = text_recipe(file.path, 1);
  j["model"]["n_heads"] = 2;
  const Recipe r = recipe_from_json(j);
  LeadingCurveSpec spec;
  spec.steps = 3;
  spec.init_scale = 0.01;
  spec.lr = 1;
  spec.rows = 8;
  const LeadingCurve a = leading_term_curve(r, spec), b = leading_term_curve(r, spec);
  ASSERT_EQ(a.points.size(), 4u);
  for (std::size_t i = 0; i < a.points.size(); ++i) {
    EXPECT_EQ(a.points[i].step, static_cast<int>(i));
    ASSERT_EQ(a.points[i].ov.size(), 2u);
    EXPECT_EQ(a.points[i].direct, b.points[i].direct);
    EXPECT_EQ(a.points[i].ov[1], b.points[i].ov[1]);
  }
  EXPECT_LT(a.points[3].loss, a.points[0].loss) << "gradient descent lowers the batch's loss";
  const LeadingCurve back = leading_curve_from_json(leading_curve_json(a));
  EXPECT_EQ(back.points[2].ov_composed[1], a.points[2].ov_composed[1]);
  EXPECT_EQ(back.spec.init_scale, 0.01);
  spec.optimizer = "sgd";
  EXPECT_THROW(leading_term_curve(r, spec), std::invalid_argument);
}

// In the factored model the first step's change of W_E W_U is lr (G W_U0^T W_U0 + W_E0 W_E0^T G):
// the bigram term G seen through the initial Gram matrices, which approach multiples of the
// identity as d_model grows past the vocabulary. So the change follows G more closely the wider the
// model, and the table itself only once the change outgrows the random initial product.
TEST(CorpusStats, FirstStepChangeFollowsTheBigramTermAsTheModelWidens) {
  TextFile file;
  double last = -1;
  for (int d : {32, 2048}) {
    nlohmann::json j = text_recipe(file.path, 0);
    j["model"]["d_model"] = d;
    LeadingCurveSpec spec;
    spec.steps = 1;
    spec.init_scale = 1e-3;
    spec.lr = 1;
    spec.rows = 8;
    const LeadingCurve c = leading_term_curve(recipe_from_json(j), spec);
    const double change = c.points[1].direct_change;
    std::printf("[ corpus ] d_model %4d, vocabulary %d: step 1 changes W_E W_U with cosine %.4f to the bigram term; the table: %.4f\n", d,
                c.d_vocab, change, c.points[1].direct);
    EXPECT_GT(change, last);
    last = change;
  }
  EXPECT_GT(last, 0.98);
}

}  // namespace
}  // namespace cs
