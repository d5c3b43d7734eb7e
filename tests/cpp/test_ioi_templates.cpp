// Sentence-template IOI: the task's validation, vocabulary, sentences in both orders, the
// held-out splits (disjoint, and never drawn for training), and the analysis finding IO and S
// among the names only.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "analysis/ioi.h"
#include "data.h"
#include "ioi_templates.h"
#include "train.h"

namespace cs {
namespace {

nlohmann::json spec() {
  return {{"kind", "ioi_templates"},
          {"templates",
           {"When {IO} and {S} went to the {PLACE}, {S} gave a {OBJECT} to", "Then, {IO} and {S} had a long argument. {S} said to",
            "{IO} and {S} were at the {PLACE}. {S} handed the {OBJECT} to"}},
          {"names", {"Mary", "John", "Alice", "Bob", "Eve", "Dan", "Kim", "Lee"}},
          {"places", {"store", "park"}},
          {"objects", {"drink", "ball"}},
          {"holdout_templates", 1},
          {"holdout_pair_fraction", 0.25}};
}

TEST(IoiTemplates, SentencesInBothOrders) {
  IoiTemplateTask t = ioi_template_task(spec());
  EXPECT_EQ(ioi_template_sentence(t, 0, 0, 1, 0, 0, 0), "When Mary and John went to the store, John gave a drink to");
  EXPECT_EQ(ioi_template_sentence(t, 0, 0, 1, 1, 1, 1), "When John and Mary went to the park, John gave a ball to");
  EXPECT_EQ(ioi_template_sentence(t, 1, 2, 3, 1, 0, 0), "Then, Bob and Alice had a long argument. Bob said to");
}

TEST(IoiTemplates, VocabularyPutsSpecialTokensFirstAndNamesLast) {
  IoiTemplateTask t = ioi_template_task(spec());
  Tokenizer tok = ioi_template_tokenizer(t);
  EXPECT_EQ(tok.find("<BOS>"), 0);
  EXPECT_EQ(tok.find("<PAD>"), 1);
  std::vector<int> ids = ioi_template_name_ids(t, tok);
  ASSERT_EQ(ids.size(), 8u);
  EXPECT_EQ(ids.back(), tok.size() - 1);
  EXPECT_EQ(ids.front(), tok.size() - 8);
  // Every sentence of the task tokenizes with this vocabulary.
  for (int tpl = 0; tpl < 3; ++tpl)
    for (int order = 0; order < 2; ++order)
      EXPECT_NO_THROW(tok.encode_ids(ioi_template_sentence(t, tpl, 4, 5, order, 1, 0), true));
}

TEST(IoiTemplates, RejectsMalformedTasks) {
  auto bad = [](auto edit) {
    nlohmann::json j = spec();
    edit(j);
    return j;
  };
  EXPECT_THROW(ioi_template_task(bad([](nlohmann::json& j) { j["templates"][0] = "When {S} and {IO} met, {S} said to"; })),
               std::invalid_argument);
  EXPECT_THROW(ioi_template_task(bad([](nlohmann::json& j) { j["templates"][0] = "When {IO} and {S} met, {X} said to"; })),
               std::invalid_argument);
  EXPECT_THROW(ioi_template_task(bad([](nlohmann::json& j) { j["names"][1] = "Mary"; })), std::invalid_argument);
  EXPECT_THROW(ioi_template_task(bad([](nlohmann::json& j) { j["names"][1] = "When"; })), std::invalid_argument);
  EXPECT_THROW(ioi_template_task(bad([](nlohmann::json& j) { j["names"][1] = "Mary Ann"; })), std::invalid_argument);
  EXPECT_THROW(ioi_template_task(bad([](nlohmann::json& j) { j["holdout_templates"] = 3; })), std::invalid_argument);
  EXPECT_THROW(ioi_template_task(bad([](nlohmann::json& j) { j.erase("names"); })), std::invalid_argument);
}

TEST(IoiTemplates, SplitsAreDisjointAndCoverEveryPairAndTemplate) {
  IoiTemplateTask t = ioi_template_task(spec());
  Tokenizer tok = ioi_template_tokenizer(t);
  const std::vector<int> names = ioi_template_name_ids(t, tok);
  std::set<std::tuple<int, int>> seen_pairs[4];
  int total = 0, held_pairs = 0;
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) held_pairs += ioi_pair_held_out(t, a, b) && ioi_pair_held_out(t, b, a);
  EXPECT_GT(held_pairs, 0);
  EXPECT_LT(held_pairs, 28);
  const IoiSplit splits[4] = {IoiSplit::Train, IoiSplit::HeldOutPairs, IoiSplit::HeldOutTemplates, IoiSplit::HeldOutBoth};
  for (int k = 0; k < 4; ++k) {
    Batch b = ioi_template_sequences(t, tok, splits[k]);
    total += b.B;
    for (int r = 0; r < b.B; ++r) {
      std::vector<int> row(b.tokens.begin() + r * b.T, b.tokens.begin() + (r + 1) * b.T);
      int pos = -1;
      for (int i = 0; i < b.T; ++i)
        if (b.mask[r * b.T + i] != 0) pos = i;
      ASSERT_GE(pos, 0);
      for (int i = pos + 1; i < b.T; ++i) EXPECT_EQ(row[i], 1);  // <PAD> after the sentence
      EXPECT_EQ(tok.token_text(row[pos]), "to");
      IoiNames nm = ioi_names(row, pos, names);
      EXPECT_EQ(b.targets[r * b.T + pos], nm.io);
      seen_pairs[k].insert({nm.io, nm.s});
      const bool held = ioi_pair_held_out(t, nm.io - names[0], nm.s - names[0]);
      EXPECT_EQ(held, k == 1 || k == 3);
    }
  }
  // 3 templates x 56 ordered pairs x 2 orders.
  EXPECT_EQ(total, 3 * 56 * 2);
  EXPECT_EQ(seen_pairs[0].size() + seen_pairs[1].size(), 56u);
}

TEST(IoiTemplates, TrainingDrawsOnlyTrainingTemplatesAndPairs) {
  nlohmann::json recipe = {{"name", "t"},
                           {"model", {{"n_layers", 1}, {"n_heads", 2}, {"d_model", 16}, {"d_head", 8}, {"n_ctx", 24}}},
                           {"tokenizer", {{"kind", "ioi_templates"}}},
                           {"data", spec()},
                           {"steps", 2},
                           {"batch_size", 4}};
  Trainer tr(recipe_from_json(recipe));
  tr.step();
  ModelFile f = tr.model_file();
  ASSERT_TRUE(f.info.contains("task"));
  IoiTemplateTask t = ioi_template_task(f.info["task"]);
  EXPECT_EQ(t.names.size(), 8u);
  const std::vector<int> names = ioi_template_name_ids(t, f.tokenizer);
  std::unique_ptr<DataSource> src = make_data_source(spec(), f.tokenizer);
  Rng rng(7);
  const int held_word = f.tokenizer.find("handed");  // only in the held-out template
  for (int i = 0; i < 20; ++i) {
    DataBatch d = src->next(rng, 16);
    for (int r = 0; r < d.batch.B; ++r) {
      std::vector<int> row(d.batch.tokens.begin() + r * d.batch.T, d.batch.tokens.begin() + (r + 1) * d.batch.T);
      int pos = -1;
      for (int k = 0; k < d.batch.T; ++k)
        if (d.batch.mask[r * d.batch.T + k] != 0) pos = k;
      ASSERT_GE(pos, 0);
      for (int k = 0; k <= pos; ++k) EXPECT_NE(row[k], held_word);
      IoiNames nm = ioi_names(row, pos, names);
      EXPECT_FALSE(ioi_pair_held_out(t, nm.io - names[0], nm.s - names[0]));
      EXPECT_EQ(d.batch.targets[r * d.batch.T + pos], nm.io);
    }
  }
}

TEST(IoiTemplates, NamesAmongOtherWords) {
  // <BOS>=0, words 10..13, names 20, 21: only the names count.
  const std::vector<int> names = {20, 21, 22};
  IoiNames a = ioi_names({0, 10, 20, 11, 21, 12, 21, 13, 13}, 8, names);
  EXPECT_EQ(a.io, 20);
  EXPECT_EQ(a.s, 21);
  EXPECT_THROW(ioi_names({0, 10, 20, 11, 21, 12, 22, 13}, 7, names), std::invalid_argument);
}

}  // namespace
}  // namespace cs

