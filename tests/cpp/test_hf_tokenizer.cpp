// Tests for the tokenizer.json reader (src/tokenizer/hf.h) on small hand-made files whose answers
// can be worked out by hand: the GPT-2 pattern's pieces, merge order, added tokens, Split and Digits,
// offsets through NFC and inside characters, lossy decoding, and files it must refuse. The same
// reader is compared with Hugging Face's own implementation on 20,000 texts in
// tests/js/hf_tokenizers.test.mjs.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "test_util.h"
#include "tokenizer.h"
#include "tokenizer/hf.h"
#include "tokenizer/utf8.h"

namespace cs::hf {
namespace {

using nlohmann::json;
using testing::contains;
using testing::invalid_argument_message;

// GPT-2's byte characters, computed the way its encoder.py does (the test's own copy).
std::string byte_char(int b) {
  int n = 0;
  for (int x = 0; x < 256; ++x) {
    const bool keep = (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255);
    const int c = keep ? x : 256 + n++;
    if (x == b) return encode_utf8(static_cast<std::uint32_t>(c));
  }
  return {};
}

// A byte-level BPE file: the 256 byte tokens (id = byte), then one token per merge.
json byte_level(const std::vector<std::pair<std::string, std::string>>& merges, json pre = nullptr) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_char(b)] = b;
  json ms = json::array();
  int id = 256;
  for (const auto& [a, b] : merges) {
    if (!vocab.contains(a + b)) vocab[a + b] = id++;
    ms.push_back(a + " " + b);
  }
  if (pre.is_null()) pre = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  return {{"version", "1.0"},
          {"added_tokens", json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", pre},
          {"post_processor", {{"type", "ByteLevel"}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"vocab", vocab}, {"merges", ms}}}};
}

}  // namespace

json byte_level_for_tests() { return byte_level({}); }

