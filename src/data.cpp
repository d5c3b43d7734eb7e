// Data sources: synthetic induction data, symbolic IOI and text windows.
#include "data.h"

#include "checks.h"
#include "ioi_templates.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cs {

Tokenizer synthetic_tokenizer(int n_tokens) {
  if (n_tokens < 2 || n_tokens > 100000) throw std::invalid_argument("data: a synthetic vocabulary needs 2 to 100000 tokens");
  std::vector<std::string> v{"<BOS>"};
  for (int i = 0; i < n_tokens; ++i) v.push_back("t" + std::to_string(i));
  return Tokenizer::build_word(v);
}

Tokenizer ioi_symbolic_tokenizer(const std::vector<std::string>& names) {
  std::vector<std::string> v{"<BOS>", "<MID>"};
  v.insert(v.end(), names.begin(), names.end());
  return Tokenizer::build_word(v);
}

namespace {

// data.<key> as an exactly read integer in [lo, hi]; def == INT32_MIN makes it required.
int get_int(const nlohmann::json& j, const char* key, int def, int lo, int hi) {
  if (!j.contains(key) && def == INT32_MIN) throw std::invalid_argument(std::string("data: \"") + key + "\" is required");
  return json_int_or(j, key, def, lo, hi, "recipe: data.");
}

// A batch of B next-token rows of length T, each written by fill(row, repeated, rng): row[0..T) are
// the tokens, repeated[t] = 1 where position t's target can be copied from earlier in the row.
template <class Fill>
DataBatch make_rows(int B, int T, Rng& rng, Fill&& fill) {
  DataBatch d;
  d.batch.B = B;
  d.batch.T = T;
  d.batch.tokens.resize(static_cast<std::size_t>(B) * T);
  d.repeated.assign(d.batch.tokens.size(), 0);
  for (int r = 0; r < B; ++r)
    fill(&d.batch.tokens[static_cast<std::size_t>(r) * T], &d.repeated[static_cast<std::size_t>(r) * T], rng);
  d.batch = next_token_batch(d.batch.tokens, B, T);
  return d;
}

// <BOS>, then a random sequence of period P (tokens from draw(rng)) repeated to fill the row.
template <class Draw>
void fill_periodic(int* row, unsigned char* repeated, int T, int P, int bos, Rng& rng, Draw&& draw) {
  row[0] = bos;
  for (int t = 1; t < T; ++t) row[t] = t <= P ? draw(rng) : row[t - P];
  for (int t = P + 1; t + 1 < T; ++t) repeated[t] = 1;
}

class RepeatedSegment : public DataSource {
 public:
  RepeatedSegment(int T, int min_len, int max_len, int bos, int first, int n)
      : T_(T), min_(min_len), max_(max_len), bos_(bos), first_(first), n_(n) {}
  int seq_len() const override { return T_; }
  DataBatch next(Rng& rng, int B) override {
    return make_rows(B, T_, rng, [&](int* row, unsigned char* repeated, Rng& g) {
      row[0] = bos_;
      for (int t = 1; t < T_; ++t) row[t] = first_ + g.below(n_);
      // Segment [s1, s1+L) copied to [s2, s2+L), s2 >= s1 + L, inside positions 1..T-1.
      int L = min_ + g.below(max_ - min_ + 1);
      int s1 = 1 + g.below(T_ - 2 * L);
      int s2 = s1 + L + g.below(T_ - s1 - 2 * L + 1);
      for (int i = 0; i < L; ++i) row[s2 + i] = row[s1 + i];
      // Position t predicts row[t+1]; copying can predict it when t+1 is in the second copy and t too.
      for (int t = s2; t + 1 < s2 + L; ++t) repeated[t] = 1;
    });
  }
 private:
  int T_, min_, max_, bos_, first_, n_;
};

class Periodic : public DataSource {
 public:
  Periodic(int T, int min_p, int max_p, int bos, int first, int n)
      : T_(T), min_(min_p), max_(max_p), bos_(bos), first_(first), n_(n) {}
  int seq_len() const override { return T_; }
  DataBatch next(Rng& rng, int B) override {
    return make_rows(B, T_, rng, [&](int* row, unsigned char* repeated, Rng& g) {
      int P = min_ + g.below(max_ - min_ + 1);
      fill_periodic(row, repeated, T_, P, bos_, g, [&](Rng& h) { return first_ + h.below(n_); });
    });
  }
 private:
  int T_, min_, max_, bos_, first_, n_;
};

class IoiSymbolic : public DataSource {
 public:
  explicit IoiSymbolic(const Tokenizer& tok) {
    int bos = tok.find("<BOS>"), mid = tok.find("<MID>");
    if (bos < 0 || mid < 0) throw std::invalid_argument("data: the ioi_symbolic task needs <BOS> and <MID> in the vocabulary");
    std::vector<int> names;
    for (int i = 0; i < tok.size(); ++i)
      if (i != bos && i != mid) names.push_back(i);
    if (names.size() < 2) throw std::invalid_argument("data: the ioi_symbolic task needs at least two names");
    all_.batch.T = 5;
    for (int io : names)
      for (int s : names) {
        if (io == s) continue;
        for (int order = 0; order < 2; ++order) {
          // <BOS> IO S S <MID> (order 0) or <BOS> S IO S <MID> (order 1); target IO at <MID>.
          std::vector<int> seq = order == 0 ? std::vector<int>{bos, io, s, s, mid} : std::vector<int>{bos, s, io, s, mid};
          all_.batch.tokens.insert(all_.batch.tokens.end(), seq.begin(), seq.end());
          for (int t = 0; t < 5; ++t) {
            all_.batch.targets.push_back(t == 4 ? io : -1);
            all_.batch.mask.push_back(t == 4 ? 1.0f : 0.0f);
          }
          ++all_.batch.B;
        }
      }
    all_.repeated.assign(all_.batch.tokens.size(), 0);
  }
  int seq_len() const override { return 5; }
  // The seed trains on all 60 sequences at once; a batch size below that samples without replacement.
  DataBatch next(Rng& rng, int B) override {
    if (B <= 0 || B >= all_.batch.B) return all_;
    std::vector<int> idx(all_.batch.B);
    for (int i = 0; i < all_.batch.B; ++i) idx[i] = i;
    for (int i = 0; i < B; ++i) std::swap(idx[i], idx[i + rng.below(all_.batch.B - i)]);
    DataBatch d;
    d.batch.B = B;
    d.batch.T = 5;
    for (int i = 0; i < B; ++i)
      for (int t = 0; t < 5; ++t) {
        std::size_t k = static_cast<std::size_t>(idx[i]) * 5 + t;
        d.batch.tokens.push_back(all_.batch.tokens[k]);
        d.batch.targets.push_back(all_.batch.targets[k]);
        d.batch.mask.push_back(all_.batch.mask[k]);
      }
    d.repeated.assign(d.batch.tokens.size(), 0);
    return d;
  }
  DataBatch all() const override { return all_; }

