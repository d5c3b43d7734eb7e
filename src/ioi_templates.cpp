// Sentence-template IOI: task definition, vocabulary, sentences and evaluation splits.
#include "ioi_templates.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace cs {

namespace {

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '\'' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// A template split the way the word tokenizer splits text, with each {SLOT} kept as one piece.
std::vector<std::string> pieces(const std::string& t) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < t.size()) {
    char c = t[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      ++i;
    } else if (c == '{') {
      std::size_t j = t.find('}', i);
      if (j == std::string::npos) throw std::invalid_argument("ioi_templates: template \"" + t + "\" has a { without }");
      out.push_back(t.substr(i, j - i + 1));
      i = j + 1;
    } else if (word_char(c)) {
      std::size_t j = i;
      while (j < t.size() && word_char(t[j])) ++j;
      out.push_back(t.substr(i, j - i));
      i = j;
    } else {
      out.push_back(std::string(1, c));
      ++i;
    }
  }
  return out;
}

bool is_slot(const std::string& p) { return !p.empty() && p[0] == '{'; }

std::vector<std::string> string_list(const nlohmann::json& spec, const char* key, std::size_t min_size) {
  if (!spec.contains(key) || !spec[key].is_array())
    throw std::invalid_argument(std::string("ioi_templates: \"") + key + "\" must be a list of strings");
  std::vector<std::string> v;
  for (const auto& x : spec[key]) {
    if (!x.is_string() || x.get<std::string>().empty())
      throw std::invalid_argument(std::string("ioi_templates: every entry of \"") + key + "\" must be a non-empty string");
    v.push_back(x.get<std::string>());
  }
  if (v.size() < min_size)
    throw std::invalid_argument(std::string("ioi_templates: \"") + key + "\" needs at least " + std::to_string(min_size) + " entries");
  return v;
}

void check_word(const std::string& w, const char* what) {
  for (char c : w)
    if (!word_char(c) || c == '\'')
      throw std::invalid_argument(std::string("ioi_templates: ") + what + " \"" + w + "\" must be a single word of letters and digits");
}

}  // namespace

IoiTemplateTask ioi_template_task(const nlohmann::json& spec) {
  if (!spec.is_object()) throw std::invalid_argument("ioi_templates: expected a JSON object");
  IoiTemplateTask t;
  t.templates = string_list(spec, "templates", 1);
  t.places = string_list(spec, "places", 1);
  t.objects = string_list(spec, "objects", 1);
  if (spec.contains("names")) {
    t.names = string_list(spec, "names", 2);
  } else if (spec.contains("names_path") && spec["names_path"].is_string()) {
    const std::string path = spec["names_path"].get<std::string>();
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::invalid_argument("ioi_templates: cannot read the names file " + path);
    nlohmann::json j;
    try {
      f >> j;
    } catch (const std::exception&) {
      throw std::invalid_argument("ioi_templates: the names file " + path + " is not JSON");
    }
    nlohmann::json wrapped = {{"names", j.is_object() && j.contains("names") ? j["names"] : j}};
    t.names = string_list(wrapped, "names", 2);
  } else {
    throw std::invalid_argument("ioi_templates: give the names as \"names\" (a list) or \"names_path\" (a JSON file)");
  }
  t.holdout_templates = spec.value("holdout_templates", 0);
  t.holdout_pair_fraction = spec.value("holdout_pair_fraction", 0.0);
  if (t.holdout_templates < 0 || t.holdout_templates >= static_cast<int>(t.templates.size()))
    throw std::invalid_argument("ioi_templates: holdout_templates must leave at least one template to train on");
  if (!(t.holdout_pair_fraction >= 0 && t.holdout_pair_fraction < 1))
    throw std::invalid_argument("ioi_templates: holdout_pair_fraction must be in [0, 1)");

  std::set<std::string> words;
  for (const std::string& tpl : t.templates) {
    std::vector<std::string> slots;
    for (const std::string& p : pieces(tpl)) {
      if (!is_slot(p)) {
        words.insert(p);
        continue;
      }
      if (p != "{IO}" && p != "{S}" && p != "{PLACE}" && p != "{OBJECT}")
        throw std::invalid_argument("ioi_templates: unknown slot " + p + " in \"" + tpl + "\" (slots: {IO} {S} {PLACE} {OBJECT})");
      if (p == "{IO}" || p == "{S}") slots.push_back(p);
    }
    if (slots != std::vector<std::string>{"{IO}", "{S}", "{S}"})
      throw std::invalid_argument("ioi_templates: template \"" + tpl +
                                  "\" must name {IO} once and then {S} twice, in that order (the IO S S order)");
  }
  std::set<std::string> seen;
  for (const auto* list : {&t.places, &t.objects})
    for (const std::string& w : *list) check_word(w, "place or object");
  for (const std::string& n : t.names) {
    check_word(n, "name");
    if (words.count(n)) throw std::invalid_argument("ioi_templates: the name \"" + n + "\" is also a word of a template");
    if (std::find(t.places.begin(), t.places.end(), n) != t.places.end() ||
        std::find(t.objects.begin(), t.objects.end(), n) != t.objects.end())
      throw std::invalid_argument("ioi_templates: the name \"" + n + "\" is also a place or object");
    if (!seen.insert(n).second) throw std::invalid_argument("ioi_templates: the name \"" + n + "\" is listed twice");
  }
  return t;
}

