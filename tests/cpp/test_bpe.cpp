// Tests for the byte-pair tokenizer: the merges it learns, how it cuts text, spans, round trips,
// the JSON form and what a tampered file is told.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "rng.h"
#include "test_util.h"
#include "tokenizer.h"

namespace cs {
namespace {

using testing::contains;
using testing::invalid_argument_message;

const std::string kSmile = "\xF0\x9F\x98\x80";  // U+1F600, two UTF-16 units

std::vector<std::string> texts(const Tokenizer& t, const std::vector<Token>& toks) {
  std::vector<std::string> out;
  for (const Token& k : toks) out.push_back(t.token_text(k.id));
  return out;
}

// A few sentences with repeated words, as a corpus to learn from.
std::string small_corpus() {
  std::string s;
  for (int i = 0; i < 20; ++i)
    s += "The cat sat on the mat. The dog sat on the log, and the cat saw the dog.\n\n"
         "\"Where is the hat?\" said the cat -- and the dog said: \"On the mat!\"\n";
  return s;
}

TEST(TokenizerBpe, LearnsTheMostFrequentPairFirstAndStopsWhenNoPairRepeats) {
  // Pieces: "ab" once, " ab" twice, " cd" once. (a,b) occurs 3 times, then (" ", ab) twice;
  // every other pair once, so learning stops there.
  Tokenizer t = Tokenizer::build_bpe("ab ab ab cd", 100);
  EXPECT_EQ(t.kind(), Tokenizer::Kind::Bpe);
  EXPECT_STREQ(t.kind_name(), "bpe");
  const std::vector<std::string> want = {"<BOS>", "<UNK>", " ", "a", "b", "c", "d", "ab", " ab"};
  EXPECT_EQ(t.vocab(), want);
  ASSERT_EQ(t.merges().size(), 2u);
  EXPECT_EQ(t.merges()[0], std::make_pair(3, 4));
  EXPECT_EQ(t.merges()[1], std::make_pair(2, 7));
  EXPECT_EQ(t.bos_id(), 0);
  EXPECT_EQ(t.unk_id(), 1);

  const std::vector<Token> toks = t.encode("ab cd ab", true);
  EXPECT_EQ(texts(t, toks), (std::vector<std::string>{"<BOS>", "ab", " ", "c", "d", " ab"}));
  const std::vector<std::pair<int, int>> spans = {{0, 0}, {0, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 8}};
  for (std::size_t i = 0; i < toks.size(); ++i) {
    EXPECT_EQ(toks[i].begin, spans[i].first) << i;
    EXPECT_EQ(toks[i].end, spans[i].second) << i;
  }
}

TEST(TokenizerBpe, VocabSizeIsMetAndTiesGoToTheSmallerIds) {
  const std::string corpus = small_corpus();
  Tokenizer t = Tokenizer::build_bpe(corpus, 40);
  EXPECT_EQ(t.size(), 40);
  // Same corpus, same tokenizer: nothing depends on hash order.
  Tokenizer again = Tokenizer::build_bpe(corpus, 40);
  EXPECT_EQ(again.vocab(), t.vocab());
  EXPECT_EQ(again.merges(), t.merges());
  // A larger vocabulary extends the smaller one: the first merges are the same.
  Tokenizer big = Tokenizer::build_bpe(corpus, 60);
  for (std::size_t i = 0; i < t.merges().size(); ++i) EXPECT_EQ(big.merges()[i], t.merges()[i]) << i;
  // "xy" and "yx" each twice: the tie goes to the pair with the smaller left id, (x, y).
  Tokenizer tie = Tokenizer::build_bpe("xy.xy.yx.yx", 100);
  ASSERT_FALSE(tie.merges().empty());
  EXPECT_EQ(tie.token_text(tie.merges()[0].first) + tie.token_text(tie.merges()[0].second), "xy");
}

TEST(TokenizerBpe, MergesNeverCrossPieces) {
  Tokenizer t = Tokenizer::build_bpe(small_corpus(), 200);
  for (const std::string& v : t.vocab()) {
    if (v == "<BOS>" || v == "<UNK>") continue;
    // No token holds a space after its first character (a space only ever starts a piece),
    // and none mixes letters with punctuation.
    EXPECT_EQ(v.find(' ', 1), std::string::npos) << v;
    bool letter = false, punct = false;
    for (char c : v) {
      if (std::isalpha(static_cast<unsigned char>(c))) letter = true;
      if (std::ispunct(static_cast<unsigned char>(c))) punct = true;
    }
    EXPECT_FALSE(letter && punct) << v;
  }
  EXPECT_TRUE(t.find(" the") >= 0);
  EXPECT_TRUE(t.find(" cat") >= 0);
}

TEST(TokenizerBpe, DecodeInvertsEncodeAndSpansCoverTheText) {
  const std::string corpus = small_corpus() + "caf\xC3\xA9 " + kSmile + "!";
  Tokenizer t = Tokenizer::build_bpe(corpus, 120);
  Rng rng(7);
  const std::string alphabet = "The cat sat on mat.,\"!?:-\n  dglwhr" + kSmile;
  std::vector<std::string> cps;  // the alphabet's code points
  for (std::size_t i = 0; i < alphabet.size();) {
    const std::size_t len = (static_cast<unsigned char>(alphabet[i]) >= 0xF0) ? 4 : 1;
    cps.push_back(alphabet.substr(i, len));
    i += len;
  }
  for (int trial = 0; trial < 200; ++trial) {
    std::string text;
    const int n = static_cast<int>(rng.below(60));
    for (int i = 0; i < n; ++i) text += cps[static_cast<std::size_t>(rng.below(static_cast<int>(cps.size())))];
    const std::vector<Token> toks = t.encode(text, false);
    std::vector<int> ids;
    int at = 0;
    for (const Token& k : toks) {
      EXPECT_EQ(k.begin, at) << text;
      EXPECT_GT(k.end, k.begin) << text;
      at = k.end;
      ids.push_back(k.id);
    }
    int units = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if ((c & 0xC0u) != 0x80u) units += c >= 0xF0 ? 2 : 1;
    }
    EXPECT_EQ(at, units) << text;
    EXPECT_EQ(t.decode(ids), text);
  }
  // The corpus itself, with <BOS> first: decode leaves <BOS> out.
  EXPECT_EQ(t.decode(t.encode_ids(corpus, true)), corpus);
  // Sub-word tokens are fewer than characters.
  EXPECT_LT(t.encode_ids(small_corpus(), false).size(), small_corpus().size() / 2);
}

TEST(TokenizerBpe, UnknownCharactersBecomeUnkAndStopMerges) {
  Tokenizer t = Tokenizer::build_bpe(small_corpus(), 100);
  const std::vector<Token> toks = t.encode("the\xE2\x82\xAC" "cat", false);  // a euro sign the corpus never had
  std::vector<int> unk;
  for (std::size_t i = 0; i < toks.size(); ++i)
    if (toks[i].id == t.unk_id()) unk.push_back(static_cast<int>(i));
  ASSERT_EQ(unk.size(), 1u);
  EXPECT_EQ(toks[static_cast<std::size_t>(unk[0])].begin, 3);
  EXPECT_EQ(toks[static_cast<std::size_t>(unk[0])].end, 4);
  EXPECT_EQ(t.decode(t.encode_ids("a\xE2\x82\xAC", false)), "a\xEF\xBF\xBD");
  // A literal "<BOS>" is text, not the special token.
  for (const Token& k : t.encode("<BOS>", false)) EXPECT_NE(k.id, t.bos_id());
  EXPECT_TRUE(contains(invalid_argument_message([&] { t.encode("a\xFF", false); }), "not valid UTF-8 at byte 1"));
}

TEST(TokenizerBpe, LongRunsAreCutIntoBoundedPieces) {
  Tokenizer t = Tokenizer::build_bpe(small_corpus() + std::string(200, '-'), 100);
  const std::string text(100000, '-');
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> ids = t.encode_ids(text, false);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(t.decode(ids), text);
  EXPECT_LT(s, 10.0);  // a hang guard, far above the milliseconds it takes
}

TEST(TokenizerBpe, JsonRoundTripsAndTamperedFilesAreRefused) {
  Tokenizer t = Tokenizer::build_bpe(small_corpus(), 80);
  const nlohmann::json j = t.to_json();
  EXPECT_EQ(j["kind"], "bpe");
  ASSERT_TRUE(j.contains("merges"));
  Tokenizer back = Tokenizer::from_json(j);
  EXPECT_EQ(back.vocab(), t.vocab());
  EXPECT_EQ(back.merges(), t.merges());
  const std::string text = "The hat sat on the dog's log.";
  EXPECT_EQ(back.encode_ids(text, true), t.encode_ids(text, true));

  auto refused = [&](nlohmann::json bad) { return invalid_argument_message([&] { Tokenizer::from_json(bad); }); };
  nlohmann::json no_merges = j;
  no_merges.erase("merges");
  EXPECT_TRUE(contains(refused(no_merges), "needs \"merges\""));
  nlohmann::json special = j;
  special["merges"][0] = {0, 3};
  EXPECT_TRUE(contains(refused(special), "special tokens never merge"));
  nlohmann::json outside = j;
  outside["merges"][0] = {3, 100000};
  EXPECT_TRUE(contains(refused(outside), "outside the vocabulary"));
  nlohmann::json not_pair = j;
  not_pair["merges"][0] = "ab";
  EXPECT_TRUE(contains(refused(not_pair), "must be a pair of token ids"));
  nlohmann::json later = j;  // the last merged token used by the first merge
  later["merges"][0] = {t.size() - 1, 3};
  EXPECT_TRUE(contains(refused(later), "no earlier merge made"));
  nlohmann::json missing = j;  // a merge whose joined text is not a token
  ASSERT_LT(t.find("TT"), 0);
  missing["merges"][0] = {t.find("T"), t.find("T")};
  EXPECT_TRUE(contains(refused(missing), "\"TT\", which is not in the vocabulary"));
  nlohmann::json orphan = j;  // a merged token no merge makes
  orphan["merges"].erase(orphan["merges"].size() - 1);
  EXPECT_TRUE(contains(refused(orphan), "made by no merge"));
  nlohmann::json no_bos = j;
  no_bos["vocab"][0] = "<START>";
  EXPECT_TRUE(contains(refused(no_bos), "must start with \"<BOS>\""));
  nlohmann::json extra = j;
  extra["rules"] = 1;
  EXPECT_TRUE(contains(refused(extra), "unknown field \"rules\""));
  nlohmann::json char_with_merges = j;
  char_with_merges["kind"] = "char";
  EXPECT_TRUE(contains(refused(char_with_merges), "unknown field \"merges\""));
}

TEST(TokenizerBpe, TooSmallAVocabularyIsExplained) {
  const std::string m = invalid_argument_message([] { Tokenizer::build_bpe("abc abc", 5); });
  EXPECT_TRUE(contains(m, "give a vocab_size above")) << m;
  EXPECT_TRUE(contains(invalid_argument_message([] { Tokenizer::build_bpe("abc abc", kMaxBpeVocab + 1); }), "at most"));
}

}  // namespace
}  // namespace cs