namespace {

std::vector<std::string> piece_texts(const tok::Pipeline& t, const std::string& text) {
  std::vector<std::string> out;
  for (const auto& p : t.pre_tokenize_str(text)) out.push_back(p.first);
  return out;
}

const std::string G = "\xC4\xA0";  // "Ġ", the byte character of a space
const std::string C = "\xC4\x8A";  // "Ċ", of "\n"

TEST(HfTokenizer, Gpt2PatternPieces) {
  const auto t = from_json(byte_level({}));
  // Contractions are their own pieces, lower case only; a space joins the word after it.
  EXPECT_EQ(piece_texts(*t, "I'm don't WE'LL"),
            (std::vector<std::string>{"I", "'m", G + "don", "'t", G + "WE", "'", "LL"}));
  // A run of white space gives its last space to the next word; at the end it stays whole.
  EXPECT_EQ(piece_texts(*t, "a   b  "), (std::vector<std::string>{"a", G + G, G + "b", G + G}));
  EXPECT_EQ(piece_texts(*t, "x\n\ny"), (std::vector<std::string>{"x", C, C, "y"}));
  // Numbers and punctuation runs, each with at most one space before them.
  EXPECT_EQ(piece_texts(*t, "in 2024, ok?!"), (std::vector<std::string>{"in", G + "2024", ",", G + "ok", "?!"}));
}

TEST(HfTokenizer, MergesLowestRankFirstWithByteRanges) {
  const auto t = from_json(byte_level({{G, "t"}, {"h", "e"}, {G + "t", "he"}}));
  // " the": Ġ t h e -> Ġt h e -> Ġt he -> Ġthe; "the": t h e -> t he (no merge joins t and he).
  const tok::Encoding e = t->encode("the the");
  EXPECT_EQ(e.ids, (std::vector<int>{'t', 257, 258}));
  EXPECT_EQ(e.bytes, (std::vector<std::pair<std::size_t, std::size_t>>{{0, 1}, {1, 3}, {3, 7}}));
  EXPECT_EQ(t->decode(e.ids), "the the");
  EXPECT_EQ(t->token(258), G + "the");
  EXPECT_EQ(t->find(G + "the"), 258);
}

TEST(HfTokenizer, ATokenInsideACharacterCoversOnlyItsBytes) {
  const auto t = from_json(byte_level({}));
  const std::string euro = "\xE2\x82\xAC";  // three bytes, one UTF-16 unit
  const tok::Encoding e = t->encode("a" + euro);
  ASSERT_EQ(e.ids.size(), 4u);
  EXPECT_EQ(e.bytes[1], (std::pair<std::size_t, std::size_t>{1, 2}));
  EXPECT_EQ(e.bytes[3], (std::pair<std::size_t, std::size_t>{3, 4}));
  // As UTF-16 spans, each byte of the euro sign covers the whole character.
  const auto spans = utf16_spans("a" + euro, e.bytes);
  EXPECT_EQ(spans[0], (std::pair<int, int>{0, 1}));
  EXPECT_EQ(spans[1], (std::pair<int, int>{1, 2}));
  EXPECT_EQ(spans[3], (std::pair<int, int>{1, 2}));
  // Decoding part of a character's bytes gives U+FFFD, as `tokenizers` does.
  EXPECT_EQ(t->decode({e.ids[1], e.ids[2]}), "\xEF\xBF\xBD");
  EXPECT_EQ(t->decode(e.ids), "a" + euro);
}

TEST(HfTokenizer, TokensAreDrawnReadably) {
  json j = byte_level({{G, "t"}, {byte_char(0xC3), byte_char(0xA9)}});  // "é" is the bytes C3 A9, written "Ã" "©"
  j["added_tokens"] = json::array({{{"id", 300}, {"content", "<|endoftext|>"}, {"special", true}}});
  const auto t = from_json(j);
  EXPECT_EQ(t->display(256), "\u2423t");  // "Ġt": a leading space as ␣
  EXPECT_EQ(t->token_bytes(256), " t");
  EXPECT_EQ(t->display(257), "\xC3\xA9");  // the merged token "Ã©" is the whole character é
  EXPECT_EQ(t->display(0xE2), "<0xE2>");     // one byte of a three-byte character
  EXPECT_EQ(t->display('\n'), "\u21B5");
  EXPECT_EQ(t->display(0), "<0x00>");
  EXPECT_EQ(t->display(300), "<|endoftext|>");
}

TEST(HfTokenizer, NfcOffsetsPointAtTheOriginalCharacters) {
  json j = byte_level({});
  j["normalizer"] = {{"type", "NFC"}};
  const auto t = from_json(j);
  const std::string text = "e\xCC\x81x";  // e + combining acute (2 bytes) + x: NFC makes é (2 bytes)
  const tok::Encoding e = t->encode(text);
  ASSERT_EQ(e.ids.size(), 3u);  // é's two bytes, then x
  EXPECT_EQ(e.ids[0], 0xC3);
  EXPECT_EQ(e.ids[1], 0xA9);
  // Both bytes of the composed é come from the original e and its accent, bytes 0..3.
  EXPECT_EQ(e.bytes[0], (std::pair<std::size_t, std::size_t>{0, 3}));
  EXPECT_EQ(e.bytes[1], (std::pair<std::size_t, std::size_t>{0, 3}));
  EXPECT_EQ(e.bytes[2], (std::pair<std::size_t, std::size_t>{3, 4}));
}

TEST(HfTokenizer, AddedTokensAreSplitOutFirst) {
  json j = byte_level({});
  j["model"]["vocab"]["<|endoftext|>"] = 256;
  j["added_tokens"] = json::array({{{"id", 256}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", false},
                                    {"single_word", false}, {"lstrip", false}, {"rstrip", false}},
                                   {{"id", 257}, {"content", "  "}, {"special", false}, {"normalized", true}},
                                   {{"id", 258}, {"content", "cat"}, {"special", false}, {"single_word", true}, {"rstrip", true}}});
  const auto t = from_json(j);
  EXPECT_EQ(t->size(), 259);
  EXPECT_TRUE(t->is_special(256));
  EXPECT_FALSE(t->is_special(257));
  const tok::Encoding e = t->encode("a<|endoftext|>b  c");
  EXPECT_EQ(e.ids, (std::vector<int>{'a', 256, 'b', 257, 'c'}));
  EXPECT_EQ(e.bytes[1], (std::pair<std::size_t, std::size_t>{1, 14}));
  // single_word: "cat" inside "cats" is not the added token; rstrip takes the spaces after it.
  EXPECT_EQ(t->encode("cats").ids, (std::vector<int>{'c', 'a', 't', 's'}));
  const tok::Encoding w = t->encode("a cat  b");
  EXPECT_EQ(w.ids, (std::vector<int>{'a', ' ', 258, 'b'}));
  EXPECT_EQ(w.bytes[2], (std::pair<std::size_t, std::size_t>{2, 7}));
  EXPECT_EQ(t->decode(e.ids), "a<|endoftext|>b  c");
  EXPECT_EQ(t->decode(e.ids, true), "ab  c");
}

TEST(HfTokenizer, DigitsAndSplitBehaviours) {
  const json digits = {{"type", "Sequence"},
                       {"pretokenizers", json::array({{{"type", "Digits"}, {"individual_digits", true}},
                                                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}})}};
  const auto t = from_json(byte_level({}, digits));
  EXPECT_EQ(piece_texts(*t, "ab 123"), (std::vector<std::string>{"ab", G, "1", "2", "3"}));
  auto split = [&](const std::string& behavior) {
    const json pre = {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", false}};
    return piece_texts(*from_json(byte_level({}, pre)), "a--b-c");
  };
  EXPECT_EQ(split("Removed"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split("Isolated"), (std::vector<std::string>{"a", "-", "-", "b", "-", "c"}));
  EXPECT_EQ(split("Contiguous"), (std::vector<std::string>{"a", "--", "b", "-", "c"}));
  // As `tokenizers` does: only the first of a run of matches joins the piece before it.
  EXPECT_EQ(split("MergedWithPrevious"), (std::vector<std::string>{"a-", "-", "b-", "c"}));
  EXPECT_EQ(split("MergedWithNext"), (std::vector<std::string>{"a", "-", "-b", "-c"}));
}

TEST(HfTokenizer, TemplateProcessingAddsItsTokensWhenAsked) {
  json j = byte_level({});
  j["added_tokens"] = json::array({{{"id", 256}, {"content", "<s>"}, {"special", true}, {"normalized", false}}});
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                 {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                         {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {256}}, {"tokens", {"<s>"}}}}}}};
  const auto t = from_json(j);
  EXPECT_EQ(t->encode("hi").ids, (std::vector<int>{'h', 'i'}));
  EXPECT_EQ(t->encode("hi", true).ids, (std::vector<int>{256, 'h', 'i'}));
}

