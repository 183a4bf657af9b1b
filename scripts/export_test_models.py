#!/usr/bin/env python3
"""Export the small test models under test/data/models/ (and examples/mlp.onnx).

Run from anywhere with Debian's Python (it sees python3-torch and python3-onnx):

    /usr/bin/python3 scripts/export_test_models.py

Every case is an ONNX backend-test-style directory:

    test/data/models/<case>/model.onnx
    test/data/models/<case>/test_data_set_0/input_<i>.pb, output_<j>.pb

The .pb files are serialized onnx.TensorProto carrying the graph input/output
names.  Expected outputs are computed by PyTorch (eager, float32), not by any
ONNX tool.  Cases with dynamic axes also get test_data_set_1 with other
batch/sequence sizes.

Every parameter is randomised (biases, norm weights and biases, embeddings):
PyTorch's 0/1 default inits let a runtime that drops a bias, or adds a sharded
bias once per shard, still match.  Seeds are fixed: re-running reproduces the
files byte for byte (with the same torch/onnx versions).

The script also rewrites docs/test-models.md with a summary of every case.

Needs PyTorch >= 1.13 and ONNX >= 1.12 (Debian bookworm: python3-torch,
python3-onnx, python3-numpy, libopenblas0-pthread).  Torch is only needed to
regenerate these files; nothing in the build or CI depends on it.
"""

import collections
import math
import os
import shutil
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS_DIR = os.path.join(REPO, "test", "data", "models")
EXAMPLES_DIR = os.path.join(REPO, "examples")
DOC_PATH = os.path.join(REPO, "docs", "test-models.md")

# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------

# Shared size class: d=64, 4 heads of 16, 2 blocks, vocab 96 (not a power of 2).
VOCAB = 96
D = 64
HEADS = 4
LAYERS = 2
MAX_POS = 64  # position-table rows; dynamic-seq cases accept seq <= MAX_POS


class MLP(nn.Module):
    """The Megatron MLP: Linear(64,256) -> GELU -> Linear(256,64)."""

    def __init__(self, d=D, hidden=4 * D):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


# ---- GPT-2 style -----------------------------------------------------------


