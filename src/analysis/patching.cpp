// Activation patching and the standard corruptions (see patching.h).
#include "analysis/patching.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "analysis/forward_outputs.h"
#include "analysis/ioi.h"
#include "analysis/text_scores.h"
#include "checks.h"
#include "rng.h"

namespace cs {

namespace {

// logit[correct] - logit[wrong] at pos, from a pass that skipped the logits (each entry the bits of
// the logits' row: unembed_entry).
double logit_diff(const Params<float>& p, const ActivationCache<float>& cache, int pos, int correct, int wrong) {
  const float a = unembed_entry(p, cache, pos, correct), b = unembed_entry(p, cache, pos, wrong);
  if (!std::isfinite(a) || !std::isfinite(b)) check_rows_finite({a, b}, cache);
  return static_cast<double>(a) - static_cast<double>(b);
}

std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", x);
  return buf;
}

void check_patch_spec(const Config& c, const PatchSpec& s) {
  const int T = static_cast<int>(s.clean.size());
  if (T == 0) throw std::invalid_argument("activation patching: the clean input has no tokens");
  if (s.corrupted.size() != s.clean.size())
    throw std::invalid_argument("activation patching: the clean input has " + std::to_string(T) +
                                " tokens and the corrupted one " + std::to_string(s.corrupted.size()) +
                                "; they must have the same length");
  if (T > c.n_ctx)
    throw std::invalid_argument("activation patching: " + std::to_string(T) + " tokens is longer than the model's context of " +
                                std::to_string(c.n_ctx) + " tokens");
  if (s.pos < 0 || s.pos >= T)
    throw std::invalid_argument("activation patching: the answer position must be 0.." + std::to_string(T - 1) + ", got " +
                                std::to_string(s.pos));
  for (int id : {s.correct, s.wrong})
    if (id < 0 || id >= c.d_vocab)
      throw std::invalid_argument("activation patching: the answer tokens must be ids 0.." + std::to_string(c.d_vocab - 1) +
                                  ", got " + std::to_string(id));
}

// One forward pass of `tokens` under `iv` into `cache`, without the logits; the logit difference
// at pos.
double patched_diff(const Params<float>& p, const std::vector<int>& tokens, const Intervention& iv, const PatchSpec& s,
                    ActivationCache<float>& cache) {
  cache.skip_logits = true;
  forward<float>(p, tokens, 1, static_cast<int>(tokens.size()), cache, iv);
  return logit_diff(p, cache, s.pos, s.correct, s.wrong);
}

// (x - corrupted) / (clean - corrupted), or 0 when the two runs are too close to normalise by.
void fill_effects(const PatchResult& r, const Tensor<float>& x, Tensor<float>& out) {
  out.resize(x.shape);
  const double gap = r.clean_diff - r.corrupted_diff;
  for (std::size_t i = 0; i < x.data.size(); ++i)
    out.data[i] = r.normalised ? static_cast<float>((x.data[i] - r.corrupted_diff) / gap) : 0.0f;
}

}  // namespace

std::string patch_direction_name(PatchDirection d) { return d == PatchDirection::Denoise ? "denoise" : "noise"; }

PatchDirection patch_direction_from_name(const std::string& s) {
  if (s == "denoise") return PatchDirection::Denoise;
  if (s == "noise") return PatchDirection::Noise;
  throw std::invalid_argument("activation patching: the direction must be 'denoise' (clean into corrupted) or 'noise' "
                              "(corrupted into clean), got \"" + printable_text(s, 40) + "\"");
}

double forward_work(const Config& c, int T, int from_layer) {
  const double H = c.n_heads, D = c.d_model, Dh = c.d_head, t = T;
  const double attention = t * D * 3 * H * Dh   // q, k, v
                           + H * t * t * Dh;    // scores and z over the causal half
  const double outputs = t * H * Dh * D         // each head's output
                         + 2 * t * D * c.d_mlp;  // the MLP's two products
  const double logits = 2 * D;                  // the two logits compared
  if (from_layer < 0) return c.n_layers * (attention + outputs) + logits;
  return outputs + (c.n_layers - 1 - from_layer) * (attention + outputs) + logits;
}

double patching_work(const Config& c, int T, bool per_position) {
  const double parts = c.n_heads + (c.d_mlp > 0 ? 1 : 0);  // patched in each layer
  double patched = 0;
  for (int l = 0; l < c.n_layers; ++l) patched += parts * forward_work(c, T, l);
  return 2 * forward_work(c, T) + patched * (per_position ? 1.0 + T : 1.0);
}