 private:
  DataBatch all_;
};

class IoiTemplates : public DataSource {
 public:
  IoiTemplates(IoiTemplateTask task, const Tokenizer& tok) : task_(std::move(task)), tok_(tok) {
    if (tok_.size() != ioi_template_tokenizer(task_).size() || tok_.find("<PAD>") != 1)
      throw std::invalid_argument("data: the ioi_templates task needs the tokenizer built from it (tokenizer kind \"ioi_templates\")");
    T_ = ioi_template_max_len(task_, tok_);
    const int NN = static_cast<int>(task_.names.size());
    for (int a = 0; a < NN; ++a)
      for (int b = 0; b < NN; ++b)
        if (a != b && !ioi_pair_held_out(task_, a, b)) pairs_.push_back({a, b});
    if (pairs_.empty()) throw std::invalid_argument("data: ioi_templates holds out every name pair");
  }
  int seq_len() const override { return T_; }
  DataBatch next(Rng& rng, int B) override {
    const int NT = static_cast<int>(task_.templates.size()) - task_.holdout_templates;
    std::vector<IoiTemplateRow> rows(B);
    for (IoiTemplateRow& w : rows) {
      w.tpl = rng.below(NT);
      const auto pr = pairs_[rng.below(static_cast<int>(pairs_.size()))];
      w.io = pr.first;
      w.s = pr.second;
      w.order = rng.below(2);
      w.place = rng.below(static_cast<int>(task_.places.size()));
      w.object = rng.below(static_cast<int>(task_.objects.size()));
    }
    DataBatch d;
    d.batch = ioi_template_batch(task_, tok_, rows, T_);
    d.repeated.assign(d.batch.tokens.size(), 0);
    return d;
  }
  nlohmann::json describe() const override { return ioi_template_task_json(task_); }

