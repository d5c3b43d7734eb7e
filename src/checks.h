// Checks on what users hand the core: JSON numbers read exactly (or refused with a sentence
// naming the field) and JSON errors told in our own words (never the JSON library's text). The
// memory a forward pass needs is forward_bytes (config.h); a scan of a forward pass for non-finite
// values is check_finite (model.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>


namespace cs {

// ---------------------------------------------------------------------------------------------
// Reading JSON values exactly. `field` names the value in the message as the user wrote it,
// with its prefix, e.g. "recipe: data.seq_len" or "config: n_layers". Every refusal is a
// std::invalid_argument whose message is "<field> must be ..., got <what was there>".
// ---------------------------------------------------------------------------------------------

// Text from a user's file shown in a message: printable ASCII only (others become '?'), cut to
// max_len characters with "..." after.
std::string printable_text(const std::string& s, std::size_t max_len = 80);
// The shortest text that reads back as the same float: 1e+19, 0.1, 10000.
std::string float_text(float x);
// "4294967298", "2.5", "a string (\"ten\")", "an array", "null": what a value is, for a message.
std::string json_value_words(const nlohmann::json& v);
// An integer in [lo, hi]. A JSON number written with a fraction or exponent is accepted only when
// it is exactly a whole number (3.0, 1e4); 2.5, 4294967298 for an int field, strings and the
// like are refused.
std::int64_t json_to_int(const nlohmann::json& v, const std::string& field, std::int64_t lo, std::int64_t hi);
// As json_to_int, narrowed to int (lo and hi must be within int's range).
int json_to_int32(const nlohmann::json& v, const std::string& field, int lo, int hi);
// An unsigned 64-bit integer (seeds): a whole number from 0 to 2^64 - 1.
std::uint64_t json_to_u64(const nlohmann::json& v, const std::string& field);
// A finite number in [lo, hi].
double json_to_number(const nlohmann::json& v, const std::string& field, double lo, double hi);
bool json_to_bool(const nlohmann::json& v, const std::string& field);
std::string json_to_string(const nlohmann::json& v, const std::string& field);

// The same for an optional key of an object (obj must be an object): `def` when the key is
// absent; the field in messages is `where` + key (where is e.g. "recipe: data.").
int json_int_or(const nlohmann::json& obj, const char* key, int def, int lo, int hi, const std::string& where);
double json_number_or(const nlohmann::json& obj, const char* key, double def, double lo, double hi,
                      const std::string& where);
bool json_bool_or(const nlohmann::json& obj, const char* key, bool def, const std::string& where);

// Why `text` could not be parsed, in our words: "is not valid JSON (line 3, column 14)" or
// "has a number too large to represent (1e400)". e is what nlohmann::json::parse threw.
std::string json_parse_problem(const std::string& text, const nlohmann::json::exception& e);
// Parses the JSON text [b, e) into `out`; nullopt when it reads, else why not, in our words:
// json_parse_problem's sentences, or "has the key \"dtype\" twice in one object (in
// \"embed.W_E\")". A key given twice is refused, never resolved: a reader that keeps the first
// and one that keeps the last would see two different files. Every JSON a user hands the core
// (model headers and their metadata, config.json, recipes, metrics) is read through this.
std::optional<std::string> read_json(const char* b, const char* e, nlohmann::json& out);
inline std::optional<std::string> read_json(const std::string& text, nlohmann::json& out) {
  return read_json(text.data(), text.data() + text.size(), out);
}
// Parses text; on failure throws std::invalid_argument(what + " " + read_json's problem),
// e.g. "recipe: not valid JSON (line 1, column 11)" for what = "recipe:".
nlohmann::json parse_json_text(const std::string& text, const std::string& what);

}  // namespace cs
