// PyTorch .pth files (the zip archive torch.save writes): a safe reader that turns a saved state dict into safetensors
// bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cs {

// True when the bytes start like a zip archive ("PK\x03\x04"), which is how torch.save (since PyTorch 1.6) writes.
bool looks_like_pth(const std::uint8_t* data, std::size_t size);
// The largest .pth file read (it is held whole while its archive is read).
constexpr std::uint64_t kMaxPthFileBytes = 2ull << 30;

// Reads the state dict that torch.save(model.state_dict(), f) wrote (a flat dict or OrderedDict of
// name -> tensor; nothing nested) and returns the same tensors as a safetensors file: an 8-byte
// little-endian header length, a JSON header {name: {dtype, shape, data_offsets}} (dtype "F32",
// "F16", "BF16" or "BOOL"; contiguous row-major little-endian data, the tensors back to back in the
// data section in the order they appear in the pickle, the header padded with spaces to a multiple
// of 8), with no __metadata__ unless `metadata` is non-empty (then "__metadata__": metadata, an
// object of strings).
//
// Nothing in the file is executed: the pickle is interpreted by a small machine that knows only the
// opcodes and the few functions (collections.OrderedDict, torch._utils._rebuild_tensor_v2,
// _rebuild_tensor, _rebuild_parameter) and storage types (torch.FloatStorage, HalfStorage,
// BFloat16Storage, BoolStorage) a state dict uses. Every size is checked against the file before
// anything is allocated.
//
// Throws std::runtime_error whose message starts "model file: " and says in a sentence what is
// wrong or refused.
std::vector<std::uint8_t> pth_to_safetensors(const std::uint8_t* data, std::size_t size,
                                             const std::map<std::string, std::string>& metadata = {});

}  // namespace cs
