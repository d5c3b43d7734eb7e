// Checks on what users hand the core: exact JSON numbers, JSON errors in our own words, forward
// pass sizes and non-finite activations.
#include "checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <stdexcept>
#include <vector>

namespace cs {

using json = nlohmann::json;

std::string printable_text(const std::string& s, std::size_t max_len) {
  std::string out;
  for (char ch : s) {
    if (out.size() >= max_len) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(ch);
    out += (c >= 0x20 && c < 0x7F) ? ch : '?';
  }
  return out;
}

std::string float_text(float x) {
  char buf[40];
  if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 1e7f) {
    std::snprintf(buf, sizeof buf, "%.0f", static_cast<double>(x));
    return buf;
  }
  for (int prec = 1; prec <= 9; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, static_cast<double>(x));
    if (std::strtof(buf, nullptr) == x) break;
  }
  return buf;
}

std::string json_value_words(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case json::value_t::string: return "a string (\"" + printable_text(v.get_ref<const std::string&>(), 40) + "\")";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_integer: return std::to_string(v.get<std::int64_t>());
    case json::value_t::number_unsigned: return std::to_string(v.get<std::uint64_t>());
    case json::value_t::number_float: {
      // Whole numbers as integers; others as the shortest text that reads back as the same double.
      char buf[40];
      const double d = v.get<double>();
      if (std::isnan(d)) return "NaN";
      if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15) {
        std::snprintf(buf, sizeof buf, "%.0f", d);
        return buf;
      }
      std::snprintf(buf, sizeof buf, "%.17g", v.get<double>());
      for (int prec = 1; prec <= 17; ++prec) {
        char b2[40];
        std::snprintf(b2, sizeof b2, "%.*g", prec, v.get<double>());
        if (std::strtod(b2, nullptr) == v.get<double>()) return b2;
      }
      return buf;
    }
    default: return "a value of an unexpected kind";
  }
}

namespace {

[[noreturn]] void refuse(const std::string& field, const std::string& wanted, const json& v) {
  throw std::invalid_argument(field + " must be " + wanted + ", got " + json_value_words(v));
}

std::string whole_between(std::int64_t lo, std::int64_t hi) {
  return "a whole number between " + std::to_string(lo) + " and " + std::to_string(hi);
}

}  // namespace

std::int64_t json_to_int(const json& v, const std::string& field, std::int64_t lo, std::int64_t hi) {
  const std::string wanted = whole_between(lo, hi);
  if (v.is_number_unsigned()) {
    const std::uint64_t u = v.get<std::uint64_t>();
    if (hi < 0 || u > static_cast<std::uint64_t>(hi)) refuse(field, wanted, v);
    const auto x = static_cast<std::int64_t>(u);
    if (x < lo) refuse(field, wanted, v);
    return x;
  }
  if (v.is_number_integer()) {
    const std::int64_t x = v.get<std::int64_t>();
    if (x < lo || x > hi) refuse(field, wanted, v);
    return x;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // Every int64 in [lo, hi] that a double holds exactly; the comparison with 2^63 is exact.
    if (!std::isfinite(d) || d != std::floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0)
      refuse(field, wanted, v);
    const auto x = static_cast<std::int64_t>(d);
    if (x < lo || x > hi) refuse(field, wanted, v);
    return x;
  }
  refuse(field, wanted, v);
}

int json_to_int32(const json& v, const std::string& field, int lo, int hi) {
  return static_cast<int>(json_to_int(v, field, lo, hi));
}

std::uint64_t json_to_u64(const json& v, const std::string& field) {
  const std::string wanted = "a whole number between 0 and 18446744073709551615";
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer()) {
    if (v.get<std::int64_t>() < 0) refuse(field, wanted, v);
    return static_cast<std::uint64_t>(v.get<std::int64_t>());
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < 0 || d >= 18446744073709551616.0) refuse(field, wanted, v);
    return static_cast<std::uint64_t>(d);
  }
  refuse(field, wanted, v);
}

double json_to_number(const json& v, const std::string& field, double lo, double hi) {
  auto wanted = [&] {
    return "a number between " + json_value_words(json(lo)) + " and " + json_value_words(json(hi));
  };
  if (!v.is_number()) refuse(field, wanted(), v);
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) refuse(field, wanted(), v);
  return d;
}

