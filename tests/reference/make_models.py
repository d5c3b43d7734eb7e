"""Random-weight TransformerLens state dicts, written as safetensors by hand.

A model is a config in TransformerLens's names (n_layers, d_model, n_heads, d_head, n_ctx,
d_vocab, d_mlp, act_fn, normalization_type, positional_embedding_type, attn_only) and a seed; its
state dict has TransformerLens's key names and shapes (embed.W_E [d_vocab, d_model],
blocks.{l}.attn.W_Q [n_heads, d_model, d_head], ...). Values are drawn in float64 from numpy's
PCG64 generator and rounded to float32 once: the file holds those float32 values and the
reference (tl_reference.py) computes on exactly them, promoted to float64.

No safetensors package is needed: the format is an 8-byte little-endian header length N, N bytes
of JSON ({name: {dtype, shape, data_offsets}}, optional "__metadata__" of strings) padded with
spaces to a multiple of 8, then the tensors' little-endian bytes back to back.
"""

import json
import struct

import numpy as np

# Standard deviations of the random weights: large enough that every weight matters to the
# numbers compared (a test that cannot tell a missing centering from float32 rounding is no test),
# small enough that logits stay in a range where float32 keeps ~6 significant digits.
STD = {
    "W_E": 1.0, "W_pos": 0.6,
    "W_Q": 0.4, "W_K": 0.4, "W_V": 0.4, "W_O": 0.35,
    "W_in": 0.35, "W_out": 0.2, "W_U": 0.35,
    "bias": 0.2, "ln_w": 0.3, "ln_b": 0.2,
}


# Without normalization nothing rescales the residual stream, which grows layer by layer: smaller
# reading and writing weights keep the logits and attention scores of such models moderate.
STD_NO_NORM = {"W_Q": 0.15, "W_K": 0.15, "W_V": 0.25, "W_O": 0.2, "W_in": 0.2, "W_out": 0.15, "W_U": 0.15}


def _std(cfg, name):
    """Per-model overrides: cfg["std"] = {name: std} (the full-size model scales by 1/sqrt(fan-in))."""
    if name in cfg.get("std", {}):
        return cfg["std"][name]
    if cfg.get("normalization_type") in (None, "None", "none"):
        return STD_NO_NORM.get(name, STD[name])
    return STD[name]


def has_ln_tensors(cfg):
    return cfg.get("normalization_type") == "LN"


def random_state_dict(cfg, seed):
    """{name: float32 numpy array} in TransformerLens's layout, for cfg, from seed."""
    rng = np.random.default_rng(seed)
    L, D, H, Dh = cfg["n_layers"], cfg["d_model"], cfg["n_heads"], cfg["d_head"]
    C, V = cfg["n_ctx"], cfg["d_vocab"]
    F = cfg.get("d_mlp") or 0
    attn_only = cfg.get("attn_only", True)
    ln = has_ln_tensors(cfg)

    def normal(shape, name, mean=0.0):
        return (mean + _std(cfg, name) * rng.standard_normal(shape)).astype(np.float32)

    sd = {}
    sd["embed.W_E"] = normal((V, D), "W_E")
    sd["pos_embed.W_pos"] = normal((C, D), "W_pos")
    for l in range(L):
        p = f"blocks.{l}."
        if ln:
            sd[p + "ln1.w"] = normal((D,), "ln_w", 1.0)
            sd[p + "ln1.b"] = normal((D,), "ln_b")
        for m in "QKV":
            sd[p + f"attn.W_{m}"] = normal((H, D, Dh), f"W_{m}")
        sd[p + "attn.W_O"] = normal((H, Dh, D), "W_O")
        for m in "QKV":
            sd[p + f"attn.b_{m}"] = normal((H, Dh), "bias")
        sd[p + "attn.b_O"] = normal((D,), "bias")
        if not attn_only:
            if ln:
                sd[p + "ln2.w"] = normal((D,), "ln_w", 1.0)
                sd[p + "ln2.b"] = normal((D,), "ln_b")
            sd[p + "mlp.W_in"] = normal((D, F), "W_in")
            sd[p + "mlp.b_in"] = normal((F,), "bias")
            sd[p + "mlp.W_out"] = normal((F, D), "W_out")
            sd[p + "mlp.b_out"] = normal((D,), "bias")
    if ln:
        sd["ln_final.w"] = normal((D,), "ln_w", 1.0)
        sd["ln_final.b"] = normal((D,), "ln_b")
    sd["unembed.W_U"] = normal((D, V), "W_U")
    sd["unembed.b_U"] = normal((V,), "bias")
    return sd


def attention_buffers(cfg, style):
    """The non-parameter buffers a HookedTransformer's state_dict() also holds, per layer:
    style "full" (TransformerLens <= 3.4: attn.mask, the causal [n_ctx, n_ctx] BOOL mask, and
    attn.IGNORE, the F32 scalar -inf), "empty" (TransformerLens >= 3.5, which builds the mask at
    forward time and keeps attn.mask as an empty [0, 0] BOOL tensor), or "none"."""
    out = {}
    if style == "none":
        return out
    C = cfg["n_ctx"]
    for l in range(cfg["n_layers"]):
        if style == "full":
            out[f"blocks.{l}.attn.mask"] = np.tril(np.ones((C, C), dtype=np.bool_))
        elif style == "empty":
            out[f"blocks.{l}.attn.mask"] = np.zeros((0, 0), dtype=np.bool_)
        else:
            raise ValueError(f"unknown buffer style {style!r}")
        out[f"blocks.{l}.attn.IGNORE"] = np.array(-np.inf, dtype=np.float32)
    return out


_DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64", np.dtype(np.bool_): "BOOL",
           np.dtype(np.float16): "F16", np.dtype(np.int64): "I64", np.dtype(np.int32): "I32"}
_NUMPY = {v: k for k, v in _DTYPES.items()}


def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: numpy array}; metadata: {str: str} or None."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs, offset = [], 0
    for name, a in tensors.items():
        a = np.asarray(a)  # not ascontiguousarray, which makes a 0-d array (attn.IGNORE) 1-d
        b = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
        header[name] = {"dtype": _DTYPES[a.dtype], "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """({name: numpy array}, metadata dict)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, t in header.items():
        a, b = t["data_offsets"]
        dt = _NUMPY[t["dtype"]].newbyteorder("<")
        out[name] = np.frombuffer(data[base + a:base + b], dtype=dt).reshape(t["shape"])
    return out, meta


def metadata_for(cfg):
    """The __metadata__ hints circuitscope reads from a TransformerLens file (a state dict cannot
    show them): positional_embedding_type, normalization_type ("LN", "LNPre" or "None") and, for a
    model with MLPs, act_fn; plus safetensors.torch's {"format": "pt"}."""
    meta = {"format": "pt",
            "positional_embedding_type": cfg.get("positional_embedding_type", "standard"),
            "normalization_type": cfg.get("normalization_type") or "None"}
    if not cfg.get("attn_only", True):
        meta["act_fn"] = cfg["act_fn"]
    return meta


def write_model(path, sd, cfg, buffers="none"):
    """Writes sd (float32 arrays) plus the requested attention buffers, with metadata_for(cfg)."""
    tensors = {k: np.asarray(v, dtype=np.float32) for k, v in sd.items()}
    tensors.update(attention_buffers(cfg, buffers))
    write_safetensors(path, tensors, metadata_for(cfg))