 private:
  IoiTemplateTask task_;
  Tokenizer tok_;
  int T_ = 0;
  std::vector<std::pair<int, int>> pairs_;
};

class TextWindows : public DataSource {
 public:
  TextWindows(std::vector<int> ids, int T, double repeat_fraction, double random_fraction, double span_fraction,
              double periodic_fraction, int bos, int unk, int random_vocab, bool uniform_placement)
      : ids_(std::move(ids)), T_(T), frac_(repeat_fraction), random_frac_(random_fraction), span_frac_(span_fraction),
        periodic_frac_(periodic_fraction), bos_(bos), uniform_placement_(uniform_placement) {
    if (static_cast<int>(ids_.size()) < T_ + 1)
      throw std::invalid_argument("data: the text is shorter than one window of " + std::to_string(T_) + " tokens");
    // The characters random rows draw from: those of the text, without the special tokens.
    std::vector<char> seen;
    for (int id : ids_) {
      if (id == bos || id == unk) continue;
      if (static_cast<std::size_t>(id) >= seen.size()) seen.resize(id + 1, 0);
      if (!seen[id]) seen[id] = 1, alphabet_.push_back(id);
    }
    std::sort(alphabet_.begin(), alphabet_.end());
    if (random_vocab > 0 && random_vocab < static_cast<int>(alphabet_.size())) {
      // Only the random_vocab most frequent tokens of the text (ties: the smaller id), in id order.
      std::vector<long long> count(seen.size(), 0);
      for (int id : ids_)
        if (id != bos && id != unk) ++count[static_cast<std::size_t>(id)];
      std::stable_sort(alphabet_.begin(), alphabet_.end(), [&](int a, int b) { return count[static_cast<std::size_t>(a)] > count[static_cast<std::size_t>(b)]; });
      alphabet_.resize(static_cast<std::size_t>(random_vocab));
      std::sort(alphabet_.begin(), alphabet_.end());
    }
    if ((random_frac_ > 0 || span_frac_ > 0) && alphabet_.size() < 2) throw std::invalid_argument("data: the text has too few characters for random rows");
  }
  int seq_len() const override { return T_; }
  DataBatch next(Rng& rng, int B) override {
    const int span = static_cast<int>(ids_.size()) - (T_ - 1);
    return make_rows(B, T_, rng, [&](int* row, unsigned char* repeated, Rng& g) {
      if (random_frac_ > 0 && g.uniform() < random_frac_) {
        // Random characters repeated with a random period (the induction-heads paper's repeated
        // random tokens): only copying predicts them.
        fill_periodic(row, repeated, T_, period(g), bos_, g,
                      [&](Rng& h) { return alphabet_[h.below(static_cast<int>(alphabet_.size()))]; });
        return;
      }
      if (periodic_frac_ > 0 && g.uniform() < periodic_frac_) {
        // The same with a stretch of the text as the period: a passage written out again and
        // again, where copying pays only when it matches more than the last character.
        const int P = period(g);
        int at = g.below(static_cast<int>(ids_.size()) - P + 1);
        fill_periodic(row, repeated, T_, P, bos_, g, [&](Rng&) { return ids_[at++]; });
        return;
      }
      int start = g.below(span);
      row[0] = bos_;
      for (int t = 1; t < T_; ++t) row[t] = ids_[start + t - 1];
      if (span_frac_ > 0 && g.uniform() < span_frac_) {
        // A random string of characters written twice into the prose (a name or code repeated
        // in running text): copying predicts the second copy, the text around it does not.
        int L = 6 + g.below(15);
        if (2 * L + 2 < T_) {
          auto [s1, s2] = place_copies(L, g);
          for (int i = 0; i < L; ++i) row[s1 + i] = row[s2 + i] = alphabet_[g.below(static_cast<int>(alphabet_.size()))];
          for (int t = s2; t + 1 < s2 + L; ++t) repeated[t] = 1;
        }
      }
      if (frac_ > 0 && g.uniform() < frac_) {
        // Repeat a stretch of this window later in it: [s1, s1+L) -> [s2, s2+L).
        int L = 8 + g.below(std::max(1, T_ / 4 - 8));
        if (2 * L + 1 < T_) {
          auto [s1, s2] = place_copies(L, g);
          for (int i = 0; i < L; ++i) row[s2 + i] = row[s1 + i];
          for (int t = s2; t + 1 < s2 + L; ++t) repeated[t] = 1;
        }
      }
    });
  }
 private:
  // The period of a periodic row: 10 to 100 tokens, at most half the row.
  int period(Rng& g) const { return 10 + g.below(std::max(1, std::min(100, T_ / 2) - 10 + 1)); }
  // Where the two copies of L tokens go, [s1, s1+L) and [s2, s2+L), s2 >= s1 + L, inside
  // positions 1..T-1. By default the first copy's start is uniform and the second follows it, so
  // second copies (the tokens copying predicts) crowd the end of the row; with uniform placement
  // the second copy's start is uniform over where it can go and the first is placed before it.
  std::pair<int, int> place_copies(int L, Rng& g) const {
    if (uniform_placement_) {
      const int s2 = 1 + L + g.below(T_ - 2 * L);
      return {1 + g.below(s2 - L), s2};
    }
    const int s1 = 1 + g.below(T_ - 2 * L);
    return {s1, s1 + L + g.below(T_ - s1 - 2 * L + 1)};
  }

