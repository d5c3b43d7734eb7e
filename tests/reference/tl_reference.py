#!/usr/bin/python3
"""An independent float64 reference of TransformerLens's HookedTransformer: its forward pass, the
weight processing HookedTransformer.from_pretrained applies on load, and the direct logit
attribution of cache.apply_ln_to_stack. Written from TransformerLens's source (see README.md for
the files and the definitions taken from each), not from circuitscope's; needs torch (Debian's
python3-torch) and numpy, run with /usr/bin/python3.

As a program it reads a JSON spec on stdin and writes, into OUTDIR, each case's random model as a
TransformerLens safetensors file and the reference outputs as raw little-endian float64 files
with an index.json describing them (tests/js/tl_reference.test.mjs runs it):

    /usr/bin/python3 tests/reference/tl_reference.py OUTDIR < spec.json

spec: {"cases": [{"name", "config", "seed", "n_tokens", "file_kind" ("raw" | "processed"),
"buffers" ("none" | "full" | "empty"), "variants" (["none", "processed"]), "outputs" (any of
"losses", "logprobs", "logits", "patterns", "resid", "result", "attribution"),
"attribution_pos" ([positions])}]}.
"""

import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # keep tests/reference free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_models  # noqa: E402

torch.set_default_dtype(torch.float64)
EPS = 1e-5  # HookedTransformerConfig.eps


# ----------------------------------------------------------------------------- config

def norm_type(cfg):
    """normalization_type: "LN", "LNPre" or None (the spec may say "None")."""
    t = cfg.get("normalization_type")
    return None if t in (None, "None", "none") else t


def full_config(cfg):
    c = dict(cfg)
    c.setdefault("positional_embedding_type", "standard")
    c.setdefault("attn_only", True)
    c.setdefault("eps", EPS)
    c["normalization_type"] = norm_type(c)
    if c["attn_only"]:
        c["d_mlp"] = None
        c["act_fn"] = None
    return c


# ----------------------------------------------------------------------------- forward