namespace cs {
namespace {

TEST(IoiTemplates, ReadableFormsHeldOutTemplatesAndSplits) {
  IoiTemplateTask t = ioi_template_task(spec());
  EXPECT_EQ(ioi_template_readable(t, 0, 0), "When [IO] and [S] went to the [place], [S] gave a [object] to");
  EXPECT_EQ(ioi_template_readable(t, 0, 1), "When [S] and [IO] went to the [place], [S] gave a [object] to");
  EXPECT_FALSE(ioi_template_held_out(t, 0));
  EXPECT_FALSE(ioi_template_held_out(t, 1));
  EXPECT_TRUE(ioi_template_held_out(t, 2));
  EXPECT_EQ(ioi_split_of(false, false), IoiSplit::Train);
  EXPECT_EQ(ioi_split_of(false, true), IoiSplit::HeldOutPairs);
  EXPECT_EQ(ioi_split_of(true, false), IoiSplit::HeldOutTemplates);
  EXPECT_EQ(ioi_split_of(true, true), IoiSplit::HeldOutBoth);
  for (IoiSplit sp : kIoiSplits) EXPECT_GT(std::string(ioi_split_description(sp)).size(), 10u);
  EXPECT_EQ(std::string(ioi_split_description(IoiSplit::HeldOutPairs)), "trained templates, name pairs never trained on");
}

TEST(IoiTemplates, OneSentenceIsWhatTheBatchesBuild) {
  IoiTemplateTask t = ioi_template_task(spec());
  Tokenizer tok = ioi_template_tokenizer(t);
  std::set<IoiSplit> seen;
  for (int tpl = 0; tpl < 3; ++tpl)
    for (int io = 0; io < 8; ++io)
      for (int s = 0; s < 8; ++s) {
        if (io == s) continue;
        const IoiSentence x = ioi_template_sentence_of(t, tok, {tpl, io, s, 1, 1, 0});
        EXPECT_EQ(x.text, ioi_template_sentence(t, tpl, io, s, 1, 1, 0));
        // The same tokens as the row the batch builder makes of it.
        const Batch b = ioi_template_batch(t, tok, {{tpl, io, s, 1, 1, 0}}, static_cast<int>(x.tokens.size()));
        EXPECT_EQ(x.tokens, b.tokens);
        ASSERT_EQ(x.words.size(), x.tokens.size());
        EXPECT_EQ(x.words[0], "<BOS>");
        EXPECT_EQ(x.words.back(), "to");
        EXPECT_EQ(x.template_held_out, tpl == 2);
        EXPECT_EQ(x.pair_held_out, ioi_pair_held_out(t, io, s));
        EXPECT_EQ(x.split, ioi_split_of(x.template_held_out, x.pair_held_out));
        seen.insert(x.split);
      }
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_THROW(ioi_template_sentence_of(t, tok, {3, 0, 1, 0, 0, 0}), std::invalid_argument);
  EXPECT_THROW(ioi_template_sentence_of(t, tok, {0, 0, 0, 0, 0, 0}), std::invalid_argument);
  EXPECT_THROW(ioi_template_sentence_of(t, tok, {0, 0, 1, 2, 0, 0}), std::invalid_argument);
}

}  // namespace
}  // namespace cs
