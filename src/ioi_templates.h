// Indirect-object identification on sentence templates (beyond the IOI seed's symbolic task):
// "When Mary and John went to the store, John gave a drink to" -> "Mary". A task is a list of
// templates written in the IO S S order with the slots {IO}, {S}, {PLACE} and {OBJECT}, the
// names, places and objects that fill them, and which templates and name pairs are held out of
// training. The S IO S order swaps the first two name slots.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model.h"
#include "tokenizer.h"

namespace cs {

struct IoiTemplateTask {
  std::vector<std::string> templates;  // e.g. "When {IO} and {S} went to the {PLACE}, {S} gave a {OBJECT} to"
  std::vector<std::string> names, places, objects;
  int holdout_templates = 0;          // the last this many templates are never trained on
  double holdout_pair_fraction = 0;   // this fraction of unordered name pairs is never trained on
};

// Reads and validates {"kind":"ioi_templates","templates":[...],"names":[...] or "names_path":file
// (a JSON object with "names", or a JSON array),"places":[...],"objects":[...],
// "holdout_templates":n,"holdout_pair_fraction":f}; throws std::invalid_argument naming the problem
// (a template without exactly one {IO} and two {S} with {IO} first, a name that is also a
// template word, a duplicate name, a name that is not one word, ...).
IoiTemplateTask ioi_template_task(const nlohmann::json& spec);
// The task as plain JSON (names inline), as a model file's info stores it for the page.
nlohmann::json ioi_template_task_json(const IoiTemplateTask& task);

// Word-level vocabulary: <BOS>, <PAD>, the template words and punctuation, places, objects (in
// order of first appearance), then the names in the task's order.
Tokenizer ioi_template_tokenizer(const IoiTemplateTask& task);

// True when unordered name pair {a, b} (indices into task.names) is held out of training.
bool ioi_pair_held_out(const IoiTemplateTask& task, int a, int b);

// The token ids of the task's names, in the task's order.
std::vector<int> ioi_template_name_ids(const IoiTemplateTask& task, const Tokenizer& tok);

// One sentence: template `t`, names io and s (indices into task.names), order 0 (IO S S) or
// 1 (S IO S), place and object indices. The text (without <BOS>), ending before the answer.
std::string ioi_template_sentence(const IoiTemplateTask& task, int t, int io, int s, int order, int place, int object);

// A template in an order with readable slots: "When [IO] and [S] went to the [place], [S] gave a
// [object] to" (order 0) or "When [S] and [IO] went to ..." (order 1).
std::string ioi_template_readable(const IoiTemplateTask& task, int t, int order);

// True when template t is never trained on (one of the task's last holdout_templates).
bool ioi_template_held_out(const IoiTemplateTask& task, int t);
// Whether template t has the slot ("{PLACE}", "{OBJECT}", "{IO}" or "{S}").
bool ioi_template_uses(const IoiTemplateTask& task, int t, const std::string& slot);

// The longest sentence in tokens, with its <BOS>.
int ioi_template_max_len(const IoiTemplateTask& task, const Tokenizer& tok);

// One sentence of the task: template, names io and s (indices into task.names), order 0 (IO S S)
// or 1 (S IO S), place and object indices.
struct IoiTemplateRow {
  int tpl = 0, io = 0, s = 1, order = 0, place = 0, object = 0;
};
// The sentences as a [rows, T] batch, padded with <PAD> after each sentence (T at least the
// longest, with its <BOS>); target IO and mask 1 at the last word, -1 and 0 elsewhere.
Batch ioi_template_batch(const IoiTemplateTask& task, const Tokenizer& tok, const std::vector<IoiTemplateRow>& rows, int T);

enum class IoiSplit { Train, HeldOutPairs, HeldOutTemplates, HeldOutBoth };
inline constexpr IoiSplit kIoiSplits[] = {IoiSplit::Train, IoiSplit::HeldOutPairs, IoiSplit::HeldOutTemplates, IoiSplit::HeldOutBoth};
const char* ioi_split_name(IoiSplit s);  // "train", "held-out pairs", "held-out templates", "held-out both"
const char* ioi_split_description(IoiSplit s);  // what the split holds, in one line
// The split a sentence belongs to, from whether its template and its name pair are held out.
IoiSplit ioi_split_of(bool template_held_out, bool pair_held_out);

// One sentence as the page shows it: the text (without <BOS>), its tokens (with <BOS>) and their
// texts, and which split it belongs to.
struct IoiSentence {
  std::string text;
  std::vector<int> tokens;
  std::vector<std::string> words;
  // Each token's part: "IO" (the name said once, the answer), "S" (the name said twice), else "".
  // Filled by ModelSession::ioi_sentence, for the symbolic task's sentences too.
  std::vector<std::string> roles;
  bool template_held_out = false, pair_held_out = false;
  IoiSplit split = IoiSplit::Train;
};
// The sentence of `row` (indices checked, with a sentence naming the bad one), built by the same
// code as the training and evaluation batches.
IoiSentence ioi_template_sentence_of(const IoiTemplateTask& task, const Tokenizer& tok, const IoiTemplateRow& row);

// Every (template, ordered name pair, order) of a split, [B, T] padded with <PAD> after the
// sentence; the place and object cycle deterministically. Target IO and mask 1 at the last word.
// Rows are subsampled evenly to at most max_rows (0: all).
Batch ioi_template_sequences(const IoiTemplateTask& task, const Tokenizer& tok, IoiSplit split, int max_rows = 0);

}  // namespace cs