std::string per_position_note(const Config& c, int T) {
  const double each = patching_work(c, T, true);
  if (each <= kMaxPatchWork) return "";
  return "Each head is patched at every position at once only: patching it at each of the " + std::to_string(T) +
         " positions alone as well would take about " + sci(each) + " multiply-adds, more than the " + sci(kMaxPatchWork) +
         " one analysis may take. A shorter text shows the positions.";
}

Intervention patch_mlp_intervention(const Config& c, const Intervention& base, const ActivationCache<float>& source, int layer,
                                    const std::vector<int>& positions) {
  if (source.n_batch != 1 || layer < 0 || layer >= static_cast<int>(source.layers.size()) ||
      source.layers[layer].mlp_out.size() == 0)
    throw std::invalid_argument("activation patching: the source run holds no MLP output for layer " + std::to_string(layer));
  const int T = source.n_pos, D = c.d_model;
  MlpAblation a;
  a.layer = layer;
  a.mean = true;
  a.mean_value.assign(static_cast<std::size_t>(c.n_ctx) * D, 0.0f);  // rows past T are never read
  std::copy_n(source.layers[layer].mlp_out.ptr(), static_cast<std::size_t>(T) * D, a.mean_value.begin());
  a.positions = positions;
  Intervention iv = base;
  iv.mlp_ablations.push_back(std::move(a));
  return iv;
}

Intervention patch_intervention(const Config& c, const Intervention& base, const ActivationCache<float>& source, int layer,
                                int head, const std::vector<int>& positions) {
  if (source.n_batch != 1 || layer < 0 || layer >= static_cast<int>(source.layers.size()) ||
      source.layers[layer].result.size() == 0)
    throw std::invalid_argument("activation patching: the source run holds no output for head L" + std::to_string(layer) +
                                "H" + std::to_string(head));
  const int T = source.n_pos, D = c.d_model;
  HeadAblation a;
  a.layer = layer;
  a.head = head;
  a.mean = true;
  a.mean_value.assign(static_cast<std::size_t>(c.n_ctx) * D, 0.0f);  // rows past T are never read
  auto r = source.layers[layer].result.slice(head);                    // [T, D]
  for (int t = 0; t < T; ++t)
    for (int d = 0; d < D; ++d) a.mean_value[static_cast<std::size_t>(t) * D + d] = r(t, d);
  a.positions = positions;
  Intervention iv = base;
  iv.ablations.push_back(std::move(a));
  return iv;
}

PatchResult activation_patching(const Params<float>& p, const PatchSpec& spec, const Intervention& base) {
  const Config& c = p.cfg;
  check_patch_spec(c, spec);
  const int L = c.n_layers, H = c.n_heads, T = static_cast<int>(spec.clean.size());
  // The logits at pos read positions 0..pos only: every pass runs on that prefix.
  const std::vector<int> clean(spec.clean.begin(), spec.clean.begin() + spec.pos + 1);
  const std::vector<int> corrupted(spec.corrupted.begin(), spec.corrupted.begin() + spec.pos + 1);
  PatchResult r;
  r.T = T, r.pos = spec.pos, r.correct = spec.correct, r.wrong = spec.wrong, r.direction = spec.direction;
  r.work = patching_work(c, spec.pos + 1, spec.per_position);
  if (r.work > kMaxPatchWork)
    throw std::invalid_argument("activation patching of " + std::to_string(L * H) + " head(s)" +
                                (c.d_mlp > 0 ? " and " + std::to_string(L) + " MLP(s)" : std::string()) +
                                (spec.per_position ? " at " + std::to_string(spec.pos + 1) + " positions" : std::string()) +
                                " would take about " + sci(r.work) + " multiply-adds, more than the " + sci(kMaxPatchWork) +
                                " (a few seconds) circuitscope allows for one analysis; use a shorter text" +
                                (spec.per_position ? " or patch whole heads only" : ""));

  ActivationCache<float> clean_run, corrupted_run;
  r.clean_diff = patched_diff(p, clean, base, spec, clean_run);
  r.corrupted_diff = patched_diff(p, corrupted, base, spec, corrupted_run);
  r.passes = 2;
  r.normalised = std::abs(r.clean_diff - r.corrupted_diff) >= kMinPatchGap;
  const bool denoise = spec.direction == PatchDirection::Denoise;
  const ActivationCache<float>& source = denoise ? clean_run : corrupted_run;
  ActivationCache<float>& target = denoise ? corrupted_run : clean_run;
  const double unpatched = denoise ? r.corrupted_diff : r.clean_diff;

  // A patch of a part of layer l changes nothing before that part's output: each pass starts from
  // the target run at layer l (forward_from_layer) and rewrites layer l's outputs and the later
  // layers only. So the layers go from the last to the first, and each pass finds the layers it
  // starts from (layer l's input and attention) as the target run left them.
  const auto diff_from = [&](const Intervention& iv, int l) {
    forward_from_layer<float>(p, target, iv, l);
    ++r.passes;
    return logit_diff(p, target, spec.pos, spec.correct, spec.wrong);
  };
  // One part of layer l patched: `iv` replaces it at every position (into `all`), then,
  // per_position, at each position alone (into per_pos[0..T), through the positions `where` gives
  // of iv's patch).
  auto sweep = [&](Intervention iv, int l, std::vector<int>& (*where)(Intervention&), float& all, float* per_pos) {
    all = static_cast<float>(diff_from(iv, l));
    if (!spec.per_position) return;
    where(iv) = {0};
    for (int t = 0; t < T; ++t) {
      if (t > spec.pos) {
        per_pos[t] = static_cast<float>(unpatched);
        continue;
      }
      where(iv)[0] = t;
      per_pos[t] = static_cast<float>(diff_from(iv, l));
    }
  };
  r.head.resize({L, H});
  if (spec.per_position) r.head_pos.resize({L, H, T});
  if (c.d_mlp > 0) r.mlp.resize({L});
  if (c.d_mlp > 0 && spec.per_position) r.mlp_pos.resize({L, T});
  for (int l = L - 1; l >= 0; --l) {
    for (int h = 0; h < H; ++h)
      sweep(patch_intervention(c, base, source, l, h, {}), l, [](Intervention& v) -> std::vector<int>& { return v.ablations.back().positions; },
            r.head.data[l * H + h], spec.per_position ? &r.head_pos.data[(static_cast<std::size_t>(l) * H + h) * T] : nullptr);
    if (c.d_mlp > 0)
      sweep(patch_mlp_intervention(c, base, source, l, {}), l, [](Intervention& v) -> std::vector<int>& { return v.mlp_ablations.back().positions; },
            r.mlp.data[l], spec.per_position ? &r.mlp_pos.data[static_cast<std::size_t>(l) * T] : nullptr);
  }
  fill_effects(r, r.head, r.head_effect);
  if (spec.per_position) fill_effects(r, r.head_pos, r.head_pos_effect);
  if (c.d_mlp > 0) fill_effects(r, r.mlp, r.mlp_effect);
  if (c.d_mlp > 0 && spec.per_position) fill_effects(r, r.mlp_pos, r.mlp_pos_effect);
  return r;
}