nlohmann::json ioi_template_task_json(const IoiTemplateTask& t) {
  return {{"kind", "ioi_templates"}, {"templates", t.templates}, {"names", t.names}, {"places", t.places},
          {"objects", t.objects}, {"holdout_templates", t.holdout_templates},
          {"holdout_pair_fraction", t.holdout_pair_fraction}};
}

Tokenizer ioi_template_tokenizer(const IoiTemplateTask& t) {
  std::vector<std::string> vocab{"<BOS>", "<PAD>"};
  std::set<std::string> have(vocab.begin(), vocab.end());
  auto add = [&](const std::string& w) {
    if (have.insert(w).second) vocab.push_back(w);
  };
  for (const std::string& tpl : t.templates)
    for (const std::string& p : pieces(tpl))
      if (!is_slot(p)) add(p);
  for (const std::string& w : t.places) add(w);
  for (const std::string& w : t.objects) add(w);
  for (const std::string& w : t.names) {
    if (have.count(w)) throw std::invalid_argument("ioi_templates: the name \"" + w + "\" is also another word of the task");
    add(w);
  }
  return Tokenizer::build_word(vocab);
}

std::vector<int> ioi_template_name_ids(const IoiTemplateTask& t, const Tokenizer& tok) {
  std::vector<int> ids;
  for (const std::string& n : t.names) {
    const int id = tok.find(n);
    if (id < 0) throw std::invalid_argument("ioi_templates: the name \"" + n + "\" is not in the model's vocabulary");
    ids.push_back(id);
  }
  return ids;
}

bool ioi_pair_held_out(const IoiTemplateTask& t, int a, int b) {
  if (t.holdout_pair_fraction <= 0) return false;
  if (a > b) std::swap(a, b);
  // A fixed hash of the pair (splitmix64 finaliser): the same pairs on every machine.
  std::uint64_t z = (static_cast<std::uint64_t>(a) << 32 | static_cast<std::uint64_t>(b)) + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0) < t.holdout_pair_fraction;
}

namespace {

// The template's pieces joined by single spaces (punctuation glued to the word before it), with
// fill(slot, io_here) for each slot; io_here says whether a name slot holds IO in this order.
template <class Fill>
std::string fill_template(const std::string& tpl, int order, Fill fill) {
  std::string out;
  int name_slot = 0;
  for (const std::string& p : pieces(tpl)) {
    std::string w = p;
    if (p == "{IO}" || p == "{S}") {
      // IO S S, or S IO S: the first two name slots swap.
      const bool io_here = order == 0 ? p == "{IO}" : name_slot == 1;
      w = fill(p, io_here);
      ++name_slot;
    } else if (p == "{PLACE}" || p == "{OBJECT}") {
      w = fill(p, false);
    }
    const bool glue = w.size() == 1 && !word_char(w[0]);  // punctuation sticks to the word before it
    if (!out.empty() && !glue) out += ' ';
    out += w;
  }
  return out;
}

}  // namespace

std::string ioi_template_sentence(const IoiTemplateTask& t, int tpl, int io, int s, int order, int place, int object) {
  return fill_template(t.templates.at(tpl), order, [&](const std::string& slot, bool io_here) {
    return slot == "{PLACE}" ? t.places.at(place) : slot == "{OBJECT}" ? t.objects.at(object) : t.names.at(io_here ? io : s);
  });
}

std::string ioi_template_readable(const IoiTemplateTask& t, int tpl, int order) {
  return fill_template(t.templates.at(tpl), order, [&](const std::string& slot, bool io_here) -> std::string {
    return slot == "{PLACE}" ? "[place]" : slot == "{OBJECT}" ? "[object]" : io_here ? "[IO]" : "[S]";
  });
}

bool ioi_template_uses(const IoiTemplateTask& task, int t, const std::string& slot) {
  for (const std::string& p : pieces(task.templates.at(t)))
    if (p == slot) return true;
  return false;
}

bool ioi_template_held_out(const IoiTemplateTask& t, int tpl) {
  return tpl >= static_cast<int>(t.templates.size()) - t.holdout_templates;
}