class GPTAttention(nn.Module):
    """Causal self-attention with GPT-2's fused c_attn (here `qkv`)."""

    def __init__(self, d=D, heads=HEADS):
        super().__init__()
        self.d = d
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        B, T, _ = x.size()
        C = self.d
        hd = C // self.heads
        q, k, v = self.qkv(x).split(self.d, dim=2)
        q = q.view(B, T, self.heads, hd).transpose(1, 2)  # B H T hd
        k = k.view(B, T, self.heads, hd).transpose(1, 2)
        v = v.view(B, T, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        pos = torch.arange(T, device=x.device)
        causal = pos.unsqueeze(1) >= pos.unsqueeze(0)  # T x T, True = keep
        att = att.masked_fill(~causal, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v  # B H T hd
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class GPTBlock(nn.Module):
    def __init__(self, d=D, heads=HEADS):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = GPTAttention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = MLP(d, 4 * d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class GPT(nn.Module):
    """GPT-2 style decoder, pre-LN, LM head tied to the token embedding."""

    def __init__(self, vocab=VOCAB, d=D, heads=HEADS, layers=LAYERS, max_pos=MAX_POS):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_pos, d)
        self.blocks = nn.ModuleList([GPTBlock(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)

    def forward(self, input_ids):
        B, T = input_ids.size()
        pos = torch.arange(T, dtype=torch.long, device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        x = self.ln_f(x)
        return F.linear(x, self.wte.weight)  # tied: logits = h @ wte^T


class NanoGPTAttention(nn.Module):
    """nanoGPT's attention: a causal mask kept as a buffer (one tensor every
    block reads a window of), biased projections."""

    def __init__(self, d=D, heads=HEADS, max_pos=MAX_POS):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.register_buffer(
            "bias", torch.tril(torch.ones(max_pos, max_pos)).view(1, 1, max_pos, max_pos))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class NanoGPTBlock(nn.Module):
    def __init__(self, d=D, heads=HEADS):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = NanoGPTAttention(d, heads)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = MLP(d, 4 * d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    """nanoGPT's layout (transformer.h.N, a mask buffer per block, tied
    head), exported without constant folding as training exports are, so
    parameters keep their names and stage 0 computes what later blocks'
    masks and biases read."""

    def __init__(self, vocab=VOCAB, d=D, heads=HEADS, layers=4, max_pos=MAX_POS):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_pos, d)
        self.h = nn.ModuleList([NanoGPTBlock(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, input_ids):
        B, T = input_ids.size()
        pos = torch.arange(0, T, dtype=torch.long, device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# ---- BERT style ------------------------------------------------------------


class BertAttention(nn.Module):
    """Self-attention with separate q/k/v projections and an additive mask."""

    def __init__(self, d=D, heads=HEADS):
        super().__init__()
        self.d = d
        self.heads = heads
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.out_proj = nn.Linear(d, d)

    def forward(self, x, mask_bias):
        B, T, _ = x.size()
        C = self.d
        hd = C // self.heads
        q = self.q_proj(x).view(B, T, self.heads, hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.heads, hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        att = att + mask_bias  # [B,1,1,T]
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.out_proj(y)


class BertLayer(nn.Module):
    """Post-LN encoder layer."""

    def __init__(self, d=D, heads=HEADS):
        super().__init__()
        self.attn = BertAttention(d, heads)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.mlp = MLP(d, 4 * d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, mask_bias):
        x = self.ln1(x + self.attn(x, mask_bias))
        x = self.ln2(x + self.mlp(x))
        return x


class BertEmbeddings(nn.Module):
    def __init__(self, vocab=VOCAB, d=D, max_pos=MAX_POS, type_vocab=2):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.position = nn.Embedding(max_pos, d)
        self.token_type = nn.Embedding(type_vocab, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)

    def forward(self, input_ids):
        B, T = input_ids.size()
        pos = torch.arange(T, dtype=torch.long, device=input_ids.device)
        token_type_ids = torch.zeros_like(input_ids)
        x = self.word(input_ids) + self.position(pos) + self.token_type(token_type_ids)
        return self.ln(x)


class Bert(nn.Module):
    def __init__(self, vocab=VOCAB, d=D, heads=HEADS, layers=LAYERS, max_pos=MAX_POS):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab, d, max_pos)
        self.layers = nn.ModuleList([BertLayer(d, heads) for _ in range(layers)])
        self.pooler = nn.Linear(d, d)

    def forward(self, input_ids, attention_mask):
        # attention_mask: float [B, T], 1 = attend, 0 = padding.
        mask_bias = (1.0 - attention_mask)[:, None, None, :] * -10000.0
        x = self.embeddings(input_ids)
        for layer in self.layers:
            x = layer(x, mask_bias)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x, pooled


# ---- LLaMA style -----------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(var + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaAttention(nn.Module):
    """Grouped-query attention with rotary position embeddings."""

    def __init__(self, d=D, heads=HEADS, kv_heads=2, theta=10000.0):
        super().__init__()
        self.heads = heads
        self.kv_heads = kv_heads
        self.hd = d // heads
        self.q_proj = nn.Linear(d, heads * self.hd, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(heads * self.hd, d, bias=False)
        self.theta = theta

    def forward(self, x):
        B, T, _ = x.size()
        C = self.heads * self.hd
        hd = self.hd
        q = self.q_proj(x).view(B, T, self.heads, hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv_heads, hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv_heads, hd).transpose(1, 2)
        # Rotary embeddings computed from the positions.
        inv_freq = 1.0 / (
            self.theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd)
        )
        pos = torch.arange(T, device=x.device).to(torch.float32)
        freqs = pos[:, None] * inv_freq[None, :]  # T x hd/2
        emb = torch.cat((freqs, freqs), dim=-1)  # T x hd
        cos, sin = emb.cos(), emb.sin()
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # Repeat kv heads for grouped-query attention (as HF's repeat_kv).
        n_rep = self.heads // self.kv_heads
        k = k[:, :, None, :, :].expand(B, self.kv_heads, n_rep, T, hd).reshape(
            B, self.heads, T, hd)
        v = v[:, :, None, :, :].expand(B, self.kv_heads, n_rep, T, hd).reshape(
            B, self.heads, T, hd)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        p = torch.arange(T, device=x.device)
        causal = p.unsqueeze(1) >= p.unsqueeze(0)
        att = att.masked_fill(~causal, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.o_proj(y)


class LlamaMLP(nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x))."""

    def __init__(self, d=D, hidden=172):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaLayer(nn.Module):
    def __init__(self, d=D):
        super().__init__()
        self.input_layernorm = RMSNorm(d)
        self.self_attn = LlamaAttention(d)
        self.post_attention_layernorm = RMSNorm(d)
        self.mlp = LlamaMLP(d)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x


class Llama(nn.Module):
    def __init__(self, vocab=VOCAB, d=D, layers=LAYERS):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([LlamaLayer(d) for _ in range(layers)])
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)  # untied

    def forward(self, input_ids):
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


class BasicBlock(nn.Module):
    """A ResNet basic block: two 3x3 convolutions with batch norm, a
    projection shortcut when the shape changes."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.shortcut is None else self.shortcut(x)))


class CNN(nn.Module):
    """A small ResNet: a biased stem convolution, max pooling, two basic
    blocks, global average pooling and a classifier. Exported in eval mode
    with constant folding, batch norm folds into the convolutions, so every
    convolution carries a bias (as in a torchvision ResNet-18 export)."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 1, 1, bias=True)
        self.pool = nn.MaxPool2d(2)
        self.layer1 = BasicBlock(16, 16, 1)
        self.layer2 = BasicBlock(16, 32, 2)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.pool(F.relu(self.stem(x)))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# --------------------------------------------------------------------------
# Parameter randomisation
# --------------------------------------------------------------------------


def randomise(model, seed):
    """Overwrite every parameter with seeded random values of sensible scale."""
    g = torch.Generator().manual_seed(seed)

    def rn(t):
        return torch.randn(t.shape, generator=g, dtype=t.dtype)

    with torch.no_grad():
        for mod_name, mod in model.named_modules():
            if isinstance(mod, nn.Linear):
                mod.weight.copy_(rn(mod.weight) / math.sqrt(mod.in_features))
                if mod.bias is not None:
                    mod.bias.copy_(0.1 * rn(mod.bias))
            elif isinstance(mod, nn.LayerNorm):
                mod.weight.copy_(1.0 + 0.2 * rn(mod.weight))
                mod.bias.copy_(0.1 * rn(mod.bias))
            elif isinstance(mod, RMSNorm):
                mod.weight.copy_(1.0 + 0.2 * rn(mod.weight))
            elif isinstance(mod, nn.Embedding):
                mod.weight.copy_(0.5 * rn(mod.weight))
            elif isinstance(mod, nn.Conv2d):
                fan_in = mod.in_channels * mod.kernel_size[0] * mod.kernel_size[1]
                mod.weight.copy_(rn(mod.weight) / math.sqrt(fan_in))
                if mod.bias is not None:
                    mod.bias.copy_(0.1 * rn(mod.bias))
            elif isinstance(mod, nn.BatchNorm2d):
                mod.weight.copy_(1.0 + 0.2 * rn(mod.weight))
                mod.bias.copy_(0.1 * rn(mod.bias))
                mod.running_mean.copy_(0.1 * rn(mod.running_mean))
                mod.running_var.copy_(1.0 + 0.2 * rn(mod.running_var).abs())
        # Every parameter must belong to one of the kinds above.
        handled = set()
        for mod in model.modules():
            if isinstance(mod, (nn.Linear, nn.LayerNorm, RMSNorm, nn.Embedding,
                                nn.Conv2d, nn.BatchNorm2d)):
                handled.update(id(p) for p in mod.parameters(recurse=False))
        for name, p in model.named_parameters():
            if id(p) not in handled:
                raise RuntimeError(f"parameter {name} was not randomised")
    return model


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------


def token_ids(seed, batch, seq):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (batch, seq), generator=g, dtype=torch.int64)


def bert_mask(batch, seq):
    # 1 = attend, 0 = padding. Row 0 pads the last 3, row 1 the last 6,
    # further rows pad nothing.
    m = torch.ones(batch, seq, dtype=torch.float32)
    pads = [3, 6]
    for b in range(min(batch, len(pads))):
        m[b, seq - min(pads[b], seq - 1):] = 0.0
    return m


MODEL_DEFS = {
    # name: (constructor, seed, input names, output names, dynamic axes,
    #        make_inputs(batch, seq, data set index), default (batch, seq),
    #        dyn (batch, seq) for test_data_set_1 of dynamic cases)
    "mlp": dict(
        ctor=MLP, seed=1,
        inputs=["x"], outputs=["y"],
        dyn_axes={"x": {0: "batch"}, "y": {0: "batch"}},
        make_inputs=lambda b, s, k: [
            torch.randn(b, D, generator=torch.Generator().manual_seed(101 + 17 * k))],
        shape=(4, None), dyn_shape=(3, None),
    ),
    "gpt": dict(
        ctor=GPT, seed=2,
        inputs=["input_ids"], outputs=["logits"],
        dyn_axes={"input_ids": {0: "batch", 1: "seq"},
                  "logits": {0: "batch", 1: "seq"}},
        make_inputs=lambda b, s, k: [token_ids(102 + 17 * k, b, s)],
        shape=(2, 16), dyn_shape=(3, 11),
    ),
    # Four blocks and a batch of 8, for pipelines of up to 4 stages and 8
    # microbatches.
    "gpt4": dict(
        ctor=lambda: GPT(layers=4), seed=5,
        inputs=["input_ids"], outputs=["logits"],
        dyn_axes={"input_ids": {0: "batch", 1: "seq"},
                  "logits": {0: "batch", 1: "seq"}},
        make_inputs=lambda b, s, k: [token_ids(105 + 17 * k, b, s)],
        shape=(8, 16), dyn_shape=(4, 16),
    ),
    # nanoGPT's layout, exported without constant folding (see NanoGPT).
    "nanogpt": dict(
        ctor=NanoGPT, seed=7, fold=False,
        inputs=["input_ids"], outputs=["logits"],
        dyn_axes={"input_ids": {0: "batch", 1: "seq"},
                  "logits": {0: "batch", 1: "seq"}},
        make_inputs=lambda b, s, k: [token_ids(107 + 17 * k, b, s)],
        shape=(4, 16), dyn_shape=(2, 12),
    ),
    "bert": dict(
        ctor=Bert, seed=3,
        inputs=["input_ids", "attention_mask"],
        outputs=["sequence_output", "pooled_output"],
        dyn_axes={"input_ids": {0: "batch", 1: "seq"},
                  "attention_mask": {0: "batch", 1: "seq"},
                  "sequence_output": {0: "batch", 1: "seq"},
                  "pooled_output": {0: "batch"}},
        make_inputs=lambda b, s, k: [token_ids(103 + 17 * k, b, s), bert_mask(b, s)],
        shape=(2, 16), dyn_shape=(3, 11),
    ),
    "llama": dict(
        ctor=Llama, seed=4,
        inputs=["input_ids"], outputs=["logits"],
        dyn_axes={"input_ids": {0: "batch", 1: "seq"},
                  "logits": {0: "batch", 1: "seq"}},
        make_inputs=lambda b, s, k: [token_ids(104 + 17 * k, b, s)],
        shape=(2, 16), dyn_shape=(3, 11),
    ),
    # A CNN whose convolutions all carry biases (batch norm folded in).
    "cnn": dict(
        ctor=CNN, seed=6,
        inputs=["image"], outputs=["logits"],
        dyn_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
        make_inputs=lambda b, s, k: [
            torch.randn(b, 3, 16, 16, generator=torch.Generator().manual_seed(106 + 17 * k))],
        shape=(4, None), dyn_shape=(2, None),
    ),
}

# (case name, model, opset, dynamic, external data)
CASES = [
    ("mlp_op17", "mlp", 17, False, False),
    ("mlp_op13", "mlp", 13, False, False),
    ("mlp_op17_dyn", "mlp", 17, True, False),
    ("gpt_op17", "gpt", 17, False, False),
    ("gpt_op13", "gpt", 13, False, False),
    ("gpt_op17_dyn", "gpt", 17, True, False),
    ("gpt_op13_dyn", "gpt", 13, True, False),
    ("gpt_op17_extdata", "gpt", 17, False, True),
    ("gpt4_op17_dyn", "gpt4", 17, True, False),
    ("bert_op17", "bert", 17, False, False),
    ("bert_op13", "bert", 13, False, False),
    ("bert_op17_dyn", "bert", 17, True, False),
    ("bert_op13_dyn", "bert", 13, True, False),
    ("llama_op17", "llama", 17, False, False),
    ("llama_op13", "llama", 13, False, False),
    ("llama_op17_dyn", "llama", 17, True, False),
    ("nanogpt_op17_dyn", "nanogpt", 17, True, False),
    ("cnn_op17", "cnn", 17, False, False),
    ("cnn_op17_dyn", "cnn", 17, True, False),
]


def build_model(name):
    d = MODEL_DEFS[name]
    torch.manual_seed(d["seed"])
    model = d["ctor"]()
    randomise(model, 1000 + d["seed"])
    model.eval()
    return model


def write_tensor(path, array, name):
    t = numpy_helper.from_array(np.ascontiguousarray(array), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def write_data_set(case_dir, index, model, d, batch, seq):
    inputs = d["make_inputs"](batch, seq, index)
    with torch.no_grad():
        outs = model(*inputs)
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    ds = os.path.join(case_dir, f"test_data_set_{index}")
    os.makedirs(ds)
    for i, (n, t) in enumerate(zip(d["inputs"], inputs)):
        write_tensor(os.path.join(ds, f"input_{i}.pb"), t.numpy(), n)
    for j, (n, t) in enumerate(zip(d["outputs"], outs)):
        write_tensor(os.path.join(ds, f"output_{j}.pb"), t.numpy(), n)
    return inputs, outs


def export_case(case, mname, opset, dynamic, extdata):
    d = MODEL_DEFS[mname]
    model = build_model(mname)
    case_dir = os.path.join(MODELS_DIR, case)
    if os.path.exists(case_dir):
        shutil.rmtree(case_dir)
    os.makedirs(case_dir)
    batch, seq = d["shape"]
    example = tuple(d["make_inputs"](batch, seq, 0))
    model_path = os.path.join(case_dir, "model.onnx")
    # Export with gradients enabled (see the module docstring of testdata).
    torch.onnx.export(
        model, example, model_path,
        input_names=d["inputs"], output_names=d["outputs"],
        dynamic_axes=d["dyn_axes"] if dynamic else None,
        opset_version=opset, do_constant_folding=d.get("fold", True),
        export_params=True, verbose=False,
    )
    proto = onnx.load(model_path)
    proto.producer_name = "distopt scripts/export_test_models.py (torch.onnx)"
    proto.doc_string = ""
    for node in proto.graph.node:
        node.doc_string = ""
    if extdata:
        onnx.save_model(proto, model_path, save_as_external_data=True,
                        all_tensors_to_one_file=True, location="weights.bin",
                        size_threshold=0)
    else:
        onnx.save_model(proto, model_path)
    onnx.checker.check_model(model_path)  # path form also checks external data

    write_data_set(case_dir, 0, model, d, batch, seq)
    if dynamic:
        db, ds = d["dyn_shape"]
        write_data_set(case_dir, 1, model, d, db, ds)
    return case_dir


# --------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------


def dims(vi):
    out = []
    for dm in vi.type.tensor_type.shape.dim:
        out.append(dm.dim_param if dm.HasField("dim_param") else str(dm.dim_value))
    return "[" + ", ".join(out) + "]"


def elem_type(vi):
    return onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type).lower()


def summarise(case, case_dir, mname, opset, dynamic, extdata):
    model_path = os.path.join(case_dir, "model.onnx")
    m = onnx.load(model_path)  # loads external data too
    files = {}
    for root, _, fnames in os.walk(case_dir):
        for f in fnames:
            p = os.path.join(root, f)
            files[os.path.relpath(p, case_dir)] = os.path.getsize(p)
    hist = collections.Counter(n.op_type for n in m.graph.node)
    inits = [(i.name, list(i.dims), onnx.TensorProto.DataType.Name(i.data_type).lower())
             for i in m.graph.initializer]
    n_params = sum(int(np.prod(i[1])) if i[1] else 1 for i in inits)
    init_shape = {name: shp for name, shp, _ in inits}
    # Which initializer each weight-consuming node reads (plans match on these).
    uses = []
    for n in m.graph.node:
        if n.op_type in ("MatMul", "Gemm", "Gather", "Conv"):
            for i in n.input:
                if i in init_shape:
                    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
                    tb = " transB=1" if attrs.get("transB", 0) else ""
                    uses.append(f"`{n.name}` ({n.op_type}{tb}) ← `{i}` {init_shape[i]}")
    data_sets = sorted(f for f in os.listdir(case_dir) if f.startswith("test_data_set_"))
    ds_shapes = []
    for dsn in data_sets:
        shapes = []
        for f in sorted(os.listdir(os.path.join(case_dir, dsn))):
            t = onnx.TensorProto()
            with open(os.path.join(case_dir, dsn, f), "rb") as fh:
                t.ParseFromString(fh.read())
            shapes.append(f"{t.name}{list(t.dims)}")
        ds_shapes.append((dsn, shapes))
    return dict(
        case=case, model=mname, opset=opset, dynamic=dynamic, extdata=extdata,
        files=files, hist=hist, inits=inits, n_params=n_params,
        n_nodes=len(m.graph.node),
        inputs=[(vi.name, elem_type(vi), dims(vi)) for vi in m.graph.input],
        outputs=[(vi.name, elem_type(vi), dims(vi)) for vi in m.graph.output],
        node_names=[(n.name, n.op_type) for n in m.graph.node],
        uses=uses,
        data_sets=ds_shapes,
    )


def print_summary(s):
    print(f"== {s['case']}  (model {s['model']}, opset {s['opset']}, "
          f"{'dynamic' if s['dynamic'] else 'static'}"
          f"{', external data' if s['extdata'] else ''})")
    for f, sz in sorted(s["files"].items()):
        if not f.startswith("test_data_set"):
            print(f"   {f}: {sz} bytes")
    print(f"   inputs:  {s['inputs']}")
    print(f"   outputs: {s['outputs']}")
    print(f"   nodes: {s['n_nodes']}  ops: " +
          ", ".join(f"{k}:{v}" for k, v in sorted(s["hist"].items())))
    print(f"   initializers ({len(s['inits'])}, {s['n_params']} elements):")
    for name, shp, dt in s["inits"]:
        print(f"      {name} {shp} {dt}")
    interesting = [n for n in s["node_names"]
                   if n[1] in ("MatMul", "Gemm", "Gather", "LayerNormalization")]
    print("   node name samples: " +
          ", ".join(f"{n}({op})" for n, op in interesting[:8]))
    for dsn, shapes in s["data_sets"]:
        print(f"   {dsn}: {' '.join(shapes)}")


DOC_HEAD = """\
# Test models

Small exported PyTorch models with PyTorch-computed reference outputs, in the
layout of the ONNX backend test suite:

```
test/data/models/<case>/model.onnx
test/data/models/<case>/test_data_set_0/input_<i>.pb   # onnx.TensorProto, named as the graph input
test/data/models/<case>/test_data_set_0/output_<j>.pb  # onnx.TensorProto, named as the graph output
```

Cases with dynamic axes (`_dyn`) also carry `test_data_set_1` with different
sizes (batch 3, sequence 11 — deliberately not divisible by common mesh sizes).
`gpt_op17_extdata` keeps its weights in ONNX external data (`weights.bin` next
to `model.onnx`, one file, every initializer external).

`examples/mlp.onnx` (the README's example) is a copy of `mlp_op17/model.onnx`.

## Regenerating

```
apt-get install -y python3-torch python3-onnx python3-numpy libopenblas0-pthread
/usr/bin/python3 scripts/export_test_models.py
```

Torch is needed only to regenerate these files; the build and CI do not use it.
Generated with PyTorch @TORCH@ and ONNX @ONNX@. Seeds are fixed,
so a re-run with the same versions reproduces every file byte for byte (this
document included). Each `model.onnx` is checked with `onnx.checker`. ONNX 1.12
has no reference evaluator (`onnx.reference` arrived in 1.13), so the script
does not evaluate the exported graphs; the outputs come from PyTorch eager
mode in float32, so compare with a tolerance (about 1e-4 relative). When these
files were made, every case was also run once, outside the repository, with
ONNX Runtime 1.30 (`onnxruntime-node`): the largest absolute difference from
the PyTorch outputs was 6.7e-6 (gpt logits reach about 17 in magnitude).

## How the models are built

All parameters are randomised after construction (fixed seeds): Linear weights
`N(0,1)/sqrt(fan_in)`, biases `0.1·N(0,1)`, LayerNorm/RMSNorm weights
`1 + 0.2·N(0,1)`, norm biases `0.1·N(0,1)`, embeddings `0.5·N(0,1)`. PyTorch's
default 0/1 inits would hide a dropped bias or a bias added once per shard.
Exported with gradients enabled (not under `torch.no_grad()`),
`do_constant_folding=True`, opset 17 or 13.

Shared size: d=64, 4 heads of 16, 2 layers, vocabulary 96 (not a power of
two), position tables of 64 rows (so dynamic cases accept seq ≤ 64).

- **mlp** — `fc1` Linear(64,256) → GELU (exact, erf) → `fc2` Linear(256,64).
  Input `x` float [4, 64]. The Megatron MLP.
- **gpt** — GPT-2-style pre-LN decoder. `wte` (96×64), `wpe` (64×64, looked
  up with `torch.arange(seq)`), `blocks.{0,1}`: `ln1` → `attn` (fused
  `attn.qkv` Linear(64,192) split into q,k,v; causal mask built from
  `arange` comparisons, filled with `-inf`; softmax; `attn.proj`) → residual →
  `ln2` → `mlp.fc1` Linear(64,256) → GELU → `mlp.fc2` → residual; `ln_f`;
  LM head tied to `wte` (`logits = h @ wte^T`). Input `input_ids` int64
  [2, 16]; output `logits` [2, 16, 96].
- **bert** — BERT-style post-LN encoder. `embeddings.word` + `embeddings.position`
  + `embeddings.token_type` (token types all 0) → `embeddings.ln`;
  `layers.{0,1}`: `attn.q_proj`/`k_proj`/`v_proj`/`out_proj` (separate
  Linears) with additive mask `(1 - attention_mask) * -10000` → residual →
  `ln1` → `mlp.fc1` → GELU → `mlp.fc2` → residual → `ln2`; `pooler`
  (first token → Linear → tanh). LayerNorm eps 1e-12. Inputs `input_ids`
  int64 [2, 16], `attention_mask` float32 [2, 16] (1 = attend; row 0 pads the
  last 3 positions, row 1 the last 6). Outputs `sequence_output` [2, 16, 64],
  `pooled_output` [2, 64].
- **llama** — LLaMA-style decoder, no biases. `embed_tokens`; `layers.{0,1}`:
  `input_layernorm` (RMSNorm, eps 1e-6) → `self_attn` (`q_proj` 64→64,
  `k_proj`/`v_proj` 64→32: grouped-query attention with 4 query heads and 2
  kv heads; rotary embeddings computed in the graph from positions with
  sin/cos, θ=10000, rotate-half form; kv heads repeated by expand+reshape;
  causal mask; `o_proj`) → residual → `post_attention_layernorm` → SwiGLU
  `mlp.down_proj(silu(mlp.gate_proj(x)) * mlp.up_proj(x))` (hidden 172) →
  residual; `norm`; untied `lm_head` Linear(64,96). Input `input_ids` int64
  [2, 16]; output `logits` [2, 16, 96].

## Naming in the exported graphs (matters for plans that match by name)

- Embedding, norm and bias initializers keep their PyTorch parameter names
  (`blocks.0.ln1.weight`, `blocks.0.attn.qkv.bias`, `wte.weight`).
- A Linear applied to a 3-D activation becomes `MatMul` + `Add`; its weight is
  stored *transposed* ([in, out]) under a generated name `onnx::MatMul_<N>`.
  The node names keep the module path (`/blocks.0/attn/qkv/MatMul`), so match
  on the node name and follow its second input to the initializer.
- A Linear on a 2-D activation (mlp, the bert pooler) becomes `Gemm` with
  `transB=1` and keeps its original weight name (`fc1.weight`, [out, in]).
- gpt's tied LM head is a `MatMul` against a transposed copy of `wte.weight`
  (another `onnx::MatMul_<N>` initializer): after export the tie is two separate
  initializers, `wte.weight` (used by `Gather`) and its transpose.
- The bias `Add` of a MatMul-Linear takes the bias FIRST:
  `/blocks.0/attn/qkv/Add(blocks.0.attn.qkv.bias, /blocks.0/attn/qkv/MatMul_output_0)`.
- Static cases: constant folding turns `wpe(arange(16))` into a [16, 64]
  initializer named `onnx::Add_<N>` (gpt) — `wpe.weight` is then absent from
  the graph; bert's position lookup is folded the same way
  (`embeddings.position.weight` absent) and its all-zero token-type ids become
  an int64 `Constant` node feeding `Gather(embeddings.token_type.weight)`;
  llama's rotary angle table is a float [16, 16] `Constant` node and Cos/Sin
  still run in the graph. The causal mask's index vectors are int64
  `Constant` nodes and the mask itself is still computed (GreaterOrEqual →
  Not → Cast → Where with `-inf`). Reshape targets are `Constant` nodes with
  the batch size baked in (`[2, 16, 4, 16]`).
- Dynamic cases keep `wpe.weight` and compute shapes at run time
  (Shape → Gather → Unsqueeze → Concat → Reshape, Range for positions).
- Each case below lists which initializer every MatMul/Gemm/Gather reads.

## Cases
"""


def write_doc(summaries):
    lines = [DOC_HEAD.replace("@TORCH@", torch.__version__.split("+")[0])
             .replace("@ONNX@", onnx.__version__)]
    lines.append("| case | opset | shapes | model.onnx bytes | other files | nodes | initializers (elements) |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- |")
    for s in summaries:
        other = ", ".join(f"`{f}` {sz}" for f, sz in sorted(s["files"].items())
                          if f != "model.onnx" and not f.startswith("test_data_set"))
        lines.append(
            f"| `{s['case']}` | {s['opset']} | {'dynamic' if s['dynamic'] else 'static'} "
            f"| {s['files']['model.onnx']} | {other or '—'} | {s['n_nodes']} "
            f"| {len(s['inits'])} ({s['n_params']}) |")
    lines.append("")
    for s in summaries:
        lines.append(f"### `{s['case']}`")
        lines.append("")
        lines.append(f"Model `{s['model']}`, opset {s['opset']}, "
                     f"{'dynamic axes' if s['dynamic'] else 'static shapes'}"
                     f"{', external data in `weights.bin`' if s['extdata'] else ''}.")
        lines.append("")
        for n, t, dm in s["inputs"]:
            lines.append(f"- input `{n}`: {t} {dm}")
        for n, t, dm in s["outputs"]:
            lines.append(f"- output `{n}`: {t} {dm}")
        for dsn, shapes in s["data_sets"]:
            lines.append(f"- `{dsn}`: " + ", ".join(f"`{x}`" for x in shapes))
        lines.append("- ops: " + ", ".join(
            f"{k} {v}" for k, v in sorted(s["hist"].items())))
        lines.append("- initializers: " + ", ".join(
            f"`{n}` {shp}" for n, shp, _ in s["inits"]))
        lines.append("- weights read by MatMul/Gemm/Gather/Conv nodes:")
        for u in s["uses"]:
            lines.append(f"  - {u}")
        lines.append("")
    with open(DOC_PATH, "w") as f:
        f.write("\n".join(lines))


def main():
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    os.makedirs(MODELS_DIR, exist_ok=True)
    only = set(sys.argv[1:])
    summaries = []
    for case, mname, opset, dynamic, extdata in CASES:
        if only and case not in only:
            continue
        case_dir = export_case(case, mname, opset, dynamic, extdata)
        s = summarise(case, case_dir, mname, opset, dynamic, extdata)
        print_summary(s)
        summaries.append(s)
        if s["files"]["model.onnx"] + s["files"].get("weights.bin", 0) > 1 << 20:
            raise RuntimeError(f"{case} is larger than 1 MB")
    if not only:
        os.makedirs(EXAMPLES_DIR, exist_ok=True)
        shutil.copyfile(os.path.join(MODELS_DIR, "mlp_op17", "model.onnx"),
                        os.path.join(EXAMPLES_DIR, "mlp.onnx"))
        write_doc(summaries)
        print(f"wrote {len(summaries)} cases, examples/mlp.onnx, docs/test-models.md")


if __name__ == "__main__":
    main()
