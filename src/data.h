// Data sources for training: synthetic induction data (random tokens with a repeated segment,
// or a random sequence repeated with a random period), the symbolic IOI task, and text.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model.h"
#include "rng.h"
#include "tokenizer.h"

namespace cs {

struct DataBatch {
  Batch batch;
  // [B, T] 1 where the target is predictable by copying from earlier in the sequence
  // (the second occurrence of a repeated stretch, after its first token), else 0.
  std::vector<unsigned char> repeated;
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  virtual int seq_len() const = 0;
  virtual DataBatch next(Rng& rng, int batch_size) = 0;
  // Sources with a fixed finite set of examples (symbolic IOI) return all of them; others empty.
  virtual DataBatch all() const { return {}; }
  // What a model file's info keeps about the task (the page builds its inputs from it); null if nothing.
  virtual nlohmann::json describe() const { return nullptr; }
};

// A synthetic vocabulary for random-token data: "<BOS>" then "t0" ... "t{n-1}".
Tokenizer synthetic_tokenizer(int n_tokens);
// The symbolic IOI vocabulary: "<BOS>" "<MID>" then the names.
Tokenizer ioi_symbolic_tokenizer(const std::vector<std::string>& names = {"A", "B", "C", "D", "E", "F"});

// Builds a source from a recipe's "data" object; throws std::invalid_argument naming the bad field.
// Kinds:
//   {"kind":"repeated_segment","seq_len":T,"min_len":a,"max_len":b}: <BOS>, random tokens, and a random
//       segment of random length copied to a random later offset.
//   {"kind":"periodic","seq_len":T,"min_period":a,"max_period":b}: <BOS>, then a random sequence of a random
//       period repeated to fill the window (the induction-heads seed's repeated random tokens).
//   {"kind":"ioi_symbolic"}: the 60 sequences <BOS> IO S1 S2 <MID> -> IO (both orders), loss at <MID>.
//   {"kind":"ioi_templates",...}: sentence-template IOI (see ioi_templates.h), rows drawn from the
//       templates and name pairs that are not held out, loss on the final name only.
//   {"kind":"text","path":file (or "text":the text itself),"seq_len":T,"repeat_fraction":f,"random_fraction":g,
//    "periodic_fraction":p,"span_fraction":s,"random_vocab":N,"copy_placement":"after_first"|"uniform"}: windows of the text (char or bpe tokenizer). A
//       fraction g of rows are random tokens of the text (only its N most frequent, when N > 0) repeated with a
//       random period, a fraction p of the others a stretch of
//       the text repeated the same way; of the remaining windows, a fraction s get a random string written
//       twice into them and (drawn independently) a fraction f a stretch of the window repeated later in it.
//       copy_placement "uniform" draws the second copy's start uniformly over where it fits (the tokens
//       copying predicts spread evenly over positions); the default draws the first copy's start
//       uniformly and the second after it, which crowds second copies towards the end of the row.
std::unique_ptr<DataSource> make_data_source(const nlohmann::json& spec, const Tokenizer& tok);

}  // namespace cs