IoiSentence ioi_template_sentence_of(const IoiTemplateTask& t, const Tokenizer& tok, const IoiTemplateRow& w) {
  auto check = [](int i, std::size_t n, const char* what) {
    if (i < 0 || i >= static_cast<int>(n))
      throw std::invalid_argument(std::string("ioiSentence: ") + what + " " + std::to_string(i) + " is not one of the task's " +
                                  std::to_string(n) + " (0.." + std::to_string(static_cast<int>(n) - 1) + ")");
  };
  check(w.tpl, t.templates.size(), "template");
  check(w.io, t.names.size(), "name io");
  check(w.s, t.names.size(), "name s");
  check(w.place, t.places.size(), "place");
  check(w.object, t.objects.size(), "object");
  if (w.order != 0 && w.order != 1)
    throw std::invalid_argument("ioiSentence: order must be 0 (IO S S) or 1 (S IO S), got " + std::to_string(w.order));
  if (w.io == w.s) throw std::invalid_argument("ioiSentence: io and s must be two different names");
  IoiSentence out;
  out.text = ioi_template_sentence(t, w.tpl, w.io, w.s, w.order, w.place, w.object);
  out.tokens = tok.encode_ids(out.text, true);
  for (int id : out.tokens) out.words.push_back(tok.token_text(id));
  out.template_held_out = ioi_template_held_out(t, w.tpl);
  out.pair_held_out = ioi_pair_held_out(t, w.io, w.s);
  out.split = ioi_split_of(out.template_held_out, out.pair_held_out);
  return out;
}

int ioi_template_max_len(const IoiTemplateTask& t, const Tokenizer& tok) {
  int m = 0;
  for (int i = 0; i < static_cast<int>(t.templates.size()); ++i)
    m = std::max(m, static_cast<int>(tok.encode_ids(ioi_template_sentence(t, i, 0, 1, 0, 0, 0), true).size()));
  return m;
}

const char* ioi_split_name(IoiSplit s) {
  switch (s) {
    case IoiSplit::Train: return "train";
    case IoiSplit::HeldOutPairs: return "held-out pairs";
    case IoiSplit::HeldOutTemplates: return "held-out templates";
    case IoiSplit::HeldOutBoth: return "held-out both";
  }
  return "";
}

const char* ioi_split_description(IoiSplit s) {
  switch (s) {
    case IoiSplit::Train: return "templates and name pairs trained on";
    case IoiSplit::HeldOutPairs: return "trained templates, name pairs never trained on";
    case IoiSplit::HeldOutTemplates: return "templates never trained on, trained name pairs";
    case IoiSplit::HeldOutBoth: return "neither the template nor the name pair trained on";
  }
  return "";
}

IoiSplit ioi_split_of(bool template_held_out, bool pair_held_out) {
  return template_held_out ? (pair_held_out ? IoiSplit::HeldOutBoth : IoiSplit::HeldOutTemplates)
                           : (pair_held_out ? IoiSplit::HeldOutPairs : IoiSplit::Train);
}

Batch ioi_template_sequences(const IoiTemplateTask& t, const Tokenizer& tok, IoiSplit split, int max_rows) {
  const int NT = static_cast<int>(t.templates.size()), NN = static_cast<int>(t.names.size());
  const bool held_tpl = split == IoiSplit::HeldOutTemplates || split == IoiSplit::HeldOutBoth;
  const bool held_pair = split == IoiSplit::HeldOutPairs || split == IoiSplit::HeldOutBoth;
  std::vector<IoiTemplateRow> rows;
  const int np = static_cast<int>(t.places.size()), no = static_cast<int>(t.objects.size());
  for (int tpl = 0; tpl < NT; ++tpl) {
    if (ioi_template_held_out(t, tpl) != held_tpl) continue;
    for (int io = 0; io < NN; ++io)
      for (int s = 0; s < NN; ++s)
        if (io != s && ioi_pair_held_out(t, io, s) == held_pair)
          for (int order = 0; order < 2; ++order) {
            const int k = io * NN + s + tpl;  // the place and object cycle
            rows.push_back({tpl, io, s, order, k % np, (k / np) % no});
          }
  }
  if (max_rows > 0 && static_cast<int>(rows.size()) > max_rows) {
    std::vector<IoiTemplateRow> kept;
    for (int i = 0; i < max_rows; ++i) kept.push_back(rows[static_cast<std::size_t>(i) * rows.size() / max_rows]);
    rows.swap(kept);
  }
  return ioi_template_batch(t, tok, rows, ioi_template_max_len(t, tok));
}

Batch ioi_template_batch(const IoiTemplateTask& t, const Tokenizer& tok, const std::vector<IoiTemplateRow>& rows, int T) {
  Batch b;
  b.B = static_cast<int>(rows.size());
  b.T = T;
  b.tokens.assign(static_cast<std::size_t>(b.B) * T, tok.find("<PAD>"));
  b.targets.assign(b.tokens.size(), -1);
  b.mask.assign(b.tokens.size(), 0.0f);
  for (int r = 0; r < b.B; ++r) {
    const IoiTemplateRow& w = rows[r];
    std::vector<int> ids = tok.encode_ids(ioi_template_sentence(t, w.tpl, w.io, w.s, w.order, w.place, w.object), true);
    const std::size_t off = static_cast<std::size_t>(r) * T;
    std::copy(ids.begin(), ids.end(), b.tokens.begin() + off);
    b.targets[off + ids.size() - 1] = tok.find(t.names[w.io]);
    b.mask[off + ids.size() - 1] = 1.0f;
  }
  return b;
}

}  // namespace cs
