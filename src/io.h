// Model files: safetensors (8-byte little-endian header length, a JSON header, raw tensor data)
// with the config, the tokenizer and free-form training information as JSON strings in
// "__metadata__". Tensors are stored as F32 or F16 and always loaded as float32. The loader also
// reads a TransformerLens attention-only model's state_dict() saved with safetensors (no
// circuitscope metadata; F32, F16 or BF16): see load_model_bytes.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "params.h"
#include "tokenizer.h"
#include "weight_processing.h"

namespace cs {

struct ModelFile {
  Config cfg;
  Tokenizer tokenizer;
  Params<float> params;
  nlohmann::json info = nlohmann::json::object();  // recipe name, step, losses...: free-form
};

enum class Dtype { F32, F16 };

// How a TransformerLens file is read: the weight processing from_pretrained applies
// (weight_processing.h; TransformerLens's defaults unless told otherwise). circuitscope's own
// files are read as written.
struct LoadOptions {
  Processing processing;
  // A TransformerLens config.json (HookedTransformerConfig's fields, as the hub ships it beside
  // the weights), or empty: its normalization_type, positional_embedding_type and act_fn say what
  // the tensors cannot, and its dimensions must match them.
  std::string tl_config;
  // A Hugging Face tokenizer.json (its text) for a file that carries no tokenizer of its own (a
  // TransformerLens state dict): the model then reads typed text (Tokenizer::build_hf), and a file
  // saved from it carries the tokenizer. bos_token: the token put first, "" for "<|endoftext|>".
  std::string tokenizer_json;
  std::string bos_token;
};

// Metadata keys: "format" = "circuitscope", "format_version" = "1", "config", "tokenizer", "info".
std::vector<std::uint8_t> save_model_bytes(const ModelFile& m, Dtype dtype = Dtype::F32);
// Reads safetensors bytes, or a .pth file (torch.save's zip archive of a state dict; pth.h), which
// is read as the safetensors file of the same tensors. Validates everything it reads and throws
// std::runtime_error whose message starts with
// "model file: " and says what is wrong, e.g.
// "model file: tensor blocks.1.attn.W_Q has shape [4,64,16], config says [8,64,16]".
// A file whose __metadata__ neither says format "circuitscope" nor carries a config (or has no
// __metadata__) is read as a TransformerLens HookedTransformer state dict (docs/model-files.md,
// "Files saved from TransformerLens"): the config comes from the tensor shapes, missing biases are zero, the
// attn.mask and attn.IGNORE buffers are checked and dropped, LayerNorm (ln1, ln2, ln_final) and
// MLP tensors are read; what the tensors cannot show (normalization_type when there is no
// LayerNorm tensor, act_fn with MLPs, shortformer positions) comes from __metadata__ or the file
// is refused with the line of Python that writes it; anything else (rotary, gated MLPs, ...) is
// refused with a sentence. opts.processing is then applied as TransformerLens applies it. The
// tokenizer is __metadata__'s "tokenizer" if given, else a token-id tokenizer
// (Tokenizer::Kind::Ids); info is {"source": "transformerlens", "note", "processing": {applied,
// skipped}}.
ModelFile load_model_bytes(const std::uint8_t* data, std::size_t size, const LoadOptions& opts = LoadOptions());

// Reads a model file of `size` bytes given in pieces, in order (the page reads a File as a
// stream; load_model_file reads 16 MB at a time): once a safetensors header is in, the file is
// checked as load_model_bytes checks it and each value goes into its tensor as it arrives, so the
// file is never held whole beside the weights; a wrong header, config or tokenizer.json is
// refused before the weights are read. A .pth archive is gathered whole (its index comes last).
// load_model_bytes is one write() and finish(). After a refusal the reader takes nothing more.
class ModelReader {
 public:
  explicit ModelReader(std::uint64_t size, LoadOptions opts = LoadOptions());
  ModelReader(ModelReader&&) noexcept;
  ModelReader& operator=(ModelReader&&) noexcept;
  ~ModelReader();
  void write(const std::uint8_t* data, std::size_t n);  // the file's next n bytes
  ModelFile finish();  // after all `size` bytes; once

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Refuses (std::runtime_error "PATH exists and is a device; ...") an output path that exists and is
// not a regular file: a directory, a symbolic link, a device, a pipe. Writers call it first.
void check_output_path(const std::string& path);
// Writes PATH.tmp (created exclusively) and renames it over PATH; checks PATH with check_output_path.
void save_model_file(const std::string& path, const ModelFile& m, Dtype dtype = Dtype::F32);
ModelFile load_model_file(const std::string& path, const LoadOptions& opts = LoadOptions());  // "model file <path>: ..." on errors

}  // namespace cs
