// Tests for the tokenizer pipeline (src/tokenizer/pipeline.h) as circuitscope's own tokenizers run
// on it: each kind names its stages, a byte-pair model merges a piece once and then reads it from its
// cache (so typing re-encodes only the edited piece), and what comes from the cache equals what a
// fresh tokenizer computes. The ids of the shipped models are pinned by tests/js/tokenizer_ids.test.mjs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"
#include "tokenizer.h"
#include "tokenizer/models.h"
#include "tokenizer/pipeline.h"

namespace cs {
namespace {

std::string corpus() {
  std::string s;
  for (int i = 0; i < 30; ++i)
    s += "The cat sat on the mat. The dog sat on the log, and the cat saw the dog.\n"
         "\"Where is the hat?\" said the cat -- and the dog said: \"On the mat!\"\n";
  return s;
}

const tok::BpeModel& bpe_model(const Tokenizer& t) {
  const auto* m = dynamic_cast<const tok::BpeModel*>(&t.pipeline().model());
  EXPECT_NE(m, nullptr);
  return *m;
}

TEST(TokenizerPipeline, EachKindNamesItsStages) {
  const Tokenizer c = Tokenizer::build_char("abc");
  EXPECT_EQ(c.pipeline().summary()["model"], "characters (5 tokens)");
  EXPECT_EQ(c.describe()["units"], "characters");
  const Tokenizer b = Tokenizer::build_bpe(corpus(), 60);
  EXPECT_EQ(b.pipeline().summary()["pre_tokenizer"], "circuitscope's pieces");
  EXPECT_EQ(b.pipeline().summary()["model"], "BPE (60 tokens, " + std::to_string(b.merges().size()) + " merges)");
  EXPECT_EQ(b.describe()["units"], "tokens");
  const Tokenizer w = Tokenizer::build_word({"<BOS>", "<MID>", "Mary", "John", "."});
  EXPECT_EQ(w.pipeline().summary()["added_tokens"], 2);
  EXPECT_FALSE(w.describe()["reads_text"].get<bool>());
  const Tokenizer i = Tokenizer::build_ids(10);
  EXPECT_EQ(i.pipeline().summary()["model"], "token ids (10)");
  for (const Tokenizer* t : {&c, &b, &w, &i}) EXPECT_FALSE(t->describe()["typing_hint"].get<std::string>().empty());
}

TEST(TokenizerPipeline, TypingReencodesOnlyTheEditedPiece) {
  const Tokenizer t = Tokenizer::build_bpe(corpus(), 80);
  const tok::BpeModel& m = bpe_model(t);
  std::string text = corpus().substr(0, 600);
  const std::vector<int> first = t.encode_ids(text, true);
  const std::size_t after_first = m.pieces_merged();
  EXPECT_GT(after_first, 5u);
  EXPECT_LT(after_first, 40u);  // the text's distinct pieces, not its 150-odd pieces
  // The same text again: nothing is merged.
  EXPECT_EQ(t.encode_ids(text, true), first);
  EXPECT_EQ(m.pieces_merged(), after_first);
  // A keystroke in the middle: only the edited piece is new.
  text.insert(300, "x");
  const std::vector<int> edited = t.encode_ids(text, true);
  EXPECT_LE(m.pieces_merged(), after_first + 1);
  // What the cache gives equals what a fresh tokenizer (an empty cache) computes.
  const Tokenizer fresh = Tokenizer::from_json(t.to_json());
  EXPECT_EQ(fresh.encode_ids(text, true), edited);
  EXPECT_EQ(fresh.encode(text, true).size(), t.encode(text, true).size());
  for (std::size_t k = 0; k < edited.size(); ++k) {
    EXPECT_EQ(fresh.encode(text, true)[k].begin, t.encode(text, true)[k].begin) << k;
    if (HasFailure()) break;
  }
}

TEST(TokenizerPipeline, TheCacheStartsAgainWhenFullAndStaysRight) {
  const Tokenizer t = Tokenizer::build_bpe(corpus(), 80);
  const tok::BpeModel& m = bpe_model(t);
  std::string many;
  for (std::size_t i = 0; i < tok::BpeModel::kCachePieces + 10; ++i) many += " ca" + std::to_string(i);
  t.encode_ids(many, false);
  const std::size_t merged = m.pieces_merged();
  EXPECT_GE(merged, tok::BpeModel::kCachePieces + 10);
  // The first pieces were dropped when the cache started again, so they are merged anew, the same.
  const std::string head = " ca0 ca1 ca2";
  const Tokenizer fresh = Tokenizer::from_json(t.to_json());
  EXPECT_EQ(t.encode_ids(head, false), fresh.encode_ids(head, false));
  EXPECT_GT(m.pieces_merged(), merged);
}

}  // namespace
}  // namespace cs
