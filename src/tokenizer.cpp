// Tokenizer: what a model holds. Each kind is built onto the tokenizer pipeline (tokenizer/own.h,
// tokenizer/hf.h), which encodes and decodes; this file learns byte-pair merges, stores each kind's
// JSON form, puts <BOS> first as TransformerLens prepends it, and turns byte ranges into UTF-16 spans.
#include "tokenizer.h"
#include "tokenizer/hf.h"
#include "tokenizer/models.h"
#include "tokenizer/own.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/utf8.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <unordered_set>

namespace cs {

namespace {

// Text shown in an error message, with control characters made visible.
std::string printable(const std::string& s) { return visible_text(s); }

// "an object", "a string", ...: the JSON type of j with its article.
std::string a_type(const nlohmann::json& j) {
  const std::string t = j.type_name();
  return (t == "object" || t == "array" ? "an " : "a ") + t;
}

// Checks a vocabulary list: non-empty, unique, valid UTF-8 strings.
void check_vocab(const std::vector<std::string>& vocab) {
  if (vocab.empty()) throw std::invalid_argument("tokenizer: the vocabulary is empty; give at least one token");
  std::unordered_set<std::string> seen;
  for (std::size_t i = 0; i < vocab.size(); ++i) {
    const std::string& v = vocab[i];
    if (v.empty())
      throw std::invalid_argument("tokenizer: vocabulary entry " + std::to_string(i) +
                                  " is an empty string; every token needs some text");
    const std::size_t bad = decode_utf8(v, nullptr);
    if (bad != std::string::npos)
      throw std::invalid_argument("tokenizer: vocabulary entry " + std::to_string(i) +
                                  " is not valid UTF-8 at byte " + std::to_string(bad));
    if (!seen.insert(v).second)
      throw std::invalid_argument("tokenizer: vocabulary entry " + std::to_string(i) + " \"" + printable(v) +
                                  "\" appears more than once; tokens must be unique");
  }
}

// Code points of valid UTF-8: the bytes that do not continue a sequence.
std::size_t count_code_points(const std::string& s) {
  std::size_t n = 0;
  for (char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0u) != 0x80u;
  return n;
}

// Every occurrence of the pair (a, b) in ids, left to right, replaced by `made`, into *out (the
// one merge step of learning).
void merge_pair(const std::vector<int>& ids, int a, int b, int made, std::vector<int>* out) {
  out->clear();
  out->reserve(ids.size());
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (k + 1 < ids.size() && ids[k] == a && ids[k + 1] == b) {
      out->push_back(made);
      ++k;
    } else {
      out->push_back(ids[k]);
    }
  }
}

std::uint64_t pair_key(int a, int b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
}

const char* const kTypeChars = "Text (character-level: every character is a token)";
const char* const kTypeBpe = "Text (sub-word: the model's byte-pair tokenizer cuts it into tokens; \u2423 marks a space, \u21B5 a newline)";
const char* const kNoBos = "tokenizer: this vocabulary has no <BOS> token, so none can be put first; "
                           "add \"<BOS>\" to the vocabulary or encode without it";

}  // namespace

const char* Tokenizer::kind_name() const {
  switch (kind_) {
    case Kind::Char: return "char";
    case Kind::Word: return "word";
    case Kind::Bpe: return "bpe";
    case Kind::Hf: return "hf";
    case Kind::Ids: break;
  }
  return "ids";
}

void Tokenizer::set_pipeline(std::shared_ptr<const tok::Pipeline> p) { p_ = std::move(p); }