TEST(HfTokenizer, RefusesWhatItDoesNotImplementInASentence) {
  auto problem = [](const json& j) { return invalid_argument_message([&] { from_json(j); }); };
  json j = byte_level({});
  j["model"]["type"] = "Unigram";
  EXPECT_TRUE(contains(problem(j), "the model is \"Unigram\"; circuitscope reads byte-pair (BPE) tokenizers only"));
  j = byte_level({});
  j["pre_tokenizer"] = {{"type", "Metaspace"}};
  EXPECT_TRUE(contains(problem(j), "the pre-tokenizer \"Metaspace\" is not one circuitscope implements"));
  j = byte_level({});
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\w+"}}}, {"behavior", "Isolated"}};
  EXPECT_TRUE(contains(problem(j), "regular expression \"\\\\w+\" is not one circuitscope implements"));
  j = byte_level({});
  j["normalizer"] = {{"type", "Lowercase"}};
  EXPECT_TRUE(contains(problem(j), "the normalizer \"Lowercase\""));
  j = byte_level({});
  j["model"]["merges"] = {"a zz"};
  EXPECT_TRUE(contains(problem(j), "merge 1 joins \"a\" and \"zz\", but \"zz\" is not in the vocabulary"));
  j = byte_level({{"a", "b"}});
  j["model"]["merges"].push_back("a b");
  EXPECT_TRUE(contains(problem(j), "merge 2 (\"a\" and \"b\") is listed twice"));
  j = byte_level({});
  j["model"]["merges"] = {"a b"};  // "ab" is not a token
  EXPECT_TRUE(contains(problem(j), "merge 1 makes \"ab\", which is not in the vocabulary"));
  j = byte_level({});
  j["model"]["vocab"]["zz"] = 5;
  EXPECT_TRUE(contains(problem(j), "gives the id 5 to two tokens"));
  j = byte_level({});
  j["model"]["vocab"].erase(byte_char(7));
  EXPECT_TRUE(contains(problem(j), "the byte 7"));
  j = byte_level({});
  j["model"]["dropout"] = 0.1;
  EXPECT_TRUE(contains(problem(j), "dropout"));
  json deep = {{"type", "NFC"}};
  for (int i = 0; i < 20; ++i) deep = {{"type", "Sequence"}, {"normalizers", json::array({deep})}};
  j = byte_level({});
  j["normalizer"] = deep;
  EXPECT_TRUE(contains(problem(j), "nests Sequence more than 8 deep"));
  EXPECT_TRUE(contains(invalid_argument_message([] { from_text("{\"model\": {\"type\": \"BPE\"}, \"model\": 1}"); }),
                       "twice"));
  EXPECT_TRUE(contains(invalid_argument_message([] { from_text("{\"model\": "); }), "not valid JSON"));
  EXPECT_TRUE(contains(invalid_argument_message([] { from_text("[1, 2]"); }), "not a JSON object"));
  EXPECT_TRUE(contains(invalid_argument_message([] { from_text(std::string(kMaxFileBytes + 1, ' ')); }),
                       "circuitscope reads tokenizer files of up to 64 MB"));
}