Corruption ioi_swap_names(const std::vector<int>& clean, const std::vector<int>& names) {
  const int T = static_cast<int>(clean.size());
  if (T < 3) throw std::invalid_argument("swap the names: an IOI sentence needs at least 3 tokens, got " + std::to_string(T));
  Corruption k;
  k.kind = "swap_names";
  k.pos = T - 1;
  const IoiNames nm = ioi_names(clean, k.pos, names);
  int s2 = -1;
  for (int i = 0; i < k.pos; ++i)
    if (clean[i] == nm.s) s2 = i;
  k.tokens = clean;
  k.tokens[s2] = nm.io;
  k.correct = nm.io;
  k.wrong = nm.s;
  k.changed = {s2};
  k.description = "the second mention of the subject (position " + std::to_string(s2) +
                  ") becomes the indirect object, so the corrupted sentence's answer is the subject";
  return k;
}

Corruption break_repeat(const std::vector<int>& clean, int from, int d_vocab, const std::vector<int>& avoid,
                        std::uint64_t seed) {
  const std::optional<Repeat> rep = find_repeat(clean, from);
  if (!rep)
    throw std::invalid_argument("break the repeat: the text has no block of 4 or more tokens that occurs twice; "
                                "type a stretch of text and then the same stretch again");
  const int a = rep->a, d = rep->d, n = rep->r;
  std::set<int> used(clean.begin(), clean.end());
  used.insert(avoid.begin(), avoid.end());
  std::vector<int> pool;
  for (int v = 0; v < d_vocab; ++v)
    if (!used.count(v)) pool.push_back(v);
  if (pool.empty())
    throw std::invalid_argument("break the repeat: every token of the vocabulary occurs in the text, so none is left "
                                "to replace the first copy with");
  Corruption k;
  k.kind = "break_repeat";
  k.tokens = clean;
  Rng rng(seed);
  for (int i = a; i < a + n; ++i) {
    k.tokens[i] = pool[static_cast<std::size_t>(rng.below(static_cast<int>(pool.size())))];
    k.changed.push_back(i);
  }
  k.pos = a + d + n - 2;
  k.correct = clean[k.pos + 1];
  k.wrong = k.tokens[a + n - 1];
  k.description = "the first copy (positions " + std::to_string(a) + ".." + std::to_string(a + n - 1) +
                  ") becomes tokens that occur nowhere in the text, so the second copy has no earlier match";
  return k;
}

}  // namespace cs