def layer_norm(x, sd, prefix, ntype, eps):
    """TransformerLens's LayerNorm / LayerNormPre / identity (components/layer_norm.py,
    layer_norm_pre.py): x - mean, divided by sqrt(mean(x^2) + eps), then (LN only) * w + b.
    Returns (output, scale) with scale None for no normalization."""
    if ntype is None:
        return x, None
    if ntype not in ("LN", "LNPre"):
        raise ValueError(f"normalization_type {ntype!r} is not one this reference runs")
    x = x - x.mean(-1, keepdim=True)
    scale = (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
    y = x / scale
    if ntype == "LN":
        y = y * sd[prefix + ".w"] + sd[prefix + ".b"]
    return y, scale


def activation(name):
    """utilities/activation_functions.py ACTIVATION_FN_DICT: "gelu" is F.gelu (exact, erf),
    "gelu_new" GPT-2's tanh form, "relu" F.relu."""
    if name == "gelu":
        return lambda x: F.gelu(x)
    if name == "gelu_new":
        return lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    if name == "relu":
        return F.relu
    raise ValueError(f"act_fn {name!r} is not one this reference runs")


def forward(sd, cfg, tokens):
    """HookedTransformer.forward on one sequence (no BOS handling: tokens are used as given).
    Returns a dict of float64 tensors: resid [L + 1, T, D] (blocks.0.hook_resid_pre, then each
    blocks.l.hook_resid_post), patterns [L, H, T, T] (hook_pattern), result [L, H, T, D]
    (hook_result), mlp_out [L, T, D] (hook_mlp_out, with b_out) or None, final_scale [T]
    (ln_final.hook_scale) or None, logits [T, V], logprobs [T, V], losses [T - 1]."""
    cfg = full_config(cfg)
    ntype, eps = cfg["normalization_type"], cfg["eps"]
    L, H, Dh = cfg["n_layers"], cfg["n_heads"], cfg["d_head"]
    tok = torch.as_tensor(tokens, dtype=torch.long)
    T = tok.shape[0]
    if T > cfg["n_ctx"]:
        raise ValueError(f"{T} tokens but n_ctx is {cfg['n_ctx']}")

    embed = sd["embed.W_E"][tok]                       # hook_embed
    pos = sd["pos_embed.W_pos"][:T]                    # hook_pos_embed
    if cfg["positional_embedding_type"] == "standard":
        x, shortformer_pos = embed + pos, None
    elif cfg["positional_embedding_type"] == "shortformer":
        x, shortformer_pos = embed, pos                # added to the query and key inputs only
    else:
        raise ValueError("positional_embedding_type must be standard or shortformer")

    causal = torch.ones(T, T, dtype=torch.bool).tril()
    act = None if cfg["attn_only"] else activation(cfg["act_fn"])
    stages, patterns, results, mlp_outs, ln1_scales = [x], [], [], [], []
    for l in range(L):
        p = f"blocks.{l}."
        h, s1 = layer_norm(x, sd, p + "ln1", ntype, eps)
        ln1_scales.append(None if s1 is None else s1[:, 0])
        qk_in = h if shortformer_pos is None else h + shortformer_pos
        q = torch.einsum("td,hde->the", qk_in, sd[p + "attn.W_Q"]) + sd[p + "attn.b_Q"]
        k = torch.einsum("td,hde->the", qk_in, sd[p + "attn.W_K"]) + sd[p + "attn.b_K"]
        v = torch.einsum("td,hde->the", h, sd[p + "attn.W_V"]) + sd[p + "attn.b_V"]
        scores = torch.einsum("qhe,khe->hqk", q, k) / math.sqrt(Dh)   # attn_scale = sqrt(d_head)
        scores = torch.where(causal, scores, torch.tensor(-math.inf))
        pattern = torch.softmax(scores, dim=-1)
        z = torch.einsum("hqk,khe->qhe", pattern, v)
        result = torch.einsum("qhe,hem->qhm", z, sd[p + "attn.W_O"])  # [T, H, D]
        attn_out = result.sum(1) + sd[p + "attn.b_O"]
        patterns.append(pattern)
        results.append(result.permute(1, 0, 2))
        if cfg["attn_only"]:
            x = x + attn_out
        else:
            mid = x + attn_out                                          # hook_resid_mid
            h2, _ = layer_norm(mid, sd, p + "ln2", ntype, eps)
            pre = h2 @ sd[p + "mlp.W_in"] + sd[p + "mlp.b_in"]
            mlp_out = act(pre) @ sd[p + "mlp.W_out"] + sd[p + "mlp.b_out"]
            mlp_outs.append(mlp_out)
            x = mid + mlp_out
        stages.append(x)
    final, scale = layer_norm(x, sd, "ln_final", ntype, eps)
    logits = final @ sd["unembed.W_U"] + sd["unembed.b_U"]
    logprobs = torch.log_softmax(logits, dim=-1)
    losses = -logprobs[torch.arange(T - 1), tok[1:]]   # utils.lm_cross_entropy_loss(per_token=True)
    return {
        "tokens": tok, "embed": embed, "pos_embed": pos,
        "resid": torch.stack(stages), "patterns": torch.stack(patterns) if L else torch.zeros(0, H, T, T),
        "result": torch.stack(results) if L else torch.zeros(0, H, T, cfg["d_model"]),
        "mlp_out": torch.stack(mlp_outs) if mlp_outs else None,
        "final_scale": None if scale is None else scale[:, 0],
        "ln1_scale": ln1_scales,
        "logits": logits, "logprobs": logprobs, "losses": losses,
    }


# ----------------------------------------------------------------------------- processing

def fold_layer_norm(sd, cfg):
    """ProcessWeights.fold_layer_norm(fold_biases=True, center_weights=True) (weight_processing.py;
    HookedTransformer.fold_layer_norm in TransformerLens 2.x): per layer, ln1's bias into b_Q,
    b_K, b_V (b += sum_d W[h, d, :] * ln.b[d], with the unscaled W), then ln1's weight into W_Q,
    W_K, W_V (W[h, d, :] *= ln.w[d]), then each reading weight centred over d_model (W -= its mean
    over d_model: LNPre's output is orthogonal to the all-ones vector, so that component never
    mattered); the same with ln2 into b_in / W_in (not for attn_only), and ln_final into b_U / W_U.
    The LayerNorm tensors go (the model now runs LNPre, which has none)."""
    sd = dict(sd)
    for l in range(cfg["n_layers"]):
        p = f"blocks.{l}."
        w, b = sd.pop(p + "ln1.w"), sd.pop(p + "ln1.b")
        for m in "QKV":
            W = sd[p + f"attn.W_{m}"]
            sd[p + f"attn.b_{m}"] = sd[p + f"attn.b_{m}"] + (W * b[None, :, None]).sum(-2)
            W = W * w[None, :, None]
            sd[p + f"attn.W_{m}"] = W - W.mean(1, keepdim=True)
        if not cfg["attn_only"]:
            w, b = sd.pop(p + "ln2.w"), sd.pop(p + "ln2.b")
            W = sd[p + "mlp.W_in"]
            sd[p + "mlp.b_in"] = sd[p + "mlp.b_in"] + (W * b[:, None]).sum(-2)
            W = W * w[:, None]
            sd[p + "mlp.W_in"] = W - W.mean(0, keepdim=True)
    w, b = sd.pop("ln_final.w"), sd.pop("ln_final.b")
    W = sd["unembed.W_U"]
    sd["unembed.b_U"] = sd["unembed.b_U"] + (W * b[:, None]).sum(-2)
    W = W * w[:, None]
    sd["unembed.W_U"] = W - W.mean(0, keepdim=True)
    return sd


def center_writing_weights(sd, cfg):
    """ProcessWeights.center_writing_weights: every weight writing to the residual stream loses
    its mean over d_model: W_E, W_pos (not rotary/alibi), each W_O and b_O, and (not attn_only)
    each W_out and b_out."""
    sd = dict(sd)
    sd["embed.W_E"] = sd["embed.W_E"] - sd["embed.W_E"].mean(-1, keepdim=True)
    sd["pos_embed.W_pos"] = sd["pos_embed.W_pos"] - sd["pos_embed.W_pos"].mean(-1, keepdim=True)
    for l in range(cfg["n_layers"]):
        p = f"blocks.{l}."
        sd[p + "attn.W_O"] = sd[p + "attn.W_O"] - sd[p + "attn.W_O"].mean(-1, keepdim=True)
        sd[p + "attn.b_O"] = sd[p + "attn.b_O"] - sd[p + "attn.b_O"].mean()
        if not cfg["attn_only"]:
            sd[p + "mlp.W_out"] = sd[p + "mlp.W_out"] - sd[p + "mlp.W_out"].mean(-1, keepdim=True)
            sd[p + "mlp.b_out"] = sd[p + "mlp.b_out"] - sd[p + "mlp.b_out"].mean()
    return sd


def center_unembed(sd):
    """ProcessWeights.center_unembed: W_U and b_U lose their mean over d_vocab (softmax does not
    see it: log-probs and losses are unchanged, logits are not)."""
    sd = dict(sd)
    sd["unembed.W_U"] = sd["unembed.W_U"] - sd["unembed.W_U"].mean(-1, keepdim=True)
    sd["unembed.b_U"] = sd["unembed.b_U"] - sd["unembed.b_U"].mean()
    return sd


def fold_value_biases(sd, cfg):
    """ProcessWeights.fold_value_biases: b_O += sum_h b_V[h] @ W_O[h]; b_V = 0 (a head's
    pattern sums to 1, so its value bias adds a constant b_V[h] W_O[h] at every position)."""
    sd = dict(sd)
    for l in range(cfg["n_layers"]):
        p = f"blocks.{l}."
        bV, WO = sd[p + "attn.b_V"], sd[p + "attn.W_O"]
        sd[p + "attn.b_O"] = sd[p + "attn.b_O"] + (bV[:, :, None] * WO).sum((0, 1))
        sd[p + "attn.b_V"] = torch.zeros_like(bV)
    return sd


def process(sd, cfg, fold_ln=True, center_writing=True, center_unembed_=True, fold_value_biases_=True):
    """HookedTransformer.from_pretrained(fold_ln, center_writing_weights, center_unembed,
    fold_value_biases) with its defaults (all True; refactor_factored_attn_matrices False), as
    TransformerLens decides which steps apply:
      - shortformer positions: from_pretrained turns fold_ln, center_writing_weights and
        center_unembed off (it warns "this can't be done"); only fold_value_biases remains;
      - fold_ln: only for normalization_type LN or LNPre, and (TransformerLens 3.x
        load_and_process_state_dict) only when the state dict has LayerNorm weights (a file
        without them, already folded, is left alone); the config becomes LNPre;
      - center_writing_weights: only when normalization_type (after folding) is LN or LNPre
        (and final_rms is off);
      - center_unembed: whenever asked (not for shortformer, see above), whatever the
        normalization;
      - fold_value_biases: always; afterwards, when the writing weights were centred, b_O is
        centred again (weight_processing.process_weights; a no-op in exact arithmetic, since W_O
        was centred too).
    Returns (state dict, config, {step: applied})."""
    cfg = full_config(cfg)
    if cfg["positional_embedding_type"] == "shortformer":
        fold_ln = center_writing = center_unembed_ = False
    if fold_ln:
        has_ln = any(k.endswith((".ln1.w", ".ln2.w", "ln_final.w")) for k in sd)
        if cfg["normalization_type"] not in ("LN", "LNPre") or not has_ln:
            fold_ln = False
        else:
            cfg["normalization_type"] = "LNPre"
    if fold_ln:
        sd = fold_layer_norm(sd, cfg)
    center_writing = center_writing and cfg["normalization_type"] in ("LN", "LNPre")
    if center_writing:
        sd = center_writing_weights(sd, cfg)
    if center_unembed_:
        sd = center_unembed(sd)
    if fold_value_biases_:
        sd = fold_value_biases(sd, cfg)
        if center_writing:
            for l in range(cfg["n_layers"]):
                k = f"blocks.{l}.attn.b_O"
                sd[k] = sd[k] - sd[k].mean()
    applied = {"fold_ln": fold_ln, "center_writing_weights": center_writing,
               "center_unembed": center_unembed_, "fold_value_biases": fold_value_biases_}
    return sd, cfg, applied


# ----------------------------------------------------------------------------- attribution

def frozen_final_ln(sd, ntype, cache, pos):
    """A component's logits with the final LayerNorm's scale frozen at pos
    (ActivationCache.apply_ln_to_stack: centre for LN/LNPre, divide by ln_final.hook_scale there,
    * ln_final.w for an unfolded LN), then W_U; ln_final.b and b_U are left to the caller."""
    WU = sd["unembed.W_U"]

    def to_logits(vec):
        if ntype in ("LN", "LNPre"):
            vec = (vec - vec.mean(-1, keepdim=True)) / cache["final_scale"][pos]
            if ntype == "LN":
                vec = vec * sd["ln_final.w"]
        return vec @ WU
    return to_logits


def attribution(sd, cfg, cache, pos):
    """Direct logit attribution at pos with the final LayerNorm scale frozen from the run
    (ActivationCache.apply_ln_to_stack: centre each component for LN/LNPre, divide by
    ln_final.hook_scale; here also * ln_final.w for an unfolded LN, so that the rows sum to the
    logits). Rows [P, d_vocab]: "embed", "pos_embed" (zero for shortformer: positions never enter
    the residual stream), "bias" (every b_O, through the frozen LN, plus ln_final.b @ W_U and
    b_U), "L{l}H{h}" (hook_result), "MLP{l}" (hook_mlp_out, which includes b_out). Also the
    rows "b_out{l}": the part of MLP{l} that is its bias. Asserts that the rows sum to the
    logits."""
    cfg = full_config(cfg)
    ntype = cfg["normalization_type"]
    WU, bU = sd["unembed.W_U"], sd["unembed.b_U"]

    to_logits = frozen_final_ln(sd, ntype, cache, pos)

    L, H = cfg["n_layers"], cfg["n_heads"]
    names, rows = ["embed", "pos_embed", "bias"], []
    rows.append(to_logits(cache["embed"][pos]))
    standard = cfg["positional_embedding_type"] == "standard"
    rows.append(to_logits(cache["pos_embed"][pos]) if standard else torch.zeros_like(bU))
    b_O = sum((sd[f"blocks.{l}.attn.b_O"] for l in range(L)), torch.zeros(cfg["d_model"]))
    constant = bU + (sd["ln_final.b"] @ WU if ntype == "LN" else 0.0)
    rows.append(to_logits(b_O) + constant)
    for l in range(L):
        for h in range(H):
            names.append(f"L{l}H{h}")
            rows.append(to_logits(cache["result"][l, h, pos]))
    extra_names, extras = [], []
    if cache["mlp_out"] is not None:
        for l in range(L):
            names.append(f"MLP{l}")
            rows.append(to_logits(cache["mlp_out"][l, pos]))
            extra_names.append(f"b_out{l}")
            extras.append(to_logits(sd[f"blocks.{l}.mlp.b_out"]))
    parts = torch.stack(rows)
    logits = cache["logits"][pos]
    gap = (parts.sum(0) - logits).abs().max().item()
    assert gap <= 1e-9 * max(1.0, logits.abs().max().item()), f"attribution rows miss the logits by {gap}"
    return names, parts, extra_names, (torch.stack(extras) if extras else None)


def virtual_paths(sd, cfg, cache, pos):
    """Every head of layer >= 1 split by what its value input is made of, at pos: the residual
    stream's components before that layer (cache.decompose_resid(layer=l2): embed, pos_embed (zero
    for shortformer), each earlier head's hook_result, each earlier hook_mlp_out) passed through
    ln1 with its scale frozen at each source position (cache.apply_ln_to_stack(layer=l2):
    centred, divided by blocks.l2.ln1.hook_scale there, * ln1.w for LN), mixed by the head's
    pattern row, through W_V W_O, then read as attribution() reads a head's output (the final
    LayerNorm frozen at pos). The constants (every earlier b_O through ln1, ln1.b and b_V through
    W_V W_O) make the "bias" path. Rows [Q, d_vocab], named "L{l2}H{h2}<-SOURCE"; asserts that
    each head's paths sum to its attribution row."""
    cfg = full_config(cfg)
    ntype = cfg["normalization_type"]
    L, H, D = cfg["n_layers"], cfg["n_heads"], cfg["d_model"]
    WU = sd["unembed.W_U"]

    to_logits = frozen_final_ln(sd, ntype, cache, pos)

    standard = cfg["positional_embedding_type"] == "standard"
    names, rows = [], []
    for l2 in range(1, L):
        p = f"blocks.{l2}."

        def ln1_stack(src):  # [T, D] rows of one component, as ln1 passes them on
            if ntype in ("LN", "LNPre"):
                src = (src - src.mean(-1, keepdim=True)) / cache["ln1_scale"][l2][:, None]
                if ntype == "LN":
                    src = src * sd[p + "ln1.w"]
            return src

        # Shortformer positions never enter the residual stream: their path is zero, as in attribution().
        sources = [("embed", cache["embed"]), ("pos_embed", cache["pos_embed"] if standard else torch.zeros_like(cache["embed"]))]
        for l1 in range(l2):
            sources += [(f"L{l1}H{h1}", cache["result"][l1, h1]) for h1 in range(H)]
            if cache["mlp_out"] is not None:
                sources.append((f"MLP{l1}", cache["mlp_out"][l1]))
        T = cache["embed"].shape[0]
        b_O = sum((sd[f"blocks.{l}.attn.b_O"] for l in range(l2)), torch.zeros(D))
        for h2 in range(H):
            a = cache["patterns"][l2, h2, pos]
            OV = sd[p + "attn.W_V"][h2] @ sd[p + "attn.W_O"][h2]
            total = torch.zeros(WU.shape[1], dtype=WU.dtype)
            for src_name, src in sources:
                row = to_logits(a @ ln1_stack(src) @ OV)
                names.append(f"L{l2}H{h2}<-{src_name}")
                rows.append(row)
                total = total + row
            const = a @ ln1_stack(b_O.expand(T, D)) @ OV
            v_bias = sd[p + "attn.b_V"][h2] + (sd[p + "ln1.b"] @ sd[p + "attn.W_V"][h2] if ntype == "LN" else 0.0)
            row = to_logits(const + v_bias @ sd[p + "attn.W_O"][h2])
            names.append(f"L{l2}H{h2}<-bias")
            rows.append(row)
            total = total + row
            want = to_logits(cache["result"][l2, h2, pos])
            gap = (total - want).abs().max().item()
            assert gap <= 1e-9 * max(1.0, want.abs().max().item()), f"L{l2}H{h2}'s paths miss its output by {gap}"
    return names, (torch.stack(rows) if rows else None)


# ----------------------------------------------------------------------------- the program

def to_torch(sd):
    return {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in sd.items()}


def write_f64(path, t):
    np.ascontiguousarray(t.detach().numpy(), dtype="<f8").tofile(path)


def float32_deviation(sd, cfg, tokens, cache64, wanted):
    """How far the same forward pass computed in float32 (PyTorch, on the same weights) is from
    the float64 one, per field, as max |f32 - f64| / RMS(f64) over blocks of the leading axis
    (the whole tensor for logits): the float32 rounding any float32 implementation carries, which
    the node test scales its tolerance by."""
    c32 = forward({k: t.float() for k, t in sd.items()}, cfg, tokens)
    out = {}
    for field, per_block in (("logits", False), ("resid", True), ("result", True)):
        if field not in wanted:
            continue
        a, b = c32[field].double(), cache64[field]
        blocks = list(zip(a, b)) if per_block else [(a, b)]
        worst = 0.0
        for x, y in blocks:
            rms = y.pow(2).mean().sqrt().item()
            if rms > 0:
                worst = max(worst, (x - y).abs().max().item() / rms)
        out[field] = worst
    return out


def run_case(case, outdir):
    name = case["name"]
    cfg = full_config(case["config"])
    kind = case.get("file_kind", "raw")
    raw32 = make_models.random_state_dict(cfg, case["seed"])
    if kind == "processed":
        # A file as one saves a from_pretrained model's state dict: TL-processed weights, LNPre.
        sd_p, cfg, _ = process(to_torch(raw32), cfg)
        raw32 = {k: v.numpy().astype(np.float32) for k, v in sd_p.items()}
    elif kind != "raw":
        raise ValueError(f"{name}: file_kind must be raw or processed")
    path = os.path.join(outdir, f"{name}.safetensors")
    make_models.write_model(path, raw32, cfg, case.get("buffers", "none"))
    sd = to_torch(raw32)  # exactly the file's float32 values, promoted to float64

    rng = np.random.default_rng(case["seed"] + 1_000_003)
    tokens = rng.integers(0, cfg["d_vocab"], size=case["n_tokens"]).tolist()
    out = {"file": os.path.basename(path), "tokens": tokens, "config": cfg, "variants": {}}
    wanted = set(case.get("outputs", ["losses"]))
    caches = {}
    for variant in case.get("variants", ["none", "processed"]):
        if variant == "none":
            vsd, vcfg, applied = sd, cfg, {"fold_ln": False, "center_writing_weights": False,
                                          "center_unembed": False, "fold_value_biases": False}
        elif variant == "processed":
            vsd, vcfg, applied = process(sd, cfg)
        else:
            raise ValueError(f"{name}: unknown variant {variant}")
        cache = forward(vsd, vcfg, tokens)
        v = {"config": vcfg, "processing": applied, "outputs": {}, "attribution": [],
             "loss_range": [cache["losses"].min().item(), cache["losses"].max().item()],
             "f32_deviation": float32_deviation(vsd, vcfg, tokens, cache, wanted)}
        for field in ("losses", "logprobs", "logits", "patterns", "resid", "result"):
            if field in wanted:
                f = f"{name}.{variant}.{field}.f64"
                write_f64(os.path.join(outdir, f), cache[field])
                v["outputs"][field] = {"file": f, "shape": list(cache[field].shape)}
        if "attribution" in wanted:
            for pos in case.get("attribution_pos", [len(tokens) - 1]):
                names, parts, extra_names, extras = attribution(vsd, vcfg, cache, pos)
                f = f"{name}.{variant}.attribution{pos}.f64"
                write_f64(os.path.join(outdir, f), parts)
                a = {"pos": pos, "names": names, "file": f, "shape": list(parts.shape), "extra_names": extra_names}
                if extras is not None:
                    a["extra_file"] = f"{name}.{variant}.attribution{pos}.extra.f64"
                    write_f64(os.path.join(outdir, a["extra_file"]), extras)
                path_names, paths = virtual_paths(vsd, vcfg, cache, pos)
                if paths is not None:
                    a["path_names"] = path_names
                    a["paths_file"] = f"{name}.{variant}.paths{pos}.f64"
                    write_f64(os.path.join(outdir, a["paths_file"]), paths)
                v["attribution"].append(a)
        out["variants"][variant] = v
        caches[variant] = cache
    if len(caches) == 2:
        check_processing(name, caches["none"], caches["processed"], out["variants"]["processed"]["processing"])
    return out


def check_processing(name, none, processed, applied):
    """The reference's own checks of its processing, from what TransformerLens's processing
    promises: the log-probs and the attention patterns do not change, and the residual stream
    loses exactly its mean over d_model when the writing weights were centred (is unchanged
    otherwise)."""
    def gap(a, b):
        return (a - b).abs().max().item() / max(1.0, b.abs().max().item())
    assert gap(processed["logprobs"], none["logprobs"]) < 1e-9, f"{name}: processing changed the log-probs"
    assert gap(processed["patterns"], none["patterns"]) < 1e-9, f"{name}: processing changed the patterns"
    r = none["resid"]
    if applied["center_writing_weights"]:
        r = r - r.mean(-1, keepdim=True)
    assert gap(processed["resid"], r) < 1e-9, f"{name}: processing changed the residual stream beyond its mean"


def self_check():
    """The building blocks against torch's own definitions (cheap; run before every reference)."""
    g = torch.Generator().manual_seed(0)
    x = 2.0 * torch.randn(7, 16, generator=g)
    w, b = 1.0 + torch.randn(16, generator=g), torch.randn(16, generator=g)
    mine, _ = layer_norm(x, {"n.w": w, "n.b": b}, "n", "LN", EPS)
    assert torch.allclose(mine, F.layer_norm(x, (16,), w, b, EPS), atol=1e-12), "LayerNorm"
    assert torch.allclose(activation("gelu_new")(x), F.gelu(x, approximate="tanh"), atol=1e-12), "gelu_new"
    assert torch.allclose(activation("gelu")(x), 0.5 * x * (1 + torch.erf(x / math.sqrt(2))), atol=1e-12), "gelu"


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    spec = json.load(sys.stdin)
    t0 = time.time()
    self_check()
    index = {"torch": torch.__version__, "numpy": np.__version__, "cases": {}, "seconds": {}}
    for case in spec["cases"]:
        t = time.time()
        index["cases"][case["name"]] = run_case(case, outdir)
        index["seconds"][case["name"]] = round(time.time() - t, 3)
    index["seconds"]["total"] = round(time.time() - t0, 3)
    with open(os.path.join(outdir, "index.json"), "w") as f:
        json.dump(index, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