  std::vector<int> ids_;
  int T_;
  double frac_, random_frac_, span_frac_, periodic_frac_;
  int bos_;
  bool uniform_placement_ = false;
  std::vector<int> alphabet_;
};

}  // namespace

std::unique_ptr<DataSource> make_data_source(const nlohmann::json& spec, const Tokenizer& tok) {
  if (!spec.is_object() || !spec.contains("kind") || !spec["kind"].is_string())
    throw std::invalid_argument("data: expected an object with a \"kind\"");
  const std::string kind = spec["kind"].get<std::string>();
  if (kind == "repeated_segment" || kind == "periodic") {
    int bos = tok.find("<BOS>");
    if (bos != 0 || tok.size() < 3)
      throw std::invalid_argument("data: " + kind + " needs a synthetic vocabulary (\"<BOS>\" first, then the tokens)");
    int T = get_int(spec, "seq_len", INT32_MIN, 8, 8192);
    int n = tok.size() - 1;
    if (kind == "repeated_segment") {
      int a = get_int(spec, "min_len", 4, 2, T), b = get_int(spec, "max_len", std::max(4, T / 4), a, T);
      if (2 * b + 2 > T) throw std::invalid_argument("data: max_len must be at most (seq_len - 2) / 2");
      return std::make_unique<RepeatedSegment>(T, a, b, bos, 1, n);
    }
    int a = get_int(spec, "min_period", 10, 2, T), b = get_int(spec, "max_period", 100, a, T);
    if (b + 2 > T) throw std::invalid_argument("data: max_period must be at most seq_len - 2");
    return std::make_unique<Periodic>(T, a, b, bos, 1, n);
  }
  if (kind == "ioi_symbolic") return std::make_unique<IoiSymbolic>(tok);
  if (kind == "ioi_templates") return std::make_unique<IoiTemplates>(ioi_template_task(spec), tok);
  if (kind == "text") {
    // The text inline ("text", for a page that cannot read files) or from a file ("path").
    std::stringstream ss;
    if (spec.contains("text") && spec["text"].is_string()) {
      ss << spec["text"].get<std::string>();
    } else {
      if (!spec.contains("path") || !spec["path"].is_string())
        throw std::invalid_argument("data: text needs a \"path\" or the \"text\" itself");
      std::string path = spec["path"].get<std::string>();
      std::ifstream f(path, std::ios::binary);
      if (!f) throw std::invalid_argument("data: cannot read the text file " + path);
      ss << f.rdbuf();
    }
    int T = get_int(spec, "seq_len", INT32_MIN, 8, 8192);
    const std::string w = "recipe: data.";
    double frac = json_number_or(spec, "repeat_fraction", 0.0, 0, 1, w),
           rfrac = json_number_or(spec, "random_fraction", 0.0, 0, 1, w),
           sfrac = json_number_or(spec, "span_fraction", 0.0, 0, 1, w),
           pfrac = json_number_or(spec, "periodic_fraction", 0.0, 0, 1, w);
    if (!(sfrac >= 0 && sfrac <= 1)) throw std::invalid_argument("data: span_fraction must be between 0 and 1");
    if (!(frac >= 0 && frac <= 1)) throw std::invalid_argument("data: repeat_fraction must be between 0 and 1");
    if (!(rfrac >= 0 && rfrac <= 1)) throw std::invalid_argument("data: random_fraction must be between 0 and 1");
    if (!(pfrac >= 0 && pfrac <= 1)) throw std::invalid_argument("data: periodic_fraction must be between 0 and 1");
    const int random_vocab = get_int(spec, "random_vocab", 0, 0, kMaxVocab);
    std::string placement = "after_first";
    if (spec.contains("copy_placement")) {
      if (!spec["copy_placement"].is_string() ||
          (spec["copy_placement"] != "after_first" && spec["copy_placement"] != "uniform"))
        throw std::invalid_argument("data: copy_placement must be \"after_first\" or \"uniform\", got " +
                                    json_value_words(spec["copy_placement"]));
      placement = spec["copy_placement"].get<std::string>();
    }
    return std::make_unique<TextWindows>(tok.encode_ids(ss.str(), false), T, frac, rfrac, sfrac, pfrac, tok.bos_id(),
                                         tok.unk_id(), random_vocab, placement == "uniform");
  }
  throw std::invalid_argument("data: unknown kind \"" + printable_text(kind) + "\" (repeated_segment, periodic, ioi_symbolic, ioi_templates, text)");
}

}  // namespace cs