TEST(HfTokenizer, TextThatIsNotUtf8IsRefused) {
  const auto t = from_json(byte_level({}));
  EXPECT_TRUE(contains(invalid_argument_message([&] { t->encode("ab\xFF"); }), "not valid UTF-8 at byte 2"));
  EXPECT_THROW(t->decode({100000}), std::out_of_range);
}

TEST(Utf8, LossyDecodingReplacesEachMaximalInvalidSubpart) {
  const std::string R = "\xEF\xBF\xBD";
  EXPECT_EQ(decode_utf8_lossy("a\x80" "b"), "a" + R + "b");
  EXPECT_EQ(decode_utf8_lossy("\xE2\x82"), R);          // a truncated three-byte sequence: one
  EXPECT_EQ(decode_utf8_lossy("\xE0\x80"), R + R);       // E0 80 can start no character: two
  EXPECT_EQ(decode_utf8_lossy("\xED\xA0\x80"), R + R + R);  // an encoded surrogate: three
  EXPECT_EQ(decode_utf8_lossy("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
}

}  // namespace
}  // namespace cs::hf

namespace cs {
namespace {

using nlohmann::json;
using testing::contains;
using testing::invalid_argument_message;

// The model-facing tokenizer of kind "hf": a tokenizer.json padded to the model's d_vocab, with
// TransformerLens's <BOS>, spans in UTF-16, and the file carried through to_json / from_json.
TEST(TokenizerHf, ReadsTextPadsTheVocabularyAndRoundTrips) {
  json j = hf::byte_level_for_tests();
  j["added_tokens"] = json::array({{{"id", 256}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", false}}});
  const std::string text = j.dump();
  const Tokenizer t = Tokenizer::build_hf(text, 260);
  EXPECT_EQ(t.kind(), Tokenizer::Kind::Hf);
  EXPECT_STREQ(t.kind_name(), "hf");
  EXPECT_TRUE(t.reads_text());
  EXPECT_FALSE(Tokenizer::build_ids(3).reads_text());
  EXPECT_EQ(t.size(), 260);
  EXPECT_EQ(t.bos_id(), 256);
  EXPECT_EQ(t.token_text(' '), "\u2423");
  EXPECT_EQ(t.token_text(258), "<unused 258>");
  const std::string euro = "\xE2\x82\xAC";
  const std::vector<Token> toks = t.encode("a " + euro, true);
  ASSERT_EQ(toks.size(), 6u);  // <BOS>, a, space, the euro sign's three bytes
  EXPECT_EQ(toks[0].id, 256);
  EXPECT_EQ(toks[1].begin, 0);
  EXPECT_EQ(toks[1].end, 1);
  EXPECT_EQ(toks[3].begin, 2);  // each byte of the euro sign spans the whole character
  EXPECT_EQ(toks[5].end, 3);
  EXPECT_EQ(t.decode(t.encode_ids("a " + euro, true)), "a " + euro);
  const Tokenizer back = Tokenizer::from_json(t.to_json());
  EXPECT_EQ(back.kind(), Tokenizer::Kind::Hf);
  EXPECT_EQ(back.size(), 260);
  EXPECT_EQ(back.encode_ids("a " + euro, true), t.encode_ids("a " + euro, true));
  EXPECT_TRUE(contains(invalid_argument_message([&] { Tokenizer::build_hf(text, 200); }),
                       "it has 257 tokens but the model's embedding has 200 rows"));
  EXPECT_TRUE(contains(invalid_argument_message([&] { Tokenizer::build_hf(text, 300, "<s>"); }), "the bos_token <s> is not one of its tokens"));
}

}  // namespace
}  // namespace cs