Tokenizer Tokenizer::build_char(const std::string& corpus, int max_chars) {
  if (max_chars < 0)
    throw std::invalid_argument("tokenizer: max_chars must be 0 or more, got " + std::to_string(max_chars));
  std::map<std::uint32_t, std::uint64_t> counts;
  {
    const std::vector<CodePoint> cps = decode_or_throw(corpus);
    for (const CodePoint& c : cps) ++counts[c.cp];
  }
  std::vector<std::pair<std::uint32_t, std::uint64_t>> chars(counts.begin(), counts.end());
  if (chars.size() > static_cast<std::size_t>(max_chars)) {
    // Keep the most frequent; ties go to the smaller code point. Then back to code-point order.
    std::sort(chars.begin(), chars.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    chars.resize(static_cast<std::size_t>(max_chars));
    std::sort(chars.begin(), chars.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  std::vector<std::string> vocab;
  vocab.reserve(chars.size() + 2);
  vocab.push_back("<BOS>");
  vocab.push_back("<UNK>");
  for (const auto& c : chars) vocab.push_back(encode_utf8(c.first));
  return with_characters(std::move(vocab));
}

Tokenizer Tokenizer::build_bpe(const std::string& corpus, int vocab_size, int max_chars) {
  Tokenizer t = build_char(corpus, max_chars);
  if (vocab_size <= t.size())
    throw std::invalid_argument("tokenizer: a byte-pair vocabulary of " + std::to_string(vocab_size) +
                                " tokens cannot hold the corpus's " + std::to_string(t.size() - 2) +
                                " characters, <BOS>, <UNK> and at least one merge; give a vocab_size above " +
                                std::to_string(t.size()));
  if (vocab_size > kMaxBpeVocab)
    throw std::invalid_argument("tokenizer: a byte-pair vocabulary may have at most " + std::to_string(kMaxBpeVocab) +
                                " tokens, not " + std::to_string(vocab_size));
  t.kind_ = Kind::Bpe;
  std::unordered_map<std::string, int> index;
  for (std::size_t i = 0; i < t.vocab_.size(); ++i) index.emplace(t.vocab_[i], static_cast<int>(i));
  auto find = [&](const std::string& text) {
    const auto it = index.find(text);
    return it == index.end() ? -1 : it->second;
  };
  std::vector<int> made_ids;  // the token each merge makes
  // Every distinct piece of the corpus with its count, as character ids (<UNK> for a dropped
  // character: it never merges).
  std::vector<std::vector<int>> words;
  std::vector<std::int64_t> freq;
  {
    const std::vector<CodePoint> cps = decode_or_throw(corpus);
    std::vector<char32_t> text;
    text.reserve(cps.size());
    for (const CodePoint& c : cps) text.push_back(c.cp);
    std::unordered_map<std::string, int> seen;
    for (const auto& [a, b] : tok::own::byte_pair_pieces(text)) {
      const std::size_t bb = cps[a].byte_begin, be = cps[b - 1].byte_begin + cps[b - 1].byte_len;
      auto [it, fresh] = seen.emplace(corpus.substr(bb, be - bb), static_cast<int>(words.size()));
      if (fresh) {
        std::vector<int> ids;
        ids.reserve(b - a);
        for (std::size_t k = a; k < b; ++k) {
          const int id = find(corpus.substr(cps[k].byte_begin, cps[k].byte_len));
          ids.push_back(id < 0 ? 1 : id);  // <UNK>
        }
        words.push_back(std::move(ids));
        freq.push_back(0);
      }
      ++freq[static_cast<std::size_t>(it->second)];
    }
  }
  // Pair counts, where each pair occurs (word indices, possibly stale), and a heap of (count, pair)
  // entries checked against the current count when they come out (lazy deletion).
  std::unordered_map<std::uint64_t, std::int64_t> count;
  std::unordered_map<std::uint64_t, std::vector<int>> where;
  auto mergeable = [&](int a, int b) { return a >= 2 && b >= 2; };
  for (std::size_t w = 0; w < words.size(); ++w)
    for (std::size_t k = 0; k + 1 < words[w].size(); ++k)
      if (mergeable(words[w][k], words[w][k + 1])) {
        const std::uint64_t key = pair_key(words[w][k], words[w][k + 1]);
        count[key] += freq[w];
        auto& list = where[key];
        if (list.empty() || list.back() != static_cast<int>(w)) list.push_back(static_cast<int>(w));
      }
  using Entry = std::pair<std::int64_t, std::uint64_t>;
  // Most frequent first; among equals the smaller key (left id, then right id).
  auto lower = [](const Entry& x, const Entry& y) { return x.first != y.first ? x.first < y.first : x.second > y.second; };
  std::vector<Entry> heap;
  heap.reserve(count.size());
  for (const auto& [k, c] : count) heap.emplace_back(c, k);
  std::make_heap(heap.begin(), heap.end(), lower);
  std::vector<int> stamp(words.size(), -1);
  std::unordered_map<std::uint64_t, bool> touched;
  while (t.size() < vocab_size && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower);
    const Entry top = heap.back();
    heap.pop_back();
    auto cit = count.find(top.second);
    if (cit == count.end() || cit->second != top.first) continue;  // stale
    if (top.first < 2) break;
    const int a = static_cast<int>(top.second >> 32), b = static_cast<int>(top.second & 0xffffffffu);
    const std::string text = t.vocab_[static_cast<std::size_t>(a)] + t.vocab_[static_cast<std::size_t>(b)];
    int made = find(text);
    if (made < 0) {
      made = t.size();
      t.vocab_.push_back(text);
      index.emplace(text, made);
    }
    const int m = static_cast<int>(t.merges_.size());
    t.merges_.emplace_back(a, b);
    made_ids.push_back(made);
    touched.clear();
    const std::vector<int> list = std::move(where[top.second]);
    where.erase(top.second);
    for (int w : list) {
      if (stamp[static_cast<std::size_t>(w)] == m) continue;
      stamp[static_cast<std::size_t>(w)] = m;
      std::vector<int>& ids = words[static_cast<std::size_t>(w)];
      bool has = false;
      for (std::size_t k = 0; k + 1 < ids.size() && !has; ++k) has = ids[k] == a && ids[k + 1] == b;
      if (!has) continue;
      const std::int64_t f = freq[static_cast<std::size_t>(w)];
      for (std::size_t k = 0; k + 1 < ids.size(); ++k)
        if (mergeable(ids[k], ids[k + 1])) {
          const std::uint64_t key = pair_key(ids[k], ids[k + 1]);
          count[key] -= f;
          touched[key] = true;
        }
      std::vector<int> next;
      merge_pair(ids, a, b, made, &next);
      ids.swap(next);
      for (std::size_t k = 0; k + 1 < ids.size(); ++k)
        if (mergeable(ids[k], ids[k + 1])) {
          const std::uint64_t key = pair_key(ids[k], ids[k + 1]);
          count[key] += f;
          touched[key] = true;
          auto& wl = where[key];
          if (wl.empty() || wl.back() != w) wl.push_back(w);
        }
    }
    count.erase(top.second);
    for (const auto& [key, _] : touched) {
      auto it = count.find(key);
      if (it == count.end()) continue;
      if (it->second <= 0) {
        count.erase(it);
        continue;
      }
      heap.emplace_back(it->second, key);
      std::push_heap(heap.begin(), heap.end(), lower);
    }
  }
  return with_byte_pairs(std::move(t.vocab_), std::move(t.merges_), made_ids);
}
Tokenizer Tokenizer::with_characters(std::vector<std::string> vocab) {
  Tokenizer t;
  t.kind_ = Kind::Char;
  t.vocab_ = std::move(vocab);
  t.bos_ = 0;
  t.unk_ = 1;
  t.description_ = "character-level vocabulary of " + std::to_string(t.size()) + " tokens";
  t.typing_hint_ = kTypeChars;
  t.set_pipeline(tok::own::characters(t.vocab_));
  return t;
}

Tokenizer Tokenizer::with_byte_pairs(std::vector<std::string> vocab, std::vector<std::pair<int, int>> merges,
                                     const std::vector<int>& made) {
  Tokenizer t = with_characters(std::move(vocab));
  t.kind_ = Kind::Bpe;
  t.merges_ = std::move(merges);
  t.description_ = "sub-word (byte-pair) vocabulary of " + std::to_string(t.size()) + " tokens";
  t.typing_hint_ = kTypeBpe;
  t.set_pipeline(tok::own::byte_pairs(t.vocab_, t.merges_, made));
  return t;
}

Tokenizer Tokenizer::build_word(const std::vector<std::string>& vocab) {
  check_vocab(vocab);
  Tokenizer t;
  t.kind_ = Kind::Word;
  t.vocab_ = vocab;
  t.set_pipeline(tok::own::words(vocab));
  t.bos_ = t.p_->find("<BOS>");
  t.reads_text_ = false;
  t.typed_bos_first_ = true;
  t.description_ = "word-level vocabulary of " + std::to_string(t.size()) + " tokens";
  t.typing_hint_ = "Text (word-level: words of the model's vocabulary, separated by spaces)";
  return t;
}

Tokenizer Tokenizer::build_ids(int size) {
  if (size < 1)
    throw std::invalid_argument("tokenizer: a token-id vocabulary needs at least one token, got " + std::to_string(size));
  Tokenizer t;
  t.kind_ = Kind::Ids;
  t.set_pipeline(tok::own::ids(size));
  t.vocab_.reserve(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) t.vocab_.push_back(t.p_->token(i));
  t.reads_text_ = false;
  t.description_ = "token-id vocabulary of " + std::to_string(size) + " (the file carries no tokenizer)";
  t.typing_hint_ = "Text (token ids separated by spaces, e.g. \"12 7 7 3\": this model file carries no tokenizer)";
  t.no_bos_ = "tokenizer: a token-id vocabulary has no <BOS> token, so none can be put first; type the first token's id yourself";
  return t;
}

Tokenizer Tokenizer::build_hf(const std::string& tokenizer_json, int d_vocab, const std::string& bos_token) {
  Tokenizer t;
  t.kind_ = Kind::Hf;
  t.set_pipeline(hf::from_text(tokenizer_json));
  t.hf_text_ = std::make_shared<const std::string>(tokenizer_json);
  const tok::Pipeline& p = *t.p_;
  if (p.size() > d_vocab)
    throw std::invalid_argument("tokenizer.json: it has " + std::to_string(p.size()) + " tokens but the model's embedding has " +
                                std::to_string(d_vocab) + " rows; it is not this model's tokenizer");
  t.vocab_.reserve(static_cast<std::size_t>(d_vocab));
  for (int i = 0; i < d_vocab; ++i) {
    std::string shown = i < p.size() ? p.display(i) : std::string();
    t.vocab_.push_back(shown.empty() ? "<unused " + std::to_string(i) + ">" : shown);
  }
  t.hf_bos_ = bos_token;
  const std::string bos = bos_token.empty() ? "<|endoftext|>" : bos_token;
  t.bos_ = p.find(bos);
  if (!bos_token.empty() && t.bos_ < 0)
    throw std::invalid_argument("tokenizer.json: the bos_token " + bos_token + " is not one of its tokens");
  t.description_ = "Hugging Face tokenizer.json vocabulary of " + std::to_string(d_vocab) + " tokens (" +
                   p.summary()["model"].get<std::string>() + ")";
  t.typing_hint_ = "Text (the model's Hugging Face tokenizer cuts it into byte-level tokens; \u2423 marks a space, <0xE2> one byte of a character)";
  t.no_bos_ = "tokenizer: this tokenizer.json has no <|endoftext|> token to put first; name its bos_token";
  return t;
}

const std::string& Tokenizer::token_text(int id) const {
  if (id < 0 || id >= size())
    throw std::out_of_range("tokenizer: token id " + std::to_string(id) + " is outside the vocabulary of " +
                            std::to_string(size()) + " tokens (ids 0 to " + std::to_string(size() - 1) + ")");
  return vocab_[static_cast<std::size_t>(id)];
}

std::string Tokenizer::token_bytes(int id) const {
  token_text(id);  // throws for an id outside the vocabulary
  return id < p_->size() ? p_->token_bytes(id) : std::string();
}

std::string Tokenizer::token_bytes(const std::vector<int>& ids, std::vector<int>& offsets) const {
  std::string out;
  offsets.assign(1, 0);
  for (int id : ids) {
    out += token_bytes(id);
    offsets.push_back(static_cast<int>(out.size()));
  }
  return out;
}

int Tokenizer::bos_id() const { return bos_; }

int Tokenizer::find(const std::string& text) const { return p_->find(text); }

std::vector<Token> Tokenizer::encode(const std::string& text, bool add_bos) const {
  if (add_bos && bos_ < 0) throw std::invalid_argument(no_bos_.empty() ? kNoBos : no_bos_);
  const tok::Encoding e = p_->encode(text);
  const auto spans = utf16_spans(text, e.bytes);
  std::vector<Token> out;
  out.reserve(e.ids.size() + 1);
  if (add_bos) out.push_back(Token{bos_, 0, 0});
  for (std::size_t i = 0; i < e.ids.size(); ++i) {
    if (e.ids[i] < 0) p_->model().refuse(text.substr(e.bytes[i].first, e.bytes[i].second - e.bytes[i].first), spans[i].first);
    out.push_back(Token{e.ids[i], spans[i].first, spans[i].second});
  }
  // A <BOS> the user typed first stands for the one add_bos put there: keep one, with its span.
  if (add_bos && typed_bos_first_ && out.size() >= 2 && out[1].id == bos_) out.erase(out.begin());
  return out;
}

std::vector<int> Tokenizer::encode_ids(const std::string& text, bool add_bos) const {
  std::vector<Token> toks = encode(text, add_bos);
  std::vector<int> ids;
  ids.reserve(toks.size());
  for (const Token& t : toks) ids.push_back(t.id);
  return ids;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  std::vector<int> kept;
  kept.reserve(ids.size());
  for (int id : ids) {
    token_text(id);  // throws for an id outside the vocabulary
    if (id != bos_ && id < p_->size()) kept.push_back(id);
  }
  return p_->decode(kept);
}

// Bpe: the vocabulary is <BOS>, <UNK>, single characters, then longer tokens; each merge joins
// two tokens that exist by then (specials never merge) into a longer token of the vocabulary, and
// every longer token is made by some merge. Returns the token each merge makes.
static std::vector<int> check_merges(const std::vector<std::string>& vocab, const std::vector<std::pair<int, int>>& merges) {
  std::size_t n_base = 2;
  while (n_base < vocab.size() && count_code_points(vocab[n_base]) == 1) ++n_base;
  for (std::size_t i = n_base; i < vocab.size(); ++i)
    if (count_code_points(vocab[i]) < 2)
      throw std::invalid_argument("tokenizer: bpe vocabulary entry " + std::to_string(i) + " \"" + printable(vocab[i]) +
                                  "\" is a single character after the merged tokens began; characters come first");
  std::unordered_map<std::string, int> index;
  for (std::size_t i = 0; i < vocab.size(); ++i) index.emplace(vocab[i], static_cast<int>(i));
  std::vector<char> made(vocab.size(), 0);
  for (std::size_t i = 2; i < n_base; ++i) made[i] = 1;
  std::unordered_set<std::uint64_t> seen;
  std::vector<int> out;
  for (std::size_t m = 0; m < merges.size(); ++m) {
    const auto [a, b] = merges[m];
    auto where = "tokenizer: bpe merge " + std::to_string(m) + " ";
    if (a < 2 || b < 2) throw std::invalid_argument(where + "joins <BOS> or <UNK>; special tokens never merge");
    if (!made[static_cast<std::size_t>(a)] || !made[static_cast<std::size_t>(b)])
      throw std::invalid_argument(where + "joins a token that no earlier merge made");
    const std::string joined = vocab[static_cast<std::size_t>(a)] + vocab[static_cast<std::size_t>(b)];
    const auto it = index.find(joined);
    if (it == index.end()) throw std::invalid_argument(where + "makes \"" + printable(joined) + "\", which is not in the vocabulary");
    if (!seen.insert(pair_key(a, b)).second) throw std::invalid_argument(where + "repeats an earlier merge");
    made[static_cast<std::size_t>(it->second)] = 1;
    out.push_back(it->second);
  }
  for (std::size_t i = n_base; i < vocab.size(); ++i)
    if (!made[i])
      throw std::invalid_argument("tokenizer: bpe vocabulary entry " + std::to_string(i) + " \"" + printable(vocab[i]) +
                                  "\" is made by no merge");
  return out;
}

nlohmann::json Tokenizer::to_json() const {
  nlohmann::json j{{"kind", kind_name()}, {"vocab", vocab_}};
  if (kind_ == Kind::Hf) {
    j["tokenizer_json"] = *hf_text_;
    j["bos_token"] = hf_bos_;
    j["summary"] = p_->summary();
  }
  if (kind_ == Kind::Bpe) {
    nlohmann::json m = nlohmann::json::array();
    for (const auto& [a, b] : merges_) m.push_back({a, b});
    j["merges"] = m;
  }
  return j;
}

nlohmann::json Tokenizer::describe() const {
  nlohmann::json j = to_json();
  j.erase("tokenizer_json");  // a tokenizer.json's text: saved with the model, not described
  j["reads_text"] = reads_text_;
  j["description"] = description_;
  j["typing_hint"] = typing_hint_;
  j["units"] = kind_ == Kind::Char ? "characters" : "tokens";
  j["bos_id"] = bos_;
  j["summary"] = p_->summary();
  return j;
}

Tokenizer Tokenizer::from_json(const nlohmann::json& j) {
  if (!j.is_object())
    throw std::invalid_argument(std::string("tokenizer: expected a JSON object with \"kind\" and \"vocab\", got ") +
                                a_type(j));
  if (!j.contains("kind") || !j["kind"].is_string())
    throw std::invalid_argument("tokenizer: \"kind\" must be the string \"char\", \"bpe\", \"word\" or \"ids\"");
  const std::string kind = j["kind"].get<std::string>();
  if (kind == "hf") {
    // The vocabulary's length is the model's d_vocab; its entries are recomputed from the file.
    if (!j.contains("tokenizer_json") || !j["tokenizer_json"].is_string() || !j.contains("vocab") || !j["vocab"].is_array())
      throw std::invalid_argument("tokenizer: an \"hf\" tokenizer needs \"tokenizer_json\" (the file's text) and \"vocab\"");
    const std::string bos = j.contains("bos_token") && j["bos_token"].is_string() ? j["bos_token"].get<std::string>() : "";
    return build_hf(j["tokenizer_json"].get<std::string>(), static_cast<int>(j["vocab"].size()), bos);
  }
  if (kind != "char" && kind != "word" && kind != "ids" && kind != "bpe")
    throw std::invalid_argument("tokenizer: kind must be \"char\", \"bpe\", \"word\" or \"ids\", not \"" + printable(kind) + "\"");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "kind" && it.key() != "vocab" && !(kind == "bpe" && it.key() == "merges"))
      throw std::invalid_argument("tokenizer: unknown field \"" + printable(it.key()) + "\"; only \"kind\", \"vocab\"" +
                                  (kind == "bpe" ? " and \"merges\"" : "") + " are allowed");
  if (!j.contains("vocab") || !j["vocab"].is_array())
    throw std::invalid_argument("tokenizer: \"vocab\" must be an array of strings");
  std::vector<std::string> vocab;
  vocab.reserve(j["vocab"].size());
  for (const auto& v : j["vocab"]) {
    if (!v.is_string())
      throw std::invalid_argument("tokenizer: vocabulary entry " + std::to_string(vocab.size()) + " is " +
                                  a_type(v) + ", not a string");
    vocab.push_back(v.get<std::string>());
  }
  if (kind == "ids") {
    if (vocab.empty()) throw std::invalid_argument("tokenizer: the vocabulary is empty; give at least one token");
    for (std::size_t i = 0; i < vocab.size(); ++i)
      if (vocab[i] != "#" + std::to_string(i))
        throw std::invalid_argument("tokenizer: ids vocabulary entry " + std::to_string(i) + " is \"" +
                                    printable(vocab[i].substr(0, 40)) + "\"; it must be \"#" + std::to_string(i) + "\"");
    return build_ids(static_cast<int>(vocab.size()));
  }
  check_vocab(vocab);
  Tokenizer t;
  if (kind == "bpe") {
    if (vocab.size() > static_cast<std::size_t>(kMaxBpeVocab))
      throw std::invalid_argument("tokenizer: a byte-pair vocabulary may have at most " + std::to_string(kMaxBpeVocab) +
                                  " tokens, not " + std::to_string(vocab.size()));
    if (vocab.size() < 2 || vocab[0] != "<BOS>" || vocab[1] != "<UNK>")
      throw std::invalid_argument("tokenizer: a bpe vocabulary must start with \"<BOS>\" (id 0) and \"<UNK>\" (id 1)");
    if (!j.contains("merges") || !j["merges"].is_array())
      throw std::invalid_argument("tokenizer: a bpe tokenizer needs \"merges\", an array of [left id, right id] pairs");
    const auto& ms = j["merges"];
    if (ms.size() > vocab.size() * 4)
      throw std::invalid_argument("tokenizer: a bpe tokenizer of " + std::to_string(vocab.size()) + " tokens cannot have " +
                                  std::to_string(ms.size()) + " merges");
    for (std::size_t i = 0; i < ms.size(); ++i) {
      const auto& m = ms[i];
      if (!m.is_array() || m.size() != 2 || !m[0].is_number_integer() || !m[1].is_number_integer())
        throw std::invalid_argument("tokenizer: bpe merge " + std::to_string(i) + " must be a pair of token ids, like [17, 42]");
      const long long a = m[0].get<long long>(), b = m[1].get<long long>();
      if (a < 0 || b < 0 || a >= static_cast<long long>(vocab.size()) || b >= static_cast<long long>(vocab.size()))
        throw std::invalid_argument("tokenizer: bpe merge " + std::to_string(i) + " names a token id outside the vocabulary of " +
                                    std::to_string(vocab.size()));
      t.merges_.emplace_back(static_cast<int>(a), static_cast<int>(b));
    }
    const std::vector<int> made = check_merges(vocab, t.merges_);
    return with_byte_pairs(std::move(vocab), std::move(t.merges_), made);
  }
  if (kind == "char") {
    if (vocab.size() < 2 || vocab[0] != "<BOS>" || vocab[1] != "<UNK>")
      throw std::invalid_argument("tokenizer: a char vocabulary must start with \"<BOS>\" (id 0) and \"<UNK>\" (id 1)");
    for (std::size_t i = 2; i < vocab.size(); ++i) {
      std::vector<CodePoint> cps;
      decode_utf8(vocab[i], &cps);
      if (cps.size() != 1)
        throw std::invalid_argument("tokenizer: char vocabulary entry " + std::to_string(i) + " \"" +
                                    printable(vocab[i]) + "\" is not a single character");
    }
    return with_characters(std::move(vocab));
  }
  return build_word(vocab);
}

}  // namespace cs