bool json_to_bool(const json& v, const std::string& field) {
  if (!v.is_boolean()) refuse(field, "true or false", v);
  return v.get<bool>();
}

std::string json_to_string(const json& v, const std::string& field) {
  if (!v.is_string()) refuse(field, "a string", v);
  return v.get<std::string>();
}

int json_int_or(const json& obj, const char* key, int def, int lo, int hi, const std::string& where) {
  const auto it = obj.find(key);
  return it == obj.end() ? def : json_to_int32(*it, where + key, lo, hi);
}

double json_number_or(const json& obj, const char* key, double def, double lo, double hi, const std::string& where) {
  const auto it = obj.find(key);
  return it == obj.end() ? def : json_to_number(*it, where + key, lo, hi);
}

bool json_bool_or(const json& obj, const char* key, bool def, const std::string& where) {
  const auto it = obj.find(key);
  return it == obj.end() ? def : json_to_bool(*it, where + key);
}

std::string json_parse_problem(const std::string& text, const json::exception& e) {
  if (const auto* pe = dynamic_cast<const json::parse_error*>(&e)) {
    // pe->byte is 1-based: the byte at which parsing stopped.
    const std::size_t at = pe->byte == 0 ? 0 : std::min<std::size_t>(pe->byte - 1, text.size());
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < at; ++i) {
      if (text[i] == '\n') ++line, col = 1;
      else ++col;
    }
    if (std::string(pe->what()).find("surrogate") != std::string::npos)
      return "holds a lone surrogate (half of a UTF-16 pair, \\uD800 to \\uDFFF, without its other half), which is not a "
             "character (line " + std::to_string(line) + ", column " + std::to_string(col) + ")";
    if (at >= text.size()) return "is not valid JSON (it ends too early, at line " + std::to_string(line) + ")";
    return "is not valid JSON (line " + std::to_string(line) + ", column " + std::to_string(col) + ")";
  }
  if (e.id == 406) {
    // "number overflow parsing '1e400'": show only the user's number.
    const std::string w = e.what();
    const std::size_t a = w.find('\''), b = w.rfind('\'');
    const std::string number = a != std::string::npos && b > a ? printable_text(w.substr(a + 1, b - a - 1), 40) : "";
    return "has a number too large to represent" + (number.empty() ? std::string() : " (" + number + ")");
  }
  return "is not valid JSON";
}

namespace {

// A SAX pass that stops at the first key an object holds twice; `where` is the path of keys to it.
struct DuplicateKeys {
  struct Object {
    std::set<std::string> keys;
    std::string current;
  };
  std::vector<Object> open;          // the objects being read, outermost first
  std::vector<bool> in_object;       // per open container: object (true) or array
  std::optional<std::string> found;  // the repeated key
  std::vector<std::string> where;

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const std::string&) { return true; }
  bool string(std::string&) { return true; }
  bool binary(json::binary_t&) { return true; }
  bool start_object(std::size_t) {
    open.emplace_back();
    in_object.push_back(true);
    return true;
  }
  bool key(std::string& k) {
    Object& o = open.back();
    if (!o.keys.insert(k).second) {
      found = k;
      for (std::size_t i = 0; i + 1 < open.size(); ++i) where.push_back(open[i].current);
      return false;
    }
    o.current = k;
    return true;
  }
  bool end_object() {
    open.pop_back();
    in_object.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    in_object.push_back(false);
    return true;
  }
  bool end_array() {
    in_object.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const json::exception&) { return false; }
};

}  // namespace

std::optional<std::string> read_json(const char* b, const char* e, json& out) {
  try {
    out = json::parse(b, e);
  } catch (const json::exception& ex) {
    return json_parse_problem(std::string(b, e), ex);
  }
  DuplicateKeys sax;
  json::sax_parse(b, e, &sax);
  if (sax.found) {
    std::string in;
    for (const std::string& w : sax.where) in += (in.empty() ? "" : " > ") + ("\"" + printable_text(w, 60) + "\"");
    return "has the key \"" + printable_text(*sax.found, 60) + "\" twice in one object" +
           (in.empty() ? std::string() : " (in " + in + ")") + "; a key given twice has no one meaning";
  }
  return std::nullopt;
}

json parse_json_text(const std::string& text, const std::string& what) {
  json j;
  if (const auto problem = read_json(text, j)) throw std::invalid_argument(what + " " + *problem);
  return j;
}

}  // namespace cs
