// Tests for the tokenizer: UTF-8 decoding, UTF-16 spans, char and word vocabularies, JSON form.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "test_util.h"
#include "tokenizer.h"

namespace cs {
namespace {

using testing::contains;
using testing::invalid_argument_message;

const std::string kSmile = "\xF0\x9F\x98\x80";  // U+1F600, two UTF-16 units
const std::string kEAcute = "\xC3\xA9";         // U+00E9
const std::string kEuro = "\xE2\x82\xAC";       // U+20AC

TEST(TokenizerChar, VocabularyIsBosUnkThenCodePointOrder) {
  Tokenizer t = Tokenizer::build_char("ba" + kSmile + kEAcute + "\nb" + kEuro);
  EXPECT_EQ(t.kind(), Tokenizer::Kind::Char);
  const std::vector<std::string> want = {"<BOS>", "<UNK>", "\n", "a", "b", kEAcute, kEuro, kSmile};
  EXPECT_EQ(t.vocab(), want);
  EXPECT_EQ(t.size(), 8);
  EXPECT_EQ(t.bos_id(), 0);
  EXPECT_EQ(t.unk_id(), 1);
  EXPECT_EQ(t.find("b"), 4);
  EXPECT_EQ(t.find("zz"), -1);
  EXPECT_EQ(t.token_text(7), kSmile);
}

TEST(TokenizerChar, RoundTripWithUtf16Spans) {
  const std::string text = "a" + kSmile + kEAcute + "\n" + kEuro + "b";
  Tokenizer t = Tokenizer::build_char(text);
  std::vector<Token> toks = t.encode(text, true);
  ASSERT_EQ(toks.size(), 7u);
  // <BOS> first, with an empty span at 0.
  EXPECT_EQ(toks[0].id, t.bos_id());
  EXPECT_EQ(toks[0].begin, 0);
  EXPECT_EQ(toks[0].end, 0);
  const std::vector<std::pair<int, int>> spans = {{0, 1}, {1, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}};
  const std::vector<std::string> texts = {"a", kSmile, kEAcute, "\n", kEuro, "b"};
  for (std::size_t i = 0; i < spans.size(); ++i) {
    EXPECT_EQ(toks[i + 1].begin, spans[i].first) << "token " << i;
    EXPECT_EQ(toks[i + 1].end, spans[i].second) << "token " << i;
    EXPECT_EQ(t.token_text(toks[i + 1].id), texts[i]) << "token " << i;
  }
  EXPECT_EQ(t.decode(t.encode_ids(text, true)), text);
  EXPECT_EQ(t.decode(t.encode_ids(text, false)), text);
  EXPECT_EQ(t.encode_ids(text, false).size(), 6u);
}

// token_bytes: what each token stands for in text (the page's tooltips show it).
TEST(TokenizerBytes, EachKindGivesItsTokensUtf8AndSpecialsNone) {
  const Tokenizer c = Tokenizer::build_char("ab" + kEAcute);
  const std::vector<int> ids = c.encode_ids("a" + kEAcute + kEuro, true);  // the euro sign is unknown
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(c.token_bytes(ids[0]), "");  // <BOS>
  EXPECT_EQ(c.token_bytes(ids[1]), "a");
  EXPECT_EQ(c.token_bytes(ids[2]), kEAcute);
  EXPECT_EQ(c.token_bytes(ids[3]), "");  // <UNK>
  EXPECT_THROW(c.token_bytes(c.size()), std::out_of_range);
  const Tokenizer b = Tokenizer::build_bpe("the cat the hat the mat", 20);
  std::string joined;
  for (int id : b.encode_ids("the hat", false)) joined += b.token_bytes(id);
  EXPECT_EQ(joined, "the hat");
  const Tokenizer w = Tokenizer::build_word({"<BOS>", "A", "B"});
  EXPECT_EQ(w.token_bytes(0), "");
  EXPECT_EQ(w.token_bytes(2), "B");
  EXPECT_EQ(Tokenizer::build_ids(5).token_bytes(3), "");
}

TEST(TokenizerChar, UnknownCharacterBecomesUnk) {
  Tokenizer t = Tokenizer::build_char("abc");
  std::vector<Token> toks = t.encode("a" + kSmile + "c", false);
  ASSERT_EQ(toks.size(), 3u);
  EXPECT_EQ(toks[1].id, t.unk_id());
  EXPECT_EQ(toks[1].begin, 1);
  EXPECT_EQ(toks[1].end, 3);
  EXPECT_EQ(toks[2].begin, 3);
  EXPECT_EQ(t.decode({t.find("a"), t.unk_id(), t.find("c")}), "a<UNK>c");
}

TEST(TokenizerChar, LiteralBosIsJustFiveCharacters) {
  Tokenizer t = Tokenizer::build_char("<BOS>");
  std::vector<int> ids = t.encode_ids("<BOS>", false);
  ASSERT_EQ(ids.size(), 5u);
  EXPECT_EQ(ids[0], t.find("<"));
  EXPECT_NE(ids[0], t.bos_id());
  EXPECT_EQ(t.decode(ids), "<BOS>");
  // A real <BOS> id is left out of decode().
  EXPECT_EQ(t.decode({t.bos_id(), t.find("B")}), "B");
}

TEST(TokenizerChar, ControlCharactersAreOrdinary) {
  Tokenizer t = Tokenizer::build_char(std::string("a\tb\r\n\0c", 7));
  EXPECT_EQ(t.size(), 2 + 7);
  EXPECT_GE(t.find(std::string(1, '\0')), 2);
  EXPECT_EQ(t.decode(t.encode_ids(std::string("\n\0\t", 3), false)), std::string("\n\0\t", 3));
}

TEST(TokenizerChar, MaxCharsKeepsMostFrequentTiesByCodePoint) {
  Tokenizer t = Tokenizer::build_char("ccc b a dd", 3);  // counts: ' '=3 c=3 d=2 a=1 b=1
  const std::vector<std::string> want = {"<BOS>", "<UNK>", " ", "c", "d"};
  EXPECT_EQ(t.vocab(), want);
  EXPECT_EQ(t.encode_ids("a", false)[0], t.unk_id());
  Tokenizer ties = Tokenizer::build_char("zyxw", 2);
  EXPECT_EQ(ties.vocab(), (std::vector<std::string>{"<BOS>", "<UNK>", "w", "x"}));
  EXPECT_EQ(Tokenizer::build_char("abc", 0).size(), 2);
  EXPECT_TRUE(contains(invalid_argument_message([] { Tokenizer::build_char("abc", -1); }), "max_chars"));
}

TEST(TokenizerChar, InvalidUtf8IsRejectedWithItsBytePosition) {
  Tokenizer t = Tokenizer::build_char("abc");
  struct Bad {
    std::string text;
    std::size_t byte;
  };
  const std::vector<Bad> bad = {
      {"ab\xC3", 3},                  // truncated two-byte sequence: the missing byte
      {"a\x80", 1},                   // stray continuation byte
      {"\xC0\xAF", 0},                // overlong '/'
      {"xx\xE0\x80\xAF", 2},          // overlong three-byte form
      {"\xED\xA0\x80", 0},            // UTF-16 surrogate
      {"abc\xF4\x90\x80\x80", 3},     // above U+10FFFF
      {"\xFF", 0},                    // never valid
      {"a\xE2\x82" "b", 3},           // sequence cut by an ASCII byte
  };
  for (const Bad& b : bad) {
    const std::string want = "text is not valid UTF-8 at byte " + std::to_string(b.byte);
    EXPECT_EQ(invalid_argument_message([&] { t.encode(b.text, false); }), want);
    EXPECT_EQ(invalid_argument_message([&] { Tokenizer::build_char(b.text); }), want);
  }
}

Tokenizer ioi_vocab() {
  return Tokenizer::build_word({"<BOS>", "<MID>", "When", "Mary", "and", "John", "went", "to", "the", "store", ",",
                                ".", "gave", "a", "drink", "don't", "caf\xC3\xA9", "42", "<"});
}

TEST(TokenizerWord, SplitsOnSpacePunctuationAndLiteralSpecials) {
  Tokenizer t = ioi_vocab();
  EXPECT_EQ(t.kind(), Tokenizer::Kind::Word);
  EXPECT_EQ(t.bos_id(), 0);
  EXPECT_EQ(t.unk_id(), -1);
  const std::string text = "<BOS>When Mary,and  John\twent<MID>to the store.";
  std::vector<Token> toks = t.encode(text, false);
  const std::vector<std::string> want = {"<BOS>", "When", "Mary", ",",     "and", "John", "went",
                                         "<MID>", "to",   "the",  "store", "."};
  ASSERT_EQ(toks.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(t.token_text(toks[i].id), want[i]) << "token " << i;
    // Each span covers exactly the token's text (all ASCII here, so units == bytes).
    EXPECT_EQ(text.substr(toks[i].begin, toks[i].end - toks[i].begin), want[i]) << "token " << i;
  }
  EXPECT_EQ(toks[0].begin, 0);
  EXPECT_EQ(toks[0].end, 5);
  EXPECT_EQ(toks[7].begin, 29);
  EXPECT_EQ(toks[7].end, 34);
  EXPECT_EQ(t.decode(t.encode_ids(text, false)), "When Mary , and John went <MID> to the store .");
}

TEST(TokenizerWord, AddBosApostrophesDigitsAndNonAscii) {
  Tokenizer t = ioi_vocab();
  const std::string text = "don't caf\xC3\xA9 42.";
  std::vector<Token> toks = t.encode(text, true);
  ASSERT_EQ(toks.size(), 5u);
  EXPECT_EQ(toks[0].id, t.bos_id());
  EXPECT_EQ(toks[0].begin, 0);
  EXPECT_EQ(toks[0].end, 0);
  EXPECT_EQ(t.token_text(toks[1].id), "don't");
  EXPECT_EQ(t.token_text(toks[2].id), "caf\xC3\xA9");
  EXPECT_EQ(toks[2].begin, 6);
  EXPECT_EQ(toks[2].end, 10);  // 'é' is one UTF-16 unit
  EXPECT_EQ(toks[3].begin, 11);
  EXPECT_EQ(t.token_text(toks[4].id), ".");
}

TEST(TokenizerWord, TypedBosIsNotDoubled) {
  Tokenizer t = ioi_vocab();
  std::vector<Token> toks = t.encode("<BOS> Mary John John <MID>", true);
  ASSERT_EQ(toks.size(), 5u);
  EXPECT_EQ(toks[0].id, t.bos_id());
  EXPECT_EQ(toks[0].begin, 0);
  EXPECT_EQ(toks[0].end, 5);
  EXPECT_EQ(t.encode("Mary <BOS>", true).size(), 3u);  // only a leading one is merged
}

TEST(TokenizerWord, UnknownSpecialFallsBackToPunctuation) {
  Tokenizer t = ioi_vocab();
  // "<" is in the vocabulary, "<FOO>" is not: '<' is punctuation and FOO is an unknown word.
  const std::string msg = invalid_argument_message([&] { t.encode("When <FOO>", false); });
  EXPECT_TRUE(contains(msg, "unknown word \"FOO\" at character 6")) << msg;
}

TEST(TokenizerWord, UnknownWordMessageNamesWordPositionAndVocabulary) {
  Tokenizer t = ioi_vocab();
  const std::string msg = invalid_argument_message([&] { t.encode("When Mary and Zed went", false); });
  EXPECT_TRUE(contains(msg, "unknown word \"Zed\" at character 14; this model knows: <BOS>, <MID>, When, Mary"))
      << msg;
  // Positions are UTF-16 units: the astral character before "Zed" counts 2.
  Tokenizer t2 = Tokenizer::build_word({kSmile, "a"});
  const std::string msg2 = invalid_argument_message([&] { t2.encode(kSmile + " a Zed", false); });
  EXPECT_TRUE(contains(msg2, "unknown word \"Zed\" at character 5")) << msg2;
  // Unknown punctuation is reported the same way.
  const std::string msg3 = invalid_argument_message([&] { t.encode("When!", false); });
  EXPECT_TRUE(contains(msg3, "unknown word \"!\" at character 4")) << msg3;
}

TEST(TokenizerWord, UnknownWordListsAtMostFortyEntries) {
  std::vector<std::string> vocab;
  for (int i = 0; i < 100; ++i) vocab.push_back("w" + std::to_string(i));
  Tokenizer t = Tokenizer::build_word(vocab);
  const std::string msg = invalid_argument_message([&] { t.encode("w1 nope", false); });
  EXPECT_TRUE(contains(msg, "w39, ... (100 tokens in all)")) << msg;
  EXPECT_FALSE(contains(msg, "w40")) << msg;
}

TEST(TokenizerWord, AddBosWithoutBosTokenIsAnError) {
  Tokenizer t = Tokenizer::build_word({"a", "b"});
  EXPECT_EQ(t.bos_id(), -1);
  EXPECT_EQ(t.encode_ids("a b", false), (std::vector<int>{0, 1}));
  EXPECT_TRUE(contains(invalid_argument_message([&] { t.encode("a", true); }), "no <BOS> token"));
}

TEST(TokenizerWord, BuildRejectsEmptyDuplicateAndInvalidEntries) {
  EXPECT_TRUE(contains(invalid_argument_message([] { Tokenizer::build_word({}); }), "vocabulary is empty"));
  EXPECT_TRUE(contains(invalid_argument_message([] { Tokenizer::build_word({"a", ""}); }), "entry 1 is an empty"));
  EXPECT_TRUE(contains(invalid_argument_message([] { Tokenizer::build_word({"a", "b", "a"}); }),
                       "entry 2 \"a\" appears more than once"));
  EXPECT_TRUE(contains(invalid_argument_message([] { Tokenizer::build_word({"a", "\xC3"}); }), "not valid UTF-8"));
}

TEST(Tokenizer, TokenTextOutOfRange) {
  Tokenizer t = Tokenizer::build_char("ab");
  EXPECT_THROW(t.token_text(4), std::out_of_range);
  EXPECT_THROW(t.token_text(-1), std::out_of_range);
  EXPECT_THROW(t.decode({0, 2, 9}), std::out_of_range);
}

TEST(Tokenizer, JsonRoundTrip) {
  for (const Tokenizer& t : {Tokenizer::build_char("hello " + kSmile + "\n"), ioi_vocab()}) {
    nlohmann::json j = t.to_json();
    EXPECT_EQ(j["kind"], t.kind() == Tokenizer::Kind::Char ? "char" : "word");
    // Through text and back, as the model file stores it.
    Tokenizer back = Tokenizer::from_json(nlohmann::json::parse(j.dump()));
    EXPECT_EQ(back.kind(), t.kind());
    EXPECT_EQ(back.vocab(), t.vocab());
    EXPECT_EQ(back.bos_id(), t.bos_id());
    EXPECT_EQ(back.unk_id(), t.unk_id());
    const std::string text = t.kind() == Tokenizer::Kind::Char ? "hel" + kSmile : "When Mary<MID>.";
    EXPECT_EQ(back.encode_ids(text, true), t.encode_ids(text, true));
  }
}

TEST(Tokenizer, FromJsonRejectsBadInput) {
  using nlohmann::json;
  struct Bad {
    json j;
    std::string expect;
  };
  const std::vector<Bad> bad = {
      {json::array({1, 2}), "expected a JSON object"},
      {json{{"vocab", {"a"}}}, "\"kind\" must be the string"},
      {json{{"kind", "bytes"}, {"vocab", {"a"}}}, "kind must be \"char\", \"bpe\", \"word\" or \"ids\", not \"bytes\""},
      {json{{"kind", "word"}, {"vocab", "abc"}}, "\"vocab\" must be an array"},
      {json{{"kind", "word"}, {"vocab", {"a", 3}}}, "entry 1 is a number"},
      {json{{"kind", "word"}, {"vocab", json::array()}}, "vocabulary is empty"},
      {json{{"kind", "word"}, {"vocab", {"a", "a"}}}, "appears more than once"},
      {json{{"kind", "word"}, {"vocab", {"a"}}, {"extra", 1}}, "unknown field \"extra\""},
      {json{{"kind", "char"}, {"vocab", {"<UNK>", "<BOS>", "a"}}}, "must start with \"<BOS>\""},
      {json{{"kind", "char"}, {"vocab", {"<BOS>", "<UNK>", "ab"}}}, "entry 2 \"ab\" is not a single character"},
  };
  for (const Bad& b : bad) {
    const std::string msg = invalid_argument_message([&] { Tokenizer::from_json(b.j); });
    EXPECT_EQ(msg.rfind("tokenizer: ", 0), 0u) << msg;
    EXPECT_TRUE(contains(msg, b.expect)) << "wanted \"" << b.expect << "\" in: " << msg;
  }
}

}  // namespace
}  // namespace cs
