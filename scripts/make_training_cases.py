#!/usr/bin/env python3
"""Make the training cases under test/data/train/: PyTorch as the reference trainer.

Run from anywhere with Debian's Python (it sees python3-torch and python3-onnx):

    /usr/bin/python3 scripts/make_training_cases.py [case ...]

Every case is a folder that says what to train and what PyTorch got, so a
trainer can be checked against it step by step (layout and train.json schema:
docs/training-cases.md):

    test/data/train/<case>/model.onnx          forward graph, initial weights
    test/data/train/<case>/train.json          loss, optimizer, globs, torch's losses
    test/data/train/<case>/step_K/input_I.pb   batch of step K (graph inputs in order)
    test/data/train/<case>/step_K/labels.pb    its labels
    test/data/train/<case>/step_K/micro_J/     accumulating cases: microbatch J of step K
    test/data/train/<case>/probe/input_I.pb    a batch never trained on
    test/data/train/<case>/probe/output_I.pb   the trained model's outputs on it

The model is built with fixed seeds, every parameter randomised (nothing
exactly 0 or 1), exported with do_constant_folding=False (so initializers keep
the PyTorch names), and then trained in PyTorch on the same batches
(float32, eager, one thread, deterministic algorithms).  The script checks
that the parameters torch optimises are, by name, exactly the float
initializers of model.onnx minus the `frozen` globs, and that every
initializer name is a torch parameter or buffer name.  Re-running reproduces
every file byte for byte with the same torch/onnx versions on the same machine
(other CPUs can change the last digits of the losses: OpenBLAS kernels).

Needs PyTorch >= 1.13 and ONNX >= 1.12 (Debian bookworm: python3-torch,
python3-onnx, python3-numpy, libopenblas0-pthread).  Nothing in the build or
CI depends on torch.
"""

import collections
import contextlib
import copy
import fnmatch
import json
import math
import os
import re
import shutil
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN_DIR = os.path.join(REPO, "test", "data", "train")
DOC_PATH = os.path.join(REPO, "docs", "training-cases.md")
OPSET = 17
IGNORE_INDEX = -100

# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------


def in_f32(fn, x):
    """fn(x) computed in float32 and returned in x's dtype: what a mixed
    precision policy's keep_f32 ops do. On float32 input it is fn(x) itself,
    so the f32 cases' exports do not change."""
    if x.dtype == torch.float32:
        return fn(x)
    return fn(x.float()).to(x.dtype)


class GPTAttention(nn.Module):
    """nanoGPT's causal self-attention: fused c_attn, c_proj, and the causal
    mask as a registered buffer `bias` that every forward slices."""

    def __init__(self, d, heads, block_size):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.register_buffer(
            "bias", torch.tril(torch.ones(block_size, block_size))
            .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        hd = C // self.heads
        q = q.view(B, T, self.heads, hd).transpose(1, 2)
        k = k.view(B, T, self.heads, hd).transpose(1, 2)
        v = v.view(B, T, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = in_f32(lambda a: F.softmax(a, dim=-1), att) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class GPTMLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))  # exact (erf) GELU


class GPTBlock(nn.Module):
    def __init__(self, d, heads, block_size):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = GPTAttention(d, heads, block_size)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = GPTMLP(d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """GPT-2 style pre-LN decoder in nanoGPT's layout: learned positions,
    biases everywhere, LM head tied to the token embedding."""

    def __init__(self, vocab, d, heads, layers, block_size):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block_size, d)
        self.h = nn.ModuleList([GPTBlock(d, heads, block_size) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, input_ids):
        B, T = input_ids.size()
        pos = torch.arange(0, T, dtype=torch.long, device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class MoE(nn.Module):
    """GShard's top-2 mixture of experts over groups of tokens (a group is
    one sequence): a softmax gate, TopK, OneHot masks, CumSum positions in
    each expert's buffer of `capacity` slots (tokens past it are dropped),
    Einsum dispatch, a batched expert FFN and Einsum combine, and the
    load-balancing loss. Returns the output and that loss."""

    def __init__(self, d, experts, hidden, capacity):
        super().__init__()
        self.experts, self.capacity = experts, capacity
        self.gate = nn.Linear(d, experts, bias=False)
        self.w_in = nn.Parameter(torch.empty(experts, d, hidden))
        self.w_out = nn.Parameter(torch.empty(experts, hidden, d))

    def forward(self, x):  # x: [groups, tokens, d]
        E, C = self.experts, self.capacity
        gates = F.softmax(self.gate(x), dim=-1)                    # [g, s, e]
        top = torch.topk(gates, 2, dim=-1).indices                 # [g, s, 2]
        mask1 = F.one_hot(top[..., 0], E).to(x.dtype)
        mask2 = F.one_hot(top[..., 1], E).to(x.dtype)
        # Load balance: E * sum_e (tokens sent first to e) * (mean gate of e).
        aux = (mask1.mean(dim=1) * gates.mean(dim=1)).sum(-1).mean() * E
        # Slots in each expert's buffer: first choices, then second ones.
        pos1 = torch.cumsum(mask1, dim=1) - mask1
        mask1 = mask1 * (pos1 < C).to(x.dtype)
        pos2 = torch.cumsum(mask2, dim=1) - mask2 + mask1.sum(dim=1, keepdim=True)
        mask2 = mask2 * (pos2 < C).to(x.dtype)
        g1 = (gates * mask1).sum(-1, keepdim=True)
        g2 = (gates * mask2).sum(-1, keepdim=True)
        denom = g1 + g2 + 1e-6
        slot1 = F.one_hot((pos1 * mask1).sum(-1).long(), C).to(x.dtype)   # [g, s, c]
        slot2 = F.one_hot((pos2 * mask2).sum(-1).long(), C).to(x.dtype)
        dispatch = (mask1.unsqueeze(-1) * slot1.unsqueeze(2)
                    + mask2.unsqueeze(-1) * slot2.unsqueeze(2))            # [g, s, e, c]
        combine = ((g1 / denom * mask1).unsqueeze(-1) * slot1.unsqueeze(2)
                   + (g2 / denom * mask2).unsqueeze(-1) * slot2.unsqueeze(2))
        xin = torch.einsum("gsec,gsd->gecd", dispatch, x)
        h = F.gelu(torch.einsum("gecd,edf->gecf", xin, self.w_in))
        out = torch.einsum("gecf,efd->gecd", h, self.w_out)
        return torch.einsum("gsec,gecd->gsd", combine, out), aux


class ExpertBlock(nn.Module):
    """A GPT block whose MLP is a mixture of experts (`moe`: MoE's top-2 or
    SwitchMoE's top-1); returns the output and what the mixture adds (its
    load-balancing loss, and Switch's dropped fraction)."""

    def __init__(self, moe, d, heads, block_size, experts, hidden, capacity):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = GPTAttention(d, heads, block_size)
        self.ln_2 = nn.LayerNorm(d)
        self.moe = moe(d, experts, hidden, capacity)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        y, *extra = self.moe(self.ln_2(x))
        return (x + y, *extra)


class ExpertGPT(nn.Module):
    """The GPT of gpt_adamw with a mixture of experts in place of every MLP
    (`moe`: MoE's top-2 or SwitchMoE's top-1); the graph computes
    the loss: cross-entropy plus 0.01 times the layers' load-balancing
    losses. A mixture that also returns its dropped fraction makes the model
    return the fraction of the tokens the layers dropped (the mean over
    layers) after the loss."""

    def __init__(self, moe, vocab, d, heads, layers, block_size, experts, hidden, capacity):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block_size, d)
        self.h = nn.ModuleList([ExpertBlock(moe, d, heads, block_size, experts, hidden, capacity)
                                for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, input_ids, labels):
        B, T = input_ids.size()
        pos = torch.arange(0, T, dtype=torch.long, device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(pos)
        aux, dropped, drops = 0.0, 0.0, False
        for block in self.h:
            x, a, *d = block(x)
            aux = aux + a
            if d:
                dropped, drops = dropped + d[0], True
        logits = self.lm_head(self.ln_f(x))
        ce = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))
        if not drops:
            return ce + 0.01 * aux
        return ce + 0.01 * aux, dropped / len(self.h)


class SwitchMoE(nn.Module):
    """Switch Transformer's top-1 mixture of experts over groups of tokens
    (a group is one sequence): a softmax router, each token's expert its
    argmax and its gate that expert's probability, `capacity` slots per
    expert filled in token order (tokens past it are dropped: no expert
    output, the residual carries them), Einsum dispatch, a batched ReLU FFN
    and Einsum combine. Returns the output, the Switch load-balancing loss
    and the fraction of the tokens dropped."""

    def __init__(self, d, experts, hidden, capacity):
        super().__init__()
        self.experts, self.capacity = experts, capacity
        self.router = nn.Linear(d, experts, bias=False)
        self.w_in = nn.Parameter(torch.empty(experts, d, hidden))
        self.w_out = nn.Parameter(torch.empty(experts, hidden, d))

    def forward(self, x):  # x: [groups, tokens, d]
        E, C = self.experts, self.capacity
        G, S = x.shape[0], x.shape[1]
        probs = F.softmax(self.router(x), dim=-1)                 # [g, s, e]
        mask = F.one_hot(torch.argmax(probs, dim=-1), E).to(x.dtype)
        gate = (probs * mask).sum(-1, keepdim=True)               # [g, s, 1]
        # Switch's load balance: E * sum_e (fraction of tokens routed to e,
        # before the capacity drop) * (mean router probability of e).
        aux = (mask.mean(dim=1) * probs.mean(dim=1)).sum(-1).mean() * E
        pos = torch.cumsum(mask, dim=1) - mask                    # slot if kept
        keep = mask * (pos < C).to(x.dtype)
        slot = F.one_hot((pos * keep).sum(-1).long(), C).to(x.dtype)   # [g, s, c]
        dispatch = keep.unsqueeze(-1) * slot.unsqueeze(2)         # [g, s, e, c]
        combine = dispatch * gate.unsqueeze(-1)
        dropped = 1.0 - dispatch.sum() / (G * S)
        xin = torch.einsum("gsec,gsd->gecd", dispatch, x)
        h = F.relu(torch.einsum("gecd,edf->gecf", xin, self.w_in))
        out = torch.einsum("gecf,efd->gecd", h, self.w_out)
        return torch.einsum("gsec,gecd->gsd", combine, out), aux, dropped


def sequence_logps(logits, labels):
    """Each row's summed log-probability of its labelled tokens, as TRL's
    DPOTrainer computes it (get_batch_logps): the labels shifted by one,
    IGNORE_INDEX (prompt and padding) masked out, log_softmax read at the
    labels with torch.gather."""
    labels = labels[:, 1:]
    logits = logits[:, :-1, :]
    mask = labels != IGNORE_INDEX
    labels = labels.masked_fill(~mask, 0)
    per_token = torch.gather(logits.log_softmax(-1), 2, labels.unsqueeze(2)).squeeze(2)
    return (per_token * mask).sum(-1)


class DPO(nn.Module):
    """Direct preference optimisation in one graph: a GPT policy and a
    reference GPT of the same shape (frozen, other weights) read the chosen
    and rejected sequences concatenated along the batch (TRL's
    concatenated_forward); the graph returns the sigmoid DPO loss and the
    implicit rewards TRL logs."""

    def __init__(self, beta, **gpt):
        super().__init__()
        self.beta = beta
        self.policy = GPT(**gpt)
        self.reference = GPT(**gpt)

    def forward(self, chosen_input_ids, chosen_labels, rejected_input_ids,
                rejected_labels):
        B = chosen_input_ids.size(0)
        ids = torch.cat([chosen_input_ids, rejected_input_ids], 0)
        labels = torch.cat([chosen_labels, rejected_labels], 0)
        policy = sequence_logps(self.policy(ids), labels)
        with torch.no_grad():
            reference = sequence_logps(self.reference(ids), labels)
        pi_chosen, pi_rejected = policy[:B], policy[B:]
        ref_chosen, ref_rejected = reference[:B], reference[B:]
        logits = (pi_chosen - pi_rejected) - (ref_chosen - ref_rejected)
        loss = -F.logsigmoid(self.beta * logits).mean()
        chosen_rewards = self.beta * (pi_chosen - ref_chosen).detach()
        rejected_rewards = self.beta * (pi_rejected - ref_rejected).detach()
        return loss, chosen_rewards, rejected_rewards


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LoRALinear(nn.Module):
    """y = base_layer(x) + (alpha / r) * lora_B(lora_A(x)) (peft's naming)."""

    def __init__(self, din, dout, r, alpha):
        super().__init__()
        self.base_layer = nn.Linear(din, dout, bias=False)
        self.lora_A = nn.Linear(din, r, bias=False)
        self.lora_B = nn.Linear(r, dout, bias=False)
        self.scaling = alpha / r

    def forward(self, x):
        return self.base_layer(x) + self.scaling * self.lora_B(self.lora_A(x))


class RotaryEmbedding(nn.Module):
    """cos/sin tables as buffers (HF's cos_cached/sin_cached), sliced to T."""

    def __init__(self, hd, max_pos, theta=10000.0):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        t = torch.arange(max_pos, dtype=torch.float32)
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)  # max_pos x hd
        self.register_buffer("cos_cached", emb.cos())
        self.register_buffer("sin_cached", emb.sin())

    def forward(self, T):
        return self.cos_cached[:T], self.sin_cached[:T]


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotary_causal_attention(x, projections, cos, sin, heads, kv_heads, hd):
    """x [B, T, d] through the q, k, v `projections` to the attention output
    [B, T, heads*hd]: rotate-half rotary positions on q and k, each kv head
    serving heads / kv_heads consecutive query heads (HF's repeat_kv), causal
    softmax attention."""
    q_proj, k_proj, v_proj = projections
    B, T, _ = x.size()
    q = q_proj(x).view(B, T, heads, hd).transpose(1, 2)
    k = k_proj(x).view(B, T, kv_heads, hd).transpose(1, 2)
    v = v_proj(x).view(B, T, kv_heads, hd).transpose(1, 2)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    n_rep = heads // kv_heads
    if n_rep > 1:
        k = k[:, :, None, :, :].expand(B, kv_heads, n_rep, T, hd).reshape(
            B, heads, T, hd)
        v = v[:, :, None, :, :].expand(B, kv_heads, n_rep, T, hd).reshape(
            B, heads, T, hd)
    att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
    p = torch.arange(T, device=x.device)
    causal = p.unsqueeze(1) >= p.unsqueeze(0)
    att = att.masked_fill(~causal, float("-inf"))
    probs = in_f32(lambda a: F.softmax(a, dim=-1), att)
    return (probs @ v).transpose(1, 2).contiguous().view(B, T, heads * hd)


class LlamaAttention(nn.Module):
    """Grouped-query attention (4 query heads, 2 kv heads), rotary, LoRA on
    q_proj and v_proj."""

    def __init__(self, d, heads, kv_heads, r, alpha):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.q_proj = LoRALinear(d, heads * self.hd, r, alpha)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = LoRALinear(d, kv_heads * self.hd, r, alpha)
        self.o_proj = nn.Linear(heads * self.hd, d, bias=False)

    def forward(self, x, cos, sin):
        return self.o_proj(rotary_causal_attention(
            x, (self.q_proj, self.k_proj, self.v_proj), cos, sin, self.heads,
            self.kv_heads, self.hd))


class LlamaMLP(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaLayer(nn.Module):
    def __init__(self, d, heads, kv_heads, hidden, r, alpha):
        super().__init__()
        self.input_layernorm = RMSNorm(d)
        self.self_attn = LlamaAttention(d, heads, kv_heads, r, alpha)
        self.post_attention_layernorm = RMSNorm(d)
        self.mlp = LlamaMLP(d, hidden)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaCPAttention(nn.Module):
    """Multi-head causal attention with rotary positions (plain projections,
    as many kv heads as query heads)."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)

    def forward(self, x, cos, sin):
        return self.o_proj(rotary_causal_attention(
            x, (self.q_proj, self.k_proj, self.v_proj), cos, sin, self.heads,
            self.heads, self.hd))


class LlamaCPLayer(nn.Module):
    def __init__(self, d, heads, hidden):
        super().__init__()
        self.input_layernorm = RMSNorm(d)
        self.self_attn = LlamaCPAttention(d, heads)
        self.post_attention_layernorm = RMSNorm(d)
        self.mlp = LlamaMLP(d, hidden)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaLongContext(nn.Module):
    """A small Llama on long sequences, every parameter trained (the
    context-parallel case)."""

    def __init__(self, vocab=64, d=32, heads=4, layers=2, hidden=64, max_pos=256):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.rotary_emb = RotaryEmbedding(d // heads, max_pos)
        self.layers = nn.ModuleList(
            [LlamaCPLayer(d, heads, hidden) for _ in range(layers)])
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids):
        cos, sin = self.rotary_emb(input_ids.size(1))
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


class LlamaLoRA(nn.Module):
    def __init__(self, vocab=96, d=32, heads=4, kv_heads=2, layers=2, hidden=88,
                 max_pos=32, r=4, alpha=8):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.rotary_emb = RotaryEmbedding(d // heads, max_pos)
        self.layers = nn.ModuleList(
            [LlamaLayer(d, heads, kv_heads, hidden, r, alpha) for _ in range(layers)])
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)  # untied

    def forward(self, input_ids):
        cos, sin = self.rotary_emb(input_ids.size(1))
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.dense = nn.Linear(d, d)

    def forward(self, x, mask_bias):
        B, T, C = x.size()
        hd = C // self.heads
        q = self.query(x).view(B, T, self.heads, hd).transpose(1, 2)
        k = self.key(x).view(B, T, self.heads, hd).transpose(1, 2)
        v = self.value(x).view(B, T, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd) + mask_bias  # [B,1,1,T]
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.dense(y)


class BertLayer(nn.Module):
    """Post-LN: x = LN(x + attn(x)); x = LN(x + ffn(x))."""

    def __init__(self, d, heads):
        super().__init__()
        self.attention = BertSelfAttention(d, heads)
        self.attention_LayerNorm = nn.LayerNorm(d, eps=1e-12)
        self.intermediate = nn.Linear(d, 4 * d)
        self.output = nn.Linear(4 * d, d)
        self.output_LayerNorm = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, mask_bias):
        x = self.attention_LayerNorm(x + self.attention(x, mask_bias))
        return self.output_LayerNorm(x + self.output(F.gelu(self.intermediate(x))))


class BertClassifier(nn.Module):
    def __init__(self, vocab=96, d=32, heads=4, layers=2, max_pos=16, classes=5):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, d)
        self.position_embeddings = nn.Embedding(max_pos, d)
        self.embeddings_LayerNorm = nn.LayerNorm(d, eps=1e-12)
        self.layer = nn.ModuleList([BertLayer(d, heads) for _ in range(layers)])
        self.pooler = nn.Linear(d, d)
        self.classifier = nn.Linear(d, classes)

    def forward(self, input_ids, attention_mask):
        # attention_mask: float [B, T], 1 = attend, 0 = padding.
        B, T = input_ids.size()
        mask_bias = (1.0 - attention_mask)[:, None, None, :] * -10000.0
        pos = torch.arange(T, dtype=torch.long, device=input_ids.device)
        x = self.embeddings_LayerNorm(self.word_embeddings(input_ids)
                                      + self.position_embeddings(pos))
        for layer in self.layer:
            x = layer(x, mask_bias)
        pooled = torch.tanh(self.pooler(x[:, 0]))  # [CLS] pooling
        return self.classifier(pooled)


class MLPRegressor(nn.Module):
    def __init__(self, din=16, hidden=64, dout=4):
        super().__init__()
        self.fc1 = nn.Linear(din, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, dout)

    def forward(self, x):
        return self.fc3(torch.sigmoid(self.fc2(torch.tanh(self.fc1(x)))))


class CNNClassifier(nn.Module):
    """A small convolutional classifier whose graph ends in its loss."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=1, padding=1, groups=2)
        self.conv3 = nn.Conv2d(16, 16, 3, stride=2, padding=1, dilation=1)
        self.fc = nn.Linear(16 * 2 * 2, classes)

    def forward(self, x, labels):
        h = F.max_pool2d(torch.relu(self.conv1(x)), 2)       # 8x8 -> 4x4
        h = torch.tanh(self.conv2(h))
        h = F.avg_pool2d(torch.relu(self.conv3(h)), 1)      # 4x4 -> 2x2
        logits = self.fc(h.flatten(1))
        return F.cross_entropy(logits, labels, ignore_index=IGNORE_INDEX)


# --------------------------------------------------------------------------
# Parameter randomisation
# --------------------------------------------------------------------------


def fresh_init(model, seed):
    """GPT-2's initialisation: weights 0.02·N(0,1), biases 0, LayerNorm
    weights 1 (so the export merges the equal ones)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, (nn.Linear, nn.Embedding)):
                mod.weight.copy_(0.02 * torch.randn(mod.weight.shape, generator=g))
                if getattr(mod, "bias", None) is not None:
                    mod.bias.zero_()
            elif isinstance(mod, nn.LayerNorm):
                mod.weight.fill_(1.0)
                mod.bias.zero_()
    return model


def randomise(model, seed, lora_b_scale=0.2):
    """Overwrite every parameter with seeded random values (nothing 0 or 1)."""
    g = torch.Generator().manual_seed(seed)

    def rn(t):
        return torch.randn(t.shape, generator=g, dtype=t.dtype)

    handled = set()
    with torch.no_grad():
        for mod_name, mod in model.named_modules():
            if isinstance(mod, nn.Linear):
                scale = 1.0 / math.sqrt(mod.in_features)
                if mod_name.endswith("lora_B"):
                    scale *= lora_b_scale  # non-zero, smaller than the base
                mod.weight.copy_(rn(mod.weight) * scale)
                if mod.bias is not None:
                    mod.bias.copy_(0.1 * rn(mod.bias))
            elif isinstance(mod, nn.Conv2d):
                fan_in = mod.in_channels // mod.groups * mod.kernel_size[0] * mod.kernel_size[1]
                mod.weight.copy_(rn(mod.weight) / math.sqrt(fan_in))
                if mod.bias is not None:
                    mod.bias.copy_(0.1 * rn(mod.bias))
            elif isinstance(mod, nn.LayerNorm):
                mod.weight.copy_(1.0 + 0.2 * rn(mod.weight))
                mod.bias.copy_(0.1 * rn(mod.bias))
            elif isinstance(mod, RMSNorm):
                mod.weight.copy_(1.0 + 0.2 * rn(mod.weight))
            elif isinstance(mod, nn.Embedding):
                mod.weight.copy_(0.5 * rn(mod.weight))
            elif isinstance(mod, (MoE, SwitchMoE)):
                # [experts, in, out]: each expert a Linear of fan-in `in`.
                for w in (mod.w_in, mod.w_out):
                    w.copy_(rn(w) / math.sqrt(w.shape[1]))
            else:
                continue
            handled.update(id(p) for p in mod.parameters(recurse=False))
    for name, p in model.named_parameters():
        if id(p) not in handled:
            raise RuntimeError(f"parameter {name} was not randomised")
        if bool((p == 0).any()) or bool((p == 1).any()):
            raise RuntimeError(f"parameter {name} has an element exactly 0 or 1")
    return model


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------



class Llama23(nn.Module):
    """A plain Llama (every weight trains) whose ONNX graph is written by hand
    with opset 23's RMSNormalization, RotaryEmbedding and Attention
    (export_llama23): torch 1.13 cannot export those ops. The rotary tables
    are half-width ([max_pos, hd/2], the op's cache layout), read at the
    position_ids input."""

    def __init__(self, vocab=64, d=32, heads=4, kv_heads=2, layers=2, hidden=48,
                 max_pos=24, theta=10000.0):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.embed_tokens = nn.Embedding(vocab, d)
        inv_freq = 1.0 / (theta ** (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd))
        angles = torch.outer(torch.arange(max_pos, dtype=torch.float32), inv_freq)
        self.register_buffer("rotary_cos", angles.cos())
        self.register_buffer("rotary_sin", angles.sin())
        self.layers = nn.ModuleList()
        for _ in range(layers):
            layer = nn.Module()
            layer.input_layernorm = RMSNorm(d)
            layer.q_proj = nn.Linear(d, heads * self.hd, bias=False)
            layer.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
            layer.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
            layer.o_proj = nn.Linear(heads * self.hd, d, bias=False)
            layer.post_attention_layernorm = RMSNorm(d)
            layer.mlp = LlamaMLP(d, hidden)
            self.layers.append(layer)
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def attention(self, layer, x, cos, sin):
        return layer.o_proj(rotary_causal_attention(
            x, (layer.q_proj, layer.k_proj, layer.v_proj), cos, sin,
            self.heads, self.kv_heads, self.hd))

    def forward(self, input_ids, position_ids):
        # [B, 1, T, hd]: the half tables read at the positions, repeated for
        # the rotate-half form.
        cos = torch.cat([self.rotary_cos[position_ids]] * 2, -1).unsqueeze(1)
        sin = torch.cat([self.rotary_sin[position_ids]] * 2, -1).unsqueeze(1)
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = x + self.attention(layer, layer.input_layernorm(x), cos, sin)
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        return self.lm_head(self.norm(x))


def export_llama23(model, inputs, path):
    """Llama23's graph at opset 23, node by node; initializers named as
    torch's parameters and buffers."""
    from onnx import TensorProto, helper
    B, T = inputs[0].shape
    nodes, inits = [], []
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        inits.append(numpy_helper.from_array(t.detach().numpy(), name))

    def node(op, ins, name, **attrs):
        nodes.append(helper.make_node(op, ins, [name], name=name, **attrs))
        return name

    def linear(x, prefix):
        w = node("Transpose", [prefix + ".weight"], f"/{prefix}/Transpose", perm=[1, 0])
        return node("MatMul", [x, w], f"/{prefix}/MatMul")

    def rms(x, prefix):
        return node("RMSNormalization", [x, prefix + ".weight"],
                    f"/{prefix}/RMSNormalization", epsilon=model.norm.eps)

    x = node("Gather", ["embed_tokens.weight", "input_ids"], "/embed_tokens/Gather")
    for i, _ in enumerate(model.layers):
        L = f"layers.{i}"
        h = rms(x, f"{L}.input_layernorm")
        q, k, v = (linear(h, f"{L}.{p}_proj") for p in "qkv")
        q = node("RotaryEmbedding", [q, "rotary_cos", "rotary_sin", "position_ids"],
                 f"/{L}/q_rotary/RotaryEmbedding", num_heads=model.heads)
        k = node("RotaryEmbedding", [k, "rotary_cos", "rotary_sin", "position_ids"],
                 f"/{L}/k_rotary/RotaryEmbedding", num_heads=model.kv_heads)
        a = node("Attention", [q, k, v], f"/{L}/self_attn/Attention", is_causal=1,
                 q_num_heads=model.heads, kv_num_heads=model.kv_heads)
        x = node("Add", [x, linear(a, f"{L}.o_proj")], f"/{L}/attn_residual/Add")
        h = rms(x, f"{L}.post_attention_layernorm")
        g = linear(h, f"{L}.mlp.gate_proj")
        silu = node("Mul", [g, node("Sigmoid", [g], f"/{L}/mlp/Sigmoid")], f"/{L}/mlp/silu/Mul")
        m = node("Mul", [silu, linear(h, f"{L}.mlp.up_proj")], f"/{L}/mlp/Mul")
        x = node("Add", [x, linear(m, f"{L}.mlp.down_proj")], f"/{L}/mlp_residual/Add")
    logits = linear(rms(x, "norm"), "lm_head")
    nodes.append(helper.make_node("Identity", [logits], ["logits"], name="/logits/Identity"))
    vocab = model.lm_head.weight.shape[0]
    graph = helper.make_graph(
        nodes, "llama_opset23",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [B, T]),
         helper.make_tensor_value_info("position_ids", TensorProto.INT64, [B, T])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [B, T, vocab])],
        initializer=inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    proto.ir_version = 10
    onnx.save_model(proto, path)


def with_positions(data):
    """An LM's batches with a second input, position_ids = arange(T) per row."""
    batches, probe = data
    def add(inputs):
        ids = inputs[0]
        return list(inputs) + [torch.arange(ids.shape[1]).expand_as(ids).contiguous()]
    return [(add(i), labels) for i, labels in batches], add(probe)


def lm_tokens(g, perm, batch, seq, noise=0.15):
    """Token streams with a learnable bigram structure: the next token is
    perm[token], except with probability `noise` a random token.  Returns
    (input_ids [B,T], next tokens [B,T])."""
    vocab = perm.numel()
    toks = torch.empty(batch, seq + 1, dtype=torch.int64)
    toks[:, 0] = torch.randint(0, vocab, (batch,), generator=g)
    for t in range(seq):
        nxt = perm[toks[:, t]]
        rnd = torch.randint(0, vocab, (batch,), generator=g)
        use_rnd = torch.rand(batch, generator=g) < noise
        toks[:, t + 1] = torch.where(use_rnd, rnd, nxt)
    return toks[:, :-1].contiguous(), toks[:, 1:].contiguous()


def make_lm_data(vocab, batch, seq, steps, seed, ignore):
    """Batches for a causal LM.  With `ignore`, the last 3 labels of row 0 and
    3 random other positions of each batch are IGNORE_INDEX."""
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(vocab, generator=g)
    batches = []
    for _ in range(steps + 1):  # the last one is the probe
        ids, labels = lm_tokens(g, perm, batch, seq)
        if ignore:
            labels[0, seq - 3:] = IGNORE_INDEX
            flat = torch.randperm(batch * seq, generator=g)
            n = 0
            for f in flat.tolist():
                b, t = divmod(f, seq)
                if b == 0 and t >= seq - 3:
                    continue
                labels[b, t] = IGNORE_INDEX
                n += 1
                if n == 3:
                    break
        batches.append(([ids], labels))
    return batches[:-1], batches[-1][0]


def make_lm_data_in_graph(vocab, batch, seq, steps, seed):
    """Batches for a causal LM that computes its own loss: the labels are
    its second input."""
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(vocab, generator=g)
    batches = []
    for _ in range(steps + 1):  # the last one is the probe
        ids, labels = lm_tokens(g, perm, batch, seq)
        batches.append(([ids, labels], None))
    return batches[:-1], batches[-1][0]


def make_dpo_data(vocab, pairs, seq, steps, seed, pad=0):
    """Preference pairs for DPO: a prompt of 3 to 5 tokens, then a chosen
    response that continues the prompt's bigram stream and a rejected one of
    random tokens, each of 3 to seq - prompt tokens, padded on the right
    with `pad`. The labels are the input ids with the prompt and the padding
    IGNORE_INDEX (TRL's layout); inputs are chosen ids, chosen labels,
    rejected ids, rejected labels, each [pairs, seq]."""
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(vocab, generator=g)

    def rint(lo, hi):  # lo..hi inclusive
        return int(torch.randint(lo, hi + 1, (1,), generator=g))

    batches = []
    for _ in range(steps + 1):  # the last one is the probe
        rows = {k: torch.full((pairs, seq), v, dtype=torch.int64)
                for k, v in (("ci", pad), ("cl", IGNORE_INDEX),
                             ("ri", pad), ("rl", IGNORE_INDEX))}
        for b in range(pairs):
            p = rint(3, 5)
            prompt, _ = lm_tokens(g, perm, 1, p)
            chosen_len, rejected_len = rint(3, seq - p), rint(3, seq - p)
            # The chosen response continues the prompt's stream (noise 0.1).
            cont = [int(perm[prompt[0, -1]])]
            for _t in range(chosen_len - 1):
                nxt = int(perm[cont[-1]])
                if float(torch.rand(1, generator=g)) < 0.1:
                    nxt = rint(0, vocab - 1)
                cont.append(nxt)
            chosen = torch.tensor(cont, dtype=torch.int64)
            rejected = torch.randint(0, vocab, (rejected_len,), generator=g)
            for ids, lab, resp in (("ci", "cl", chosen), ("ri", "rl", rejected)):
                rows[ids][b, :p] = prompt[0]
                rows[ids][b, p:p + resp.numel()] = resp
                rows[lab][b, p:p + resp.numel()] = resp
        batches.append(([rows["ci"], rows["cl"], rows["ri"], rows["rl"]], None))
    return batches[:-1], batches[-1][0]


def make_bert_data(vocab, batch, seq, classes, steps, seed):
    """input_ids (position 0 is [CLS]=1, padding is 0), float attention masks
    with different padding per row, class = input_ids[:, 1] % classes."""
    g = torch.Generator().manual_seed(seed)
    pads = [3, 5, 0, 1]
    batches = []
    for _ in range(steps + 1):
        ids = torch.randint(2, vocab, (batch, seq), generator=g)
        ids[:, 0] = 1
        mask = torch.ones(batch, seq, dtype=torch.float32)
        for b in range(batch):
            p = pads[b % len(pads)]
            if p:
                mask[b, seq - p:] = 0.0
                ids[b, seq - p:] = 0
        labels = ids[:, 1] % classes
        batches.append(([ids, mask], labels))
    return batches[:-1], batches[-1][0]


def make_regression_data(din, dout, batch, steps, seed):
    """x ~ N(0,1); target = 0.8 * tanh(x @ W) + 0.1 with a fixed random W."""
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(din, dout, generator=g) / math.sqrt(din) * 1.5
    batches = []
    for _ in range(steps + 1):
        x = torch.randn(batch, din, generator=g)
        y = 0.8 * torch.tanh(x @ W) + 0.1
        batches.append(([x], y))
    return batches[:-1], batches[-1][0]


def make_image_data(batch, classes, steps, seed):
    """3x8x8 images whose class is the brightest of `classes` fixed random
    patterns they mix; one label per batch is IGNORE_INDEX."""
    g = torch.Generator().manual_seed(seed)
    patterns = torch.randn(classes, 3, 8, 8, generator=g)
    batches = []
    for k in range(steps + 1):
        w = torch.rand(batch, classes, generator=g)
        x = torch.einsum("bc,chwk->bhwk", w, patterns) + 0.3 * torch.randn(
            batch, 3, 8, 8, generator=g)
        labels = w.argmax(1)
        labels[k % batch] = IGNORE_INDEX
        # The labels are a graph input: the model computes its own loss.
        batches.append(([x, labels], None))
    return batches[:-1], batches[-1][0]


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

GPT_NO_DECAY = ["*.bias", "*ln_*", "wpe.weight"]
GPT_FROZEN = ["h.*.attn.bias"]  # the causal-mask buffer (deduplicated by the export)


# What the two DPO cases share: the model, its inputs and outputs, the loss
# in the graph, AdamW, and the frozen reference.
DPO_SETUP = dict(
    ctor=lambda: DPO(beta=0.1, vocab=64, d=32, heads=4, layers=2, block_size=16),
    inputs=["chosen_input_ids", "chosen_labels", "rejected_input_ids",
            "rejected_labels"],
    output="loss", outputs=["loss", "chosen_rewards", "rejected_rewards"],
    loss={"kind": "model"},
    optimizer={"kind": "adamw", "lr": 5e-3, "betas": [0.9, 0.95], "eps": 1e-8,
               "weight_decay": 0.1},
    no_decay=["*.bias", "*ln_*", "policy.wpe.weight"],
    frozen=["policy.h.*.attn.bias", "reference.*"],
    clip_grad_norm=None,
)

# The GPT trained in f16 under a dynamic loss scale that overflows, backs
# off and grows within 8 steps: gpt_f16 and its data-parallel variants.
F16_GPT = dict(
    precision="f16",
    loss_scale={"initial": 2.0 ** 19, "growth_interval": 2, "hysteresis": 2},
    tolerance={"loss_rtol": 3e-4, "probe_atol": 0.03, "probe_rtol": 0},
    ctor=lambda: GPT(vocab=300, d=32, heads=4, layers=2, block_size=24),
    inputs=["input_ids"], output="logits",
    loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
    optimizer={"kind": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8,
               "weight_decay": 0.1},
    no_decay=GPT_NO_DECAY, frozen=GPT_FROZEN, clip_grad_norm=0.5, steps=8,
)

# The Llama on 256-token sequences that context parallelism trains:
# llama_long_context and its bf16 variant.
LONG_CONTEXT_LLAMA = dict(
    ctor=LlamaLongContext,
    inputs=["input_ids"], output="logits",
    loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
    optimizer={"kind": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8,
               "weight_decay": 0.1},
    no_decay=["*norm.weight"], frozen=["rotary_emb.*"],
    clip_grad_norm=None, steps=3,
)

CASES = [
    dict(
        name="gpt_adamw",
        what="GPT-2-style pre-LN decoder, tied head, mask buffer, AdamW, "
             "clipping, ignored labels",
        seed=11,
        ctor=lambda: GPT(vocab=300, d=32, heads=4, layers=2, block_size=24),
        inputs=["input_ids"], output="logits",
        data=lambda: make_lm_data(300, 4, 16, 4, 211, ignore=True),
        loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
        optimizer={"kind": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8,
                   "weight_decay": 0.1},
        no_decay=GPT_NO_DECAY, frozen=GPT_FROZEN, clip_grad_norm=0.5, steps=4,
        notes="""\
nanoGPT layout: `wte` [300, 32], `wpe` [24, 32] (block size 24, sequence 16),
`h.{0,1}`: `ln_1` → `attn.c_attn` Linear(32, 96) split into q, k, v (4 heads
of 8) → causal mask from the buffer `attn.bias` [1, 1, 24, 24] sliced to
16×16, `masked_fill(== 0, -inf)` → softmax → `attn.c_proj` → residual →
`ln_2` → `mlp.c_fc` Linear(32, 128) → GELU (erf) → `mlp.c_proj` → residual;
`ln_f`; `lm_head` tied to `wte` (one initializer `wte.weight`, read by the
embedding `Gather` and by `/lm_head/Transpose` → `MatMul`: its gradient is
the sum of both uses). Labels are the next tokens of a stream with a fixed
random bigram structure; in every step the last 3 labels of row 0 and 3
other random positions are -100 (ignored). Rows 16–23 of `wpe.weight` are
never read (zero gradient) and `wpe.weight` is in `no_decay`, so they stay
unchanged. The pre-clip norm is above 0.5 in every step (clipping scales
every step).""",
    ),
    dict(
        name="gpt_accumulate",
        what="the GPT of gpt_adamw with 4 microbatches of 2 rows per step "
             "(gradient accumulation), AdamW, clipping, ignored labels",
        seed=13,
        ctor=lambda: GPT(vocab=300, d=32, heads=4, layers=2, block_size=24),
        inputs=["input_ids"], output="logits",
        data=lambda: make_lm_data(300, 2, 16, 3 * 4, 213, ignore=True),
        loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
        optimizer={"kind": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8,
                   "weight_decay": 0.1},
        no_decay=GPT_NO_DECAY, frozen=GPT_FROZEN, clip_grad_norm=0.5, steps=3,
        accumulate=4,
        notes="""\
The model of `gpt_adamw` (other random weights) trained with
`gradient_accumulation_steps: 4`: step K reads `step_K/micro_{0..3}/`, each
microbatch 2 x 16 tokens with its own ignored labels (so the microbatches'
token counts differ). torch runs `(loss_j / 4).backward()` for each
microbatch, then clips the summed gradients and steps once; the step's loss
is the mean of the 4 microbatch losses.""",
    ),
    dict(
        name="llama_lora",
        what="Llama-style decoder (RMSNorm, SwiGLU, rotary buffers, GQA 4/2), "
             "LoRA r=4 alpha=8 on q_proj and v_proj, only LoRA trains",
        seed=12,
        ctor=LlamaLoRA,
        inputs=["input_ids"], output="logits",
        data=lambda: make_lm_data(96, 4, 16, 3, 212, ignore=False),
        loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
        optimizer={"kind": "adamw", "lr": 1e-2, "betas": [0.9, 0.999], "eps": 1e-8,
                   "weight_decay": 0.0},
        no_decay=[],
        frozen=["embed_tokens.weight", "rotary_emb.*", "*norm.weight",
                "*.base_layer.weight", "*_proj.weight", "lm_head.weight"],
        clip_grad_norm=None, steps=3,
        notes="""\
`embed_tokens` [96, 32]; `rotary_emb.cos_cached` / `sin_cached` [32, 8]
buffers (θ = 10000, rotate-half form) sliced to 16 rows once and read by
every layer; `layers.{0,1}`: `input_layernorm` (RMSNorm
`x * rsqrt(mean(x²) + 1e-6) * w`, exported as Pow, ReduceMean, Add, Sqrt,
Div(1, ·), Mul, Mul) → `self_attn` with `q_proj` and `v_proj` as LoRA
modules (`base_layer` [32, 32] / [16, 32], `lora_A` [4, 32], `lora_B`
[32, 4] / [16, 4]; output `base(x) + 2.0 * B(A(x))`, the scale a Mul by a
Constant), plain `k_proj` [16, 32], 4 query heads and 2 kv heads of 8
(kv heads repeated as HF's `repeat_kv`: Unsqueeze → Expand → Reshape),
causal mask from `arange` comparisons, `o_proj` → residual →
`post_attention_layernorm` → `mlp.down_proj(silu(gate_proj(x)) * up_proj(x))`
(hidden 88; SiLU exported as Sigmoid, Mul) → residual; `norm`; untied
`lm_head` [96, 32]. Only the 8 LoRA matrices train; every other
initializer (weights, norms, embeddings, rotary buffers) is frozen, by the
explicit globs in `frozen`. No ignored labels.""",
    ),
    dict(
        LONG_CONTEXT_LLAMA,
        name="llama_long_context",
        what="Llama-style decoder on 256-token sequences (RMSNorm, SwiGLU, "
             "rotary buffers, causal mask from arange), every weight trains: "
             "the context-parallel case",
        seed=17,
        data=lambda: make_lm_data(64, 2, 256, 3, 217, ignore=False),
        notes="""\
`embed_tokens` [64, 32]; `rotary_emb.cos_cached` / `sin_cached` [256, 8]
buffers (θ = 10000, rotate-half form), sliced to the sequence (all 256
rows) and read by every layer; `layers.{0,1}`: RMSNorm → `self_attn`
(`q_proj`, `k_proj`, `v_proj`, `o_proj` [32, 32], 4 heads of 8, no
bias), rotary on q and k, causal mask from `arange` comparisons
(`masked_fill(-inf)`), softmax → `o_proj` → residual → RMSNorm →
`mlp.down_proj(silu(gate_proj(x)) * up_proj(x))` (hidden 64) → residual;
`norm`; untied `lm_head` [64, 32]. Batches of 2 x 256 tokens, no ignored
labels. Every weight trains; the rotary buffers are frozen. Trained with
context parallelism (`--plan cp`) in `test/lit/train/context-parallel.test`.""",
    ),
    dict(
        name="bert_classifier",
        what="BERT-style post-LN encoder, two graph inputs (ids, float mask), "
             "[CLS] pooling with tanh, 5-way classifier, Adam with L2 decay",
        seed=13,
        ctor=BertClassifier,
        inputs=["input_ids", "attention_mask"], output="logits",
        data=lambda: make_bert_data(96, 4, 12, 5, 3, 213),
        loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
        optimizer={"kind": "adam", "lr": 2e-3, "betas": [0.9, 0.999], "eps": 1e-8,
                   "weight_decay": 0.01},
        no_decay=["*.bias", "*LayerNorm*"], frozen=[], clip_grad_norm=None, steps=3,
        notes="""\
`word_embeddings` [96, 32] + `position_embeddings` [16, 32] (rows 0–11 read)
→ `embeddings_LayerNorm`; `layer.{0,1}` (post-LN, LayerNorm eps 1e-12):
`attention.query/key/value/dense` (separate Linears with biases, 4 heads of
8), additive mask `(1 - attention_mask)[:, None, None, :] * -10000` →
residual → `attention_LayerNorm` → `intermediate` Linear(32, 128) → GELU →
`output` Linear(128, 32) → residual → `output_LayerNorm`; [CLS] pooling
`x[:, 0]` (a Gather on axis 1) → `pooler` (Gemm) → Tanh → `classifier`
(Gemm) → `logits` [4, 5]. Inputs `input_ids` int64 [4, 12] (position 0 is
1, padding is 0) and `attention_mask` float32 [4, 12] (rows pad the last 3,
5, 0 and 1 positions). Label = `input_ids[:, 1] % 5`. Adam's weight decay
is L2 added to the gradient, so decayed parameters move even where their
gradient is zero: rows 12–15 of `position_embeddings.weight` are never read
but change every step.""",
    ),
    dict(
        name="mlp_regressor",
        what="3-layer MLP (tanh, sigmoid) on 2-D input (Gemm), MSE, SGD momentum",
        seed=14,
        ctor=MLPRegressor,
        inputs=["x"], output="y",
        data=lambda: make_regression_data(16, 4, 8, 5, 214),
        loss={"kind": "mse"},
        optimizer={"kind": "sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 1e-4},
        no_decay=[], frozen=[], clip_grad_norm=None, steps=5,
        notes="""\
`fc1` Linear(16, 64) → Tanh → `fc2` Linear(64, 64) → Sigmoid → `fc3`
Linear(64, 4). The input is 2-D, so every Linear is one `Gemm` (transB=1)
reading the torch weight [out, in] directly. Targets are
`0.8 * tanh(x @ W) + 0.1` for a fixed random W, float32 [8, 4]. Weight
decay 1e-4 applies to every parameter, biases included.""",
    ),
    dict(
        name="cnn_loss_in_graph",
        what="CNN (conv, grouped and strided conv, max/avg pool) whose graph "
             "ends in its own cross-entropy (SoftmaxCrossEntropyLoss), SGD "
             "Nesterov momentum, warm-up + cosine learning rate",
        seed=15,
        ctor=CNNClassifier,
        inputs=["x", "labels"], output="loss",
        data=lambda: make_image_data(4, 10, 4, 215),
        loss={"kind": "model"},
        optimizer={"kind": "sgd", "lr": 0.05, "momentum": 0.9, "nesterov": True,
                   "weight_decay": 1e-3},
        lr_schedule={"kind": "cosine", "warmup_steps": 2, "total_steps": 4,
                     "min_lr": 0.005},
        no_decay=["*.bias"], frozen=[], clip_grad_norm=None, steps=4,
        notes="""\
`conv1` Conv2d(3, 8, 3, pad 1) → ReLU → MaxPool 2 → `conv2` Conv2d(8, 16, 3,
pad 1, groups 2) → Tanh → `conv3` Conv2d(16, 16, 3, stride 2, pad 1) → ReLU
→ AvgPool 1 → flatten → `fc` Linear(64, 10) → `F.cross_entropy(logits,
labels, ignore_index=-100)`, exported as `SoftmaxCrossEntropyLoss`: the
graph's output `loss` is the scalar loss and `labels` int64 [4] is its
second input (`step_K/input_1.pb`; there is no `labels.pb`), so the config
says `loss: {kind: model}`. One label per batch is ignored. Images [4, 3, 8,
8] mix 10 fixed random patterns; the label is the strongest. The probe's
output is the trained model's loss on the probe batch. Learning rate: linear
warm-up over 2 steps (0.025, 0.05), then cosine from 0.05 to 0.005 over the
remaining 2 steps (torch `LambdaLR`).""",
    ),
    dict(
        name="gpt4_pipeline",
        what="GPT-2-style decoder as gpt_adamw with 4 blocks, batch 8 (8 "
             "microbatches over 4 stages), vocab 96, clip 1.0",
        # Seeds picked so the pre-clip norm falls below 1.0 in the last step:
        # steps 0 and 1 clip, step 2 does not (clip_coef clamped to 1).
        seed=56,
        ctor=lambda: GPT(vocab=96, d=32, heads=4, layers=4, block_size=24),
        inputs=["input_ids"], output="logits",
        data=lambda: make_lm_data(96, 8, 16, 3, 256, ignore=True),
        loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
        optimizer={"kind": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8,
                   "weight_decay": 0.1},
        no_decay=GPT_NO_DECAY, frozen=GPT_FROZEN, clip_grad_norm=1.0, steps=3,
        notes="""\
The `gpt_adamw` model with 4 blocks (`h.0` … `h.3`), vocabulary 96,
batch 8 × 16 tokens, so it splits into 8 microbatches of 1 over 4 pipeline
stages. Same ignored-label pattern (last 3 of row 0, 3 random others per
step). The four identical mask buffers export as one initializer
`h.0.attn.bias` plus three Identity nodes. Clipping scales steps 0 and 1;
in step 2 the norm is below 1.0 and the clamped coefficient is 1.""",
    ),
    dict(
        name="gpt_fresh",
        what="the GPT of gpt_adamw freshly initialised (zero biases, unit "
             "LayerNorm weights), so the export merges equal initializers",
        seed=17, fresh=True,
        ctor=lambda: GPT(vocab=300, d=32, heads=4, layers=2, block_size=24),
        inputs=["input_ids"], output="logits",
        data=lambda: make_lm_data(300, 4, 16, 3, 217, ignore=False),
        loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
        optimizer={"kind": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8,
                   "weight_decay": 0.1},
        no_decay=GPT_NO_DECAY, frozen=GPT_FROZEN, clip_grad_norm=None, steps=3,
        notes="""\
The model of `gpt_adamw` initialised as GPT-2 does (`fresh_init`: Linear
and embedding weights `0.02·N(0,1)`, every bias 0, LayerNorm weights 1),
exported the way docs/training.md says. torch.onnx.export keeps one
initializer of each group of equal ones: the 8 other zero biases of 32
elements become `h.0.ln_1.bias`, the 4 other LayerNorm weights
`h.0.ln_1.weight`, `h.1.attn.c_attn.bias` and `h.1.mlp.c_fc.bias` their
block-0 twins (and the mask buffer `h.1.attn.bias` `h.0.attn.bias`), each
read through an Identity node whose output carries the parameter's name
(15 Identity nodes, 15 initializers for 29 parameters and buffers). They are
distinct parameters with equal initial values: a trainer that ties them
trains another model (no clipping, so the gradients are compared
unscaled).""",
    ),
    dict(
        name="gpt_bf16",
        what="the GPT of gpt_adamw trained with `precision: bf16` (bf16 "
             "compute, f32 masters, gradients and optimizer)",
        seed=19, precision="bf16",
        tolerance={"loss_rtol": 1.5e-3, "probe_atol": 0.15, "probe_rtol": 0},
        ctor=lambda: GPT(vocab=300, d=32, heads=4, layers=2, block_size=24),
        inputs=["input_ids"], output="logits",
        data=lambda: make_lm_data(300, 4, 16, 4, 219, ignore=True),
        loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
        optimizer={"kind": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8,
                   "weight_decay": 0.1},
        no_decay=GPT_NO_DECAY, frozen=GPT_FROZEN, clip_grad_norm=0.5, steps=4,
        notes="""\
The model of `gpt_adamw` (other random weights and batches), trained by
torch as the policy says: every step, a bf16 copy of the f32 master model
(LayerNorms keep f32 parameters and compute in f32, softmax computes in f32)
runs forward and backward; the loss is the cross-entropy of the logits cast
to f32; the copy's gradients are copied to f32, clipped, and AdamW updates
the f32 masters. The probe output is the f32 masters' forward in f32.
`losses_f32` are the same model's losses trained in f32. bf16 rounds to 8
significant bits, and a trainer that rounds at the same places but sums in
another order, or writes a gradient as several bf16 ops where torch has one
fused kernel (GELU's), drifts from torch as far as torch's bf16 run drifts
from its f32 run (below); the case's `tolerance` allows that: losses to
1.5e-3 relative, probe outputs to 0.15.""",
    ),
    dict(
        LONG_CONTEXT_LLAMA,
        name="llama_long_context_bf16",
        what="the Llama of llama_long_context trained with `precision: bf16`: "
             "the context-parallel case in mixed precision",
        seed=53, precision="bf16",
        tolerance={"loss_rtol": 2e-3, "probe_atol": 0.15, "probe_rtol": 0},
        data=lambda: make_lm_data(64, 2, 256, 3, 253, ignore=False),
        notes="""\
The model of `llama_long_context` (other random weights and batches),
trained by torch as `gpt_bf16` is: every step a bf16 copy of the f32
masters runs forward and backward, with the RMSNorms keeping f32 weights
and computing in f32 and softmax computing in f32 (the policy's default
`keep_f32`: `*norm*` layers and softmax); the rotary tables are bf16 in the
copy (the policy slices them in f32 and casts the slice, the same values);
the loss is the cross-entropy of the logits cast to f32; gradients are
copied to f32 and AdamW updates the f32 masters. Trained with each
context-parallel attention variant (`allgather`, `ulysses`, `ring`,
balanced `ring`) in `test/lit/train/context-parallel.test`.""",
    ),
    dict(
        name="gpt_bf16_model",
        what="the GPT exported in bf16 (every parameter, activation and "
             "output bf16): trained from f32 masters without a precision key",
        seed=37, precision="bf16", model_dtype="bf16",
        tolerance={"loss_rtol": 1.5e-3, "probe_atol": 0.3, "probe_rtol": 0},
        ctor=lambda: GPT(vocab=300, d=32, heads=4, layers=2, block_size=24),
        inputs=["input_ids"], output="logits",
        data=lambda: make_lm_data(300, 4, 16, 4, 237, ignore=True),
        loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
        optimizer={"kind": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8,
                   "weight_decay": 0.1},
        no_decay=GPT_NO_DECAY, frozen=GPT_FROZEN, clip_grad_norm=0.5, steps=4,
        notes="""\
A model as `model.to(torch.bfloat16)` exports it: the GPT's random
parameters are rounded to bf16, exported, and the graph rewritten to bf16
(initializers, input/output and value types, constants, Cast targets), so
`model.onnx` holds no f32 tensor. `train.json` has no `precision`: a trainer
of a bf16 model is expected to keep f32 masters initialised from the bf16
values and compute in bf16, which torch does here exactly as for
`gpt_bf16` (a bf16 copy of the f32 masters runs forward and backward, with
LayerNorms and softmax in f32; clipping and AdamW on the f32 masters). The
probe output is the f32 masters' forward in f32 (`--train-test` runs a
16-bit model's forward in f32 from the trained masters), so it checks the
training, not bf16 inference's rounding. With this seed torch's own f32 and
bf16 trainings end 0.196 apart on the probe (0.099 for `gpt_bf16`), so the
probe tolerance is 0.3; the untrained model is 4.4 away.""",
    ),
    dict(
        name="gpt_bf16_accumulate",
        what="the GPT of gpt_accumulate in bf16: 4 microbatches per step, "
             "their f32 gradients summed in f32",
        seed=29, precision="bf16", accumulate=4,
        tolerance={"loss_rtol": 1.5e-3, "probe_atol": 0.1, "probe_rtol": 0},
        ctor=lambda: GPT(vocab=300, d=32, heads=4, layers=2, block_size=24),
        inputs=["input_ids"], output="logits",
        data=lambda: make_lm_data(300, 2, 16, 3 * 4, 229, ignore=True),
        loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
        optimizer={"kind": "adamw", "lr": 1e-3, "betas": [0.9, 0.95], "eps": 1e-8,
                   "weight_decay": 0.1},
        no_decay=GPT_NO_DECAY, frozen=GPT_FROZEN, clip_grad_norm=0.5, steps=3,
        notes="""\
`gpt_accumulate`'s layout (4 microbatches of 2 rows per step), at lr 1e-3,
trained as `gpt_bf16` is: each microbatch's bf16 gradients are cast to f32 and added
to the f32 masters' gradients (Megatron's `main_grad`), then clipping and
AdamW run once per step in f32.""",
    ),
    dict(
        name="gpt_bf16_small_lr",
        what="the GPT in bf16 with a learning rate below half a bf16 ulp of "
             "the weights: only f32 masters move",
        seed=23, precision="bf16", small_lr=True,
        tolerance={"loss_rtol": 1e-3, "probe_atol": 4e-3, "probe_rtol": 0},
        ctor=lambda: GPT(vocab=300, d=32, heads=4, layers=2, block_size=24),
        inputs=["input_ids"], output="logits",
        data=lambda: make_lm_data(300, 4, 16, 4, 223, ignore=False),
        loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
        optimizer={"kind": "adamw", "lr": 2e-5, "betas": [0.9, 0.95], "eps": 1e-8,
                   "weight_decay": 0.0},
        no_decay=GPT_NO_DECAY, frozen=GPT_FROZEN, clip_grad_norm=None, steps=4,
        notes="""\
The GPT of `gpt_bf16` with AdamW at lr 2e-5 and no weight decay: Adam moves
each element by about lr per step, less than half a bf16 ulp of almost
every weight (the script counts them, below), so weights kept only in bf16
would not change at all; the f32 masters do, and the probe output (the f32
masters' forward) moves by more than the case's probe tolerance.""",
    ),
    dict(
        name="gpt_bf16_states",
        what="the GPT with AdamW's moments stored in bf16 (`optimizer_state: "
             "bf16`), computing in f32",
        seed=41, optimizer_state="bf16",
        ctor=lambda: GPT(vocab=300, d=32, heads=4, layers=2, block_size=24),
        inputs=["input_ids"], output="logits",
        data=lambda: make_lm_data(300, 4, 16, 12, 241, ignore=True),
        loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
        optimizer={"kind": "adamw", "lr": 1e-2, "betas": [0.9, 0.999], "eps": 1e-6,
                   "weight_decay": 0.1},
        no_decay=GPT_NO_DECAY, frozen=GPT_FROZEN, clip_grad_norm=0.5, steps=12,
        notes="""\
The GPT of `gpt_bf16` trained in f32 with `precision: {compute: f32,
optimizer_state: bf16}`: torch's AdamW updates in f32 as always, and after
each `optimizer.step()` its `exp_avg` and `exp_avg_sq` are rounded to bf16
(to nearest even) and kept so, which is what a trainer storing them in bf16
and widening them for the update (load, widen, update, round, store)
computes. Compute is f32 so that the states' rounding is what tells trainers
apart. Adam's eps is 1e-6, not 1e-8: its first steps move every element by
about lr whatever the sign of its gradient, and with eps 1e-8 the elements
whose gradient is only rounding noise (a few 1e-10) decide the probe as
much as the states' rounding does; eps 1e-6 leaves them still. The facts
below give how far a trainer keeping f32 states ends from this one.""",
    ),
    dict(
        name="gpt_bf16_pure",
        what="the GPT with bf16 parameters and no f32 masters (`master: "
             "bf16`): the update computes in f32 and is rounded to bf16",
        seed=43, precision="bf16", master="bf16",
        tolerance={"loss_rtol": 1.5e-3, "probe_atol": 0.02, "probe_rtol": 0},
        ctor=lambda: GPT(vocab=300, d=32, heads=4, layers=2, block_size=24),
        inputs=["input_ids"], output="logits",
        data=lambda: make_lm_data(300, 4, 16, 4, 243, ignore=True),
        loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
        optimizer={"kind": "adamw", "lr": 1e-4, "betas": [0.9, 0.95], "eps": 1e-8,
                   "weight_decay": 0.1},
        no_decay=GPT_NO_DECAY, frozen=GPT_FROZEN, clip_grad_norm=0.5, steps=4,
        notes="""\
The GPT of `gpt_bf16` trained with `precision: {compute: bf16, master:
bf16}`: the parameters are bf16 (rounded from the exported f32 values), and
there is no f32 copy. torch trains it as `gpt_bf16` (a bf16 working copy
runs forward and backward, the gradients are copied to f32, clipped, and
AdamW updates in f32 with f32 moments) with its f32 masters rounded to bf16
before the first step and after every update, so that they only ever hold
bf16 values: what a trainer whose parameters are bf16 and whose update
computes in f32 (load, widen, update, round, store) does. The probe output
is the forward in f32 of those bf16 values. The learning rate, 1e-4, is
about one bf16 ulp of a typical weight (0.02): each update is rounded by up
to half its size, so a trainer keeping f32 masters ends clearly elsewhere
(the facts below), while the small steps keep bf16 compute's noise in the
probe small: its tolerance is 0.02.""",
    ),
    dict(
        name="gpt_bf16_pure_accumulate",
        what="`gpt_bf16_pure` (bf16 parameters, no f32 masters) with 4 "
             "microbatches per step, their gradients summed in f32",
        seed=47, precision="bf16", master="bf16", accumulate=4,
        tolerance={"loss_rtol": 1.5e-3, "probe_atol": 0.02, "probe_rtol": 0},
        ctor=lambda: GPT(vocab=300, d=32, heads=4, layers=2, block_size=24),
        inputs=["input_ids"], output="logits",
        data=lambda: make_lm_data(300, 2, 16, 3 * 4, 247, ignore=True),
        loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
        optimizer={"kind": "adamw", "lr": 1e-4, "betas": [0.9, 0.95], "eps": 1e-8,
                   "weight_decay": 0.1},
        no_decay=GPT_NO_DECAY, frozen=GPT_FROZEN, clip_grad_norm=0.5, steps=3,
        notes="""\
`gpt_bf16_pure`'s policy (`master: bf16`) in `gpt_bf16_accumulate`'s layout
(4 microbatches of 2 rows per step): each microbatch's bf16 gradients are
widened and summed in f32, as with f32 masters, and only the update's
result is rounded to the bf16 parameters. A trainer that summed the
microbatches' gradients in bf16 would round three more times per step.""",
    ),
    dict(
        F16_GPT,
        name="gpt_f16",
        what="the GPT in f16 with a dynamic loss scale that overflows, backs "
             "off and grows: skipped steps update nothing",
        seed=31,
        data=lambda: make_lm_data(300, 4, 16, 8, 231, ignore=True),
        notes="""\
The GPT of `gpt_bf16` trained in f16 (`precision: {compute: f16,
loss_scale: {initial: 524288, growth_interval: 2, hysteresis: 2}}`): an
f16 copy of the f32 masters runs forward and backward from the loss times
the scale; the gradients, copied to f32, are multiplied by 1/scale; a step
with a gradient that is not finite updates nothing (AdamW's step count does
not advance), and the scaler (Megatron's DynamicGradScaler, written out in
the script) halves the scale at the second such step since the last growth
and doubles it after 2 clean steps in a row. torch 1.13 has no f16 GEMMs on
the CPU: every f16 op computes in f32 on widened inputs and rounds its
result to f16 once (`HalfViaF32`, a dispatch mode), as CUDA's f16 kernels
and distopt's runtime do. `loss_scales` and `skipped` hold the scale each
step ran with and which steps were skipped; `--train-test` checks both
exactly.""",
    ),
    dict(
        F16_GPT,
        name="gpt_f16_dp2",
        what="the GPT of gpt_f16 on 2 data-parallel ranks that reduce their "
             "f16 gradients in f32 (the default `reduce`)",
        seed=61, reduce_ranks=2,
        data=lambda: make_lm_data(300, 4, 16, 8, 261, ignore=True),
        notes="""\
The training of `gpt_f16` (other random weights and batches) as two
data-parallel ranks run it with `precision: {compute: f16, loss_scale:
...}`, written out in one torch process: each rank runs the f16 copy
forward and backward on its 2 of the 4 rows, from its share of the batch's
mean loss times the scale, so its f16 gradients are about half one
device's and overflow at other steps than one device's would; the two
ranks' gradients are widened to f32 and summed in f32 (an all-reduce or
reduce-scatter in f32), multiplied by 1/scale, checked for overflow,
clipped and applied as in `gpt_f16`. The reference is for every plan with
`dp=2` (dp, ZeRO 1-3, with tp), not for one device.""",
    ),
    dict(
        F16_GPT,
        name="gpt_f16_reduce",
        what="the GPT of gpt_f16 on 2 data-parallel ranks whose f16 "
             "gradients are all-reduced in f16 (`reduce: f16`)",
        seed=59, reduce="f16", reduce_ranks=2,
        data=lambda: make_lm_data(300, 4, 16, 8, 259, ignore=True),
        notes="""\
The training of `gpt_f16` (other random weights and batches) as two
data-parallel ranks run it with `precision: {compute: f16, reduce: f16,
loss_scale: ...}`, written out in one torch process: each rank runs the f16
copy forward and backward on its 2 of the 4 rows, from its share of the
batch's mean loss (the sum of its tokens' losses over the batch's token
count) times the scale; the two ranks' f16 gradients are summed in f16,
rounded once (an all-reduce in f16), then widened to f32, multiplied by
1/scale, checked for overflow, clipped and applied to the f32 masters as in
`gpt_f16`. The LayerNorms' parameters, which the copy keeps in f32, sum in
f32. The reference is for `--mesh dp=2`: one device, or two ranks that
reduce in f32, sum their halves without the f16 rounding and can overflow
at other steps (each half alone is smaller than the sum).""",
    ),
    dict(
        name="llama_opset23",
        what="Llama (RMSNorm, rotary at position_ids, GQA 4/2, causal, SwiGLU) "
             "written with opset 23's RMSNormalization, RotaryEmbedding and "
             "Attention; every weight trains",
        seed=24,
        ctor=Llama23, export=export_llama23,
        inputs=["input_ids", "position_ids"], output="logits",
        data=lambda: with_positions(make_lm_data(64, 4, 16, 4, 224, ignore=True)),
        loss={"kind": "cross_entropy", "ignore_index": IGNORE_INDEX},
        optimizer={"kind": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8,
                   "weight_decay": 0.1},
        no_decay=["*norm.weight"], frozen=["rotary_*"], clip_grad_norm=1.0, steps=4,
        notes="""\
The graph is written node by node (`export_llama23`), since torch 1.13
exports none of opset 23's ops: `embed_tokens` [64, 32] → per layer
`RMSNormalization` (epsilon 1e-6) → `q_proj` [32, 32], `k_proj` and
`v_proj` [16, 32] (Transpose → MatMul) → `RotaryEmbedding` on q (4 heads of
8) and k (2 heads), 3-D inputs, the half tables `rotary_cos` / `rotary_sin`
[24, 4] (θ = 10000, frozen) read at `position_ids` (a second graph input,
0..15 per row) → `Attention` (3-D, q_num_heads 4, kv_num_heads 2,
is_causal) → `o_proj` → residual → `RMSNormalization` → SwiGLU MLP (hidden
48; Sigmoid, Mul) → residual; final `RMSNormalization` (`norm`), untied
`lm_head` [64, 32]. torch trains the same math written out (rotate-half
with the tables repeated, each kv head repeated for its query heads, a masked
softmax). Ignored labels as in gpt_adamw; clipping at 1.0.""",
    ),
    dict(
        name="moe_gpt",
        what="GPT-2-style decoder whose MLPs are GShard top-2 mixtures of 4 "
             "experts (TopK, OneHot, CumSum capacity, Einsum dispatch/combine), "
             "load-balancing loss in the graph, AdamW",
        seed=31,
        ctor=lambda: ExpertGPT(MoE, vocab=64, d=32, heads=4, layers=2, block_size=16,
                            experts=4, hidden=48, capacity=3),
        inputs=["input_ids", "labels"], output="loss",
        data=lambda: make_lm_data_in_graph(64, 4, 8, 3, 231),
        loss={"kind": "model"},
        optimizer={"kind": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8,
                   "weight_decay": 0.1},
        no_decay=["*ln_*", "wpe.weight"], frozen=["h.*.attn.bias"],
        clip_grad_norm=None, steps=3,
        notes="""\
Two pre-LN blocks of nanoGPT attention and a mixture of experts (`MoE`),
vocabulary 64, batch 4 × 8 tokens; each sequence is one GShard group of 8
tokens. The gate (Linear 32 → 4, no bias) is softmaxed; `torch.topk`
picks each token's two experts, `one_hot` makes their masks, an exclusive
`cumsum` over the group gives each token's slot in its expert's buffer of 3
(first choices before second ones); tokens past the capacity are dropped
(their expert output is 0, and the residual carries them). The two kept
gates are normalised to sum to 1. Einsums: dispatch `gsec,gsd->gecd`, the
experts' FFN `gecd,edf->gecf` (`w_in` [4, 32, 48]), exact GELU,
`gecf,efd->gecd` (`w_out` [4, 48, 32]), combine `gsec,gecd->gsd`. The
load-balancing loss per layer is `4 · Σ_e mean_s(first-choice mask) ·
mean_s(gate)`, averaged over groups; the graph returns cross-entropy plus
0.01 times their sum (`loss: {kind: model}`, labels the second input).""",
    ),
    dict(
        name="switch_gpt",
        what="GPT-2-style decoder whose MLPs are Switch Transformer top-1 "
             "mixtures of 4 experts (ArgMax router, capacity 2 with dropped "
             "tokens, Einsum dispatch/combine), the Switch load-balancing "
             "loss in the graph and the dropped-token fraction as a second "
             "output, AdamW",
        seed=32,
        ctor=lambda: ExpertGPT(SwitchMoE, vocab=64, d=32, heads=4, layers=2, block_size=16,
                               experts=4, hidden=48, capacity=2),
        inputs=["input_ids", "labels"], output="loss",
        outputs=["loss", "dropped_tokens"], logged=["dropped_tokens"],
        data=lambda: make_lm_data_in_graph(64, 4, 8, 3, 232),
        loss={"kind": "model"},
        optimizer={"kind": "adamw", "lr": 3e-3, "betas": [0.9, 0.95], "eps": 1e-8,
                   "weight_decay": 0.1},
        no_decay=["*ln_*", "wpe.weight"], frozen=["h.*.attn.bias"],
        clip_grad_norm=None, steps=3,
        notes="""\
moe_gpt's model with Switch Transformer routing in place of GShard's top-2:
two pre-LN blocks of nanoGPT attention and a top-1 mixture of experts
(`SwitchMoE`), vocabulary 64, batch 4 × 8 tokens, each sequence one group
of 8 tokens. The router (Linear 32 → 4, no bias) is softmaxed; each
token's expert is the `argmax` (ONNX `ArgMax`), its gate that expert's
probability; an exclusive `cumsum` over the group gives its slot in the
expert's buffer of 2 (capacity factor 1: 8 tokens / 4 experts), and tokens
past it are dropped (no expert output; the residual carries them). Einsums
as in moe_gpt (`gsec,gsd->gecd`, `gecd,edf->gecf`, `gecf,efd->gecd`,
`gsec,gecd->gsd`), the experts' FFN with ReLU (`w_in` [4, 32, 48],
`w_out` [4, 48, 32]). The load-balancing loss per layer is Switch's
`4 · Σ_e f_e · P_e` (f_e: the fraction of the group's tokens routed to e
before the drop, P_e: the mean router probability of e), averaged over
groups; the graph returns cross-entropy plus 0.01 times their sum
(`loss`), and `dropped_tokens`: `1 − Σ dispatch / tokens` per layer,
averaged over the layers (torch's value at each step is `train.json`'s
`dropped_tokens`).""",
    ),
    dict(
        name="dpo_gpt",
        what="direct preference optimisation (DPO): a GPT policy and a frozen "
             "reference GPT with other weights in one graph, per-token "
             "log-probabilities by log_softmax and torch.gather, the DPO loss "
             "in the graph, AdamW",
        seed=37,
        **DPO_SETUP,
        data=lambda: make_dpo_data(64, 4, 12, 4, 237),
        steps=4,
        notes="""\
`DPO` holds `policy` and `reference`, two GPTs of `gpt_adamw`'s layout
(vocabulary 64, block size 16, 2 blocks, tied heads) with different random
weights; `frozen: ["reference.*"]` freezes the reference (torch computes it
under `no_grad`). The inputs are TRL's: `chosen_input_ids`, `chosen_labels`,
`rejected_input_ids`, `rejected_labels`, int64 [4, 12] each: a prompt of 3
to 5 tokens shared by the pair, then the response (chosen: the prompt's
bigram stream continued; rejected: random tokens), padded with token 0; the
labels are the ids with prompt and padding -100. The graph concatenates
chosen and rejected rows along the batch (`Concat`, 8 rows), runs both
models on them, and takes each row's log-probability as TRL's
`get_batch_logps` does: labels and logits shifted by one, `log_softmax`
(`LogSoftmax`) read at the labels by `torch.gather` (`GatherElements`), -100
masked out (`Equal`, `Not`, `Where`, `Cast`, `Mul`), summed over the
sequence (`ReduceSum`). Rows `[:4]` are chosen and `[4:]` rejected
(`Slice`); `loss = mean(-logsigmoid(0.1·((π_c − π_r) − (ref_c − ref_r))))`
(`Sigmoid`, `Log`, `Neg`, `ReduceMean`), `loss: {kind: model}`. The graph
also returns `chosen_rewards` and `rejected_rewards` [4] (`0.1·(π − ref)`,
what TRL logs), which the probe compares too. The four causal-mask buffers
export as one initializer and three Identity nodes. ONNX Runtime 1.30
(`onnxruntime-node`) gives `model.onnx` on `step_0` the loss 0.67943573,
torch's first loss as a float32.""",
    ),
    dict(
        name="dpo_gpt_same_start",
        what="DPO as dpo_gpt with the reference starting as a copy of the "
             "policy (DPO's usual start from one SFT model), so the export "
             "merges every reference tensor into the policy's initializer",
        seed=38, start_as=("reference", "policy"),
        **DPO_SETUP,
        data=lambda: make_dpo_data(64, 4, 12, 3, 238),
        steps=3,
        notes="""\
The `DPO` model of `dpo_gpt` (other random weights and batches) whose
reference is loaded with the policy's weights before the export, as when
both start from one SFT model. torch.onnx.export keeps one initializer of
each pair of equal tensors: every `reference.*` tensor is an Identity node
reading the policy's initializer (29 initializers for 57 parameters and
buffers). The reference must stay at the initial values while the policy
trains (a trainer that ties them trains the reference too, and its loss
stays log 2). The first loss is log 2 (policy and reference agree; ONNX
Runtime 1.30 gives 0.6931472 and zero rewards on `step_0`).""",
    ),
]


# --------------------------------------------------------------------------
# Export, checks, training
# --------------------------------------------------------------------------


ONNX_DTYPES = {"bf16": onnx.TensorProto.BFLOAT16, "f16": onnx.TensorProto.FLOAT16}


def graph_in_dtype(proto, dtype):
    """The f32 graph as a model exported in `dtype` (an ONNX element type):
    float initializers and constants rounded to it, and every f32 input,
    output, value info and Cast target in it."""
    torch_dtype = {onnx.TensorProto.BFLOAT16: torch.bfloat16,
                   onnx.TensorProto.FLOAT16: torch.float16}[dtype]

    def tensor(t):
        if t.data_type != onnx.TensorProto.FLOAT:
            return t
        values = torch.from_numpy(numpy_helper.to_array(t).copy()).to(torch_dtype)
        raw = values.contiguous().view(torch.int16).numpy().tobytes()
        return onnx.helper.make_tensor(t.name, dtype, list(t.dims), raw, raw=True)

    def value_type(v):
        if v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
            v.type.tensor_type.elem_type = dtype

    g = proto.graph
    inits = [tensor(t) for t in g.initializer]
    del g.initializer[:]
    g.initializer.extend(inits)
    for v in list(g.input) + list(g.output) + list(g.value_info):
        value_type(v)
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                a.t.CopyFrom(tensor(a.t))
            if node.op_type == "Cast" and a.name == "to" and a.i == onnx.TensorProto.FLOAT:
                a.i = dtype
    return proto


def write_tensor(path, tensor, name):
    # np.ascontiguousarray would make a scalar (a loss) 1-D.
    t = numpy_helper.from_array(np.array(tensor.detach().numpy(), order="C"), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def matches(name, globs):
    return any(fnmatch.fnmatchcase(name, g) for g in globs)


def torch_names(model):
    """Every parameter and buffer name, tied/shared ones under each name."""
    names = set()
    for mod_name, mod in model.named_modules():
        prefix = mod_name + "." if mod_name else ""
        for n, t in list(mod._parameters.items()) + list(mod._buffers.items()):
            if t is not None:
                names.add(prefix + n)
    return names


FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
               onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}


def check_names(case, model, proto):
    """The checks that make train.json meaningful for the exported graph."""
    inits = {i.name: i for i in proto.graph.initializer}
    known = torch_names(model)
    unknown = sorted(set(inits) - known)
    if unknown:
        raise RuntimeError(f"{case['name']}: initializers that are no torch "
                           f"parameter or buffer name: {unknown}")
    float_inits = {n for n, i in inits.items() if i.data_type in FLOAT_TYPES}
    # Equal initializers the export merged: Identity nodes whose outputs
    # carry the other parameters' names (distinct parameters in torch).
    float_inits |= {n.output[0] for n in proto.graph.node
                    if n.op_type == "Identity" and n.input[0] in float_inits
                    and n.output[0] in known}
    onnx_trainable = {n for n in float_inits if not matches(n, case["frozen"])}
    torch_trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    if onnx_trainable != torch_trainable:
        raise RuntimeError(
            f"{case['name']}: trainable sets differ\n"
            f"  in ONNX (float initializers minus frozen) only: "
            f"{sorted(onnx_trainable - torch_trainable)}\n"
            f"  in torch (requires_grad) only: {sorted(torch_trainable - onnx_trainable)}")
    for g in case["frozen"]:  # an initializer, or a parameter merged into one
        if not any(fnmatch.fnmatchcase(n, g) for n in set(inits) | float_inits):
            raise RuntimeError(f"{case['name']}: frozen glob {g!r} matches no initializer")
    for g in case["no_decay"]:
        if not any(fnmatch.fnmatchcase(n, g) for n in onnx_trainable):
            raise RuntimeError(f"{case['name']}: no_decay glob {g!r} matches no "
                               f"trainable initializer")
    return inits, onnx_trainable


def make_optimizer(case, model):
    o = case["optimizer"]
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if matches(n, case["no_decay"]) else decay).append(p)
    groups = [{"params": decay, "weight_decay": o["weight_decay"]}]
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    if o["kind"] == "adamw":
        return torch.optim.AdamW(groups, lr=o["lr"], betas=tuple(o["betas"]),
                                 eps=o["eps"], foreach=False)
    if o["kind"] == "adam":
        return torch.optim.Adam(groups, lr=o["lr"], betas=tuple(o["betas"]),
                                eps=o["eps"], foreach=False)
    if o["kind"] == "sgd":
        return torch.optim.SGD(groups, lr=o["lr"], momentum=o["momentum"],
                               nesterov=o.get("nesterov", False), foreach=False)
    raise ValueError(o["kind"])


def make_scheduler(case, opt):
    """torch's LambdaLR for the case's lr_schedule: linear warm-up
    ((k+1)/warmup), then cosine from lr down to min_lr at total_steps."""
    s = case.get("lr_schedule")
    if s is None:
        return None
    lr = case["optimizer"]["lr"]
    warm, total, low = s["warmup_steps"], s["total_steps"], s["min_lr"]

    def factor(k):
        if k < warm:
            return (k + 1) / warm
        progress = min(1.0, (k - warm) / max(1, total - warm))
        return (low + (lr - low) * 0.5 * (1 + math.cos(math.pi * progress))) / lr
    return torch.optim.lr_scheduler.LambdaLR(opt, factor)


def case_outputs(case):
    """The graph's outputs: the one the loss reads, or all the case names."""
    return case.get("outputs", [case["output"]])


def as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def loss_output(case, out):
    """The output the loss reads of a model that returns several."""
    return as_tuple(out)[case_outputs(case).index(case["output"])]


def compute_loss(case, out, labels):
    if case["loss"]["kind"] == "model":
        return out  # the model computed its own loss
    if case["loss"]["kind"] == "cross_entropy":
        return F.cross_entropy(out.reshape(-1, out.size(-1)), labels.reshape(-1),
                               ignore_index=case["loss"]["ignore_index"])
    return F.mse_loss(out, labels)


def f32(x):
    """A float32 value as the shortest decimal that reads back to it."""
    return float(np.format_float_positional(np.float32(x), unique=True, trim="-"))


def to_json(obj, indent=""):
    """JSON with one key per line and lists of scalars on one line."""
    if isinstance(obj, dict):
        inner = indent + "  "
        items = [f"{inner}{json.dumps(k)}: {to_json(v, inner)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    return json.dumps(obj)


PRECISION_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16,
                    "f16": torch.float16}


class HalfViaF32(TorchDispatchMode):
    """float16 on the CPU, where torch 1.13 has no f16 GEMMs: every aten op
    (forward and backward) that reads only float16 floats computes in
    float32 on the widened inputs and rounds its float results to float16
    once, as CUDA's f16 kernels (f32 accumulation) and distopt's runtime
    (f16 storage, f32 kernels) do. An op that mixes in float32 tensors
    returns float32 (torch's type promotion); casts and in-place ops run
    as they are."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [t for t in tree_flatten((args, kwargs))[0]
                   if isinstance(t, torch.Tensor) and t.is_floating_point()]
        if (func is torch.ops.aten._to_copy.default or func._schema.is_mutable
                or not any(t.dtype == torch.float16 for t in tensors)):
            return func(*args, **kwargs)
        half_only = all(t.dtype == torch.float16 or t.dim() == 0 for t in tensors)

        def widen(t):
            if isinstance(t, torch.Tensor) and t.dtype == torch.float16:
                return t.float()
            return t

        out = func(*tree_map(widen, args), **tree_map(widen, kwargs))
        if not half_only:
            return out
        return tree_map(lambda t: t.half() if isinstance(t, torch.Tensor)
                        and t.dtype == torch.float32 else t, out)


class DynamicLossScaler:
    """Megatron's DynamicGradScaler (DeepSpeed's DynamicLossScaler with
    its defaults), written out: a step whose gradients are not finite is
    skipped; `hysteresis` such steps since the last growth halve the scale
    (each further one halves it again), never below `min`; `growth_interval`
    clean steps in a row double it. A fixed scale only skips."""

    def __init__(self, spec):
        if isinstance(spec, dict):
            self.dynamic = True
            self.scale = float(spec.get("initial", 65536.0))
            self.interval = spec.get("growth_interval", 1000)
            self.hysteresis = spec.get("hysteresis", 2)
            self.min = float(spec.get("min", 1.0))
        else:
            self.dynamic = spec == "dynamic"
            self.scale = 65536.0 if self.dynamic else float(spec)
            self.interval, self.hysteresis, self.min = 1000, 2, 1.0
        self.clean, self.left = 0, self.hysteresis

    def update(self, found_inf):
        if not self.dynamic:
            return
        if found_inf:
            self.clean = 0
            self.left -= 1
            if self.left <= 0:
                self.scale = max(self.scale * 0.5, self.min)
        else:
            self.clean += 1
            if self.clean == self.interval:
                self.clean = 0
                self.left = self.hysteresis
                self.scale *= 2.0


def working_copy(master, dtype):
    """A mixed-precision policy's compute copy of the f32 master model:
    parameters and buffers in `dtype`, except the normalisations (LayerNorm
    and the spelled-out RMSNorm), which keep f32 parameters and compute in
    f32 (input cast in, output cast back); softmax computes in f32 in the
    model's own code (in_f32)."""
    work = copy.deepcopy(master).to(dtype)
    for mod in work.modules():
        if isinstance(mod, (nn.LayerNorm, RMSNorm)):
            mod.float()
            mod.register_forward_pre_hook(
                lambda m, inp: tuple(t.float() for t in inp))
            mod.register_forward_hook(lambda m, inp, out: out.to(dtype))
    return work


def data_parallel_gradients(case, work, work_params, inputs, labels, ranks, scale):
    """A data-parallel step of `ranks` ranks, written out on one process:
    rank r runs forward and backward on its rows of the batch, from its
    share of the global mean loss (the sum of its tokens' losses over the
    batch's token count) times `scale`, so its gradients come out in the
    compute dtype, each about 1/ranks of one device's. They are then summed
    over the ranks: with the case's `reduce: f16` in that dtype, each sum
    rounded once (an all-reduce in f16; parameters the copy keeps in f32,
    the LayerNorms', sum in f32), else widened to f32 and summed in f32.
    Returns the step's loss and the summed gradients."""
    narrow = case.get("reduce") == "f16"
    ignore = case["loss"]["ignore_index"]
    count = int((labels != ignore).sum())
    rows = inputs[0].shape[0] // ranks
    total, reduced = 0.0, [None] * len(work_params)
    for r in range(ranks):
        part = slice(r * rows, (r + 1) * rows)
        out = loss_output(case, as_tuple(work(*[t[part] for t in inputs])))
        mine = labels[part]
        tokens = int((mine != ignore).sum())
        loss_sum = compute_loss(case, out.float(), mine) * tokens
        (loss_sum / count * scale).backward()
        total += loss_sum.item()
        for i, w in enumerate(work_params):
            g, w.grad = w.grad, None
            if not narrow:
                g = g.float()
            reduced[i] = g.clone() if reduced[i] is None else (
                reduced[i].float() + g.float()).to(g.dtype)
    return total / count, reduced


def train(case, model, batches, dtype, case_dir=None, scaling=None, skip=None,
          logged=None, f32_states=False):
    """Trains `model` (f32, the masters) on the batches as the case says and
    returns the losses and the (pre-clip) gradient norms. With another
    `dtype` forward and backward run on a copy in that dtype, refreshed from
    the masters every step; its gradients are copied to f32 and summed over
    microbatches in f32, and clipping and the optimizer run on the f32
    masters. With `case_dir`, writes each step's batch there. With
    `scaling` (f16), backward starts from the loss times the scale, the f32
    gradients are multiplied by 1/scale, and a step whose gradients are not
    all finite updates nothing (optimizer.step() and the schedule are not
    called, so Adam's step count does not advance); `scaling` then gets
    `scales` (each step's scale) and `skipped` (0 or 1 per step). `skip`
    (0 or 1 per step) leaves out the updates of those steps (an f32 run to
    compare an f16 run with). `logged` gets, for each output the case's
    `logged` names, its value at each step (microbatch), before the update.
    A case with `optimizer_state: bf16` rounds the optimizer's states to
    bf16 after each update, unless `f32_states`."""
    opt = make_optimizer(case, model)
    scaler = None
    if scaling is not None:
        scaler = DynamicLossScaler(case["loss_scale"])
        scaling["scales"], scaling["skipped"] = [], []
    sched = make_scheduler(case, opt)
    params = [p for p in model.parameters() if p.requires_grad]
    work = working_copy(model, dtype) if dtype != torch.float32 else model
    work_params = [p for p in work.parameters() if p.requires_grad]
    assert len(work_params) == len(params)
    losses, norms = [], []
    micro = case.get("accumulate", 1)
    # A 16-bit run of a `reduce_ranks` case sums its ranks' gradients in the
    # compute dtype; its f32 comparison run is one device's.
    ranks = case.get("reduce_ranks", 1) if work is not model else 1
    assert ranks == 1 or micro == 1
    # `master: bf16`: the masters only ever hold bf16 values.
    round_masters = case.get("master") == "bf16" and dtype != torch.float32
    if round_masters:
        with torch.no_grad():
            for p in params:
                p.copy_(p.bfloat16().float())
    logged = {} if logged is None else logged
    for k in range(case["steps"]):
        opt.zero_grad()
        if work is not model:
            with torch.no_grad():
                for w, p in zip(work_params, params):
                    w.copy_(p)  # rounds to the compute dtype
            for p in params:
                p.grad = torch.zeros_like(p)
        total = 0.0
        for j in range(micro):
            inputs, labels = batches[k * micro + j]
            if case_dir is not None:
                sd = os.path.join(case_dir, f"step_{k}")
                if micro > 1:
                    sd = os.path.join(sd, f"micro_{j}")
                os.makedirs(sd)
                for i, (n, t) in enumerate(zip(case["inputs"], inputs)):
                    write_tensor(os.path.join(sd, f"input_{i}.pb"), t, n)
                if labels is not None:
                    write_tensor(os.path.join(sd, "labels.pb"), labels, "labels")
            if ranks > 1:
                with HalfViaF32() if dtype == torch.float16 else contextlib.nullcontext():
                    loss, reduced = data_parallel_gradients(
                        case, work, work_params, inputs, labels, ranks,
                        scaler.scale if scaler is not None else 1.0)
                total += loss
                for r, p in zip(reduced, params):
                    p.grad += r.float()
                continue
            with HalfViaF32() if dtype == torch.float16 else contextlib.nullcontext():
                outs = as_tuple(work(*inputs))
                for name in case.get("logged", []):
                    logged.setdefault(name, []).append(
                        float(outs[case_outputs(case).index(name)]))
                out = loss_output(case, outs)
                loss = compute_loss(case, out.float(), labels)
                seed = loss / micro
                if scaler is not None:
                    seed = seed * scaler.scale
                seed.backward()
            total += loss.item()
            if work is not model:
                for w, p in zip(work_params, params):
                    p.grad += w.grad.float()
                    w.grad = None
        losses.append(f32(total / micro))
        if scaler is not None:
            inv = torch.tensor(1.0 / scaler.scale, dtype=torch.float32)
            for p in params:
                p.grad.mul_(inv)
            found_inf = not all(bool(torch.isfinite(p.grad).all()) for p in params)
            scaling["scales"].append(scaler.scale)
            scaling["skipped"].append(int(found_inf))
            scaler.update(found_inf)
            if found_inf:
                norms.append(float("inf"))
                continue
        if skip is not None and skip[k]:
            norms.append(float("inf"))
            continue
        if case["clip_grad_norm"] is not None:
            norms.append(float(torch.nn.utils.clip_grad_norm_(
                params, case["clip_grad_norm"])))
        else:
            norms.append(float(torch.norm(torch.stack(
                [torch.norm(p.grad) for p in params]))))
        opt.step()
        if round_masters:
            with torch.no_grad():
                for p in params:
                    p.copy_(p.bfloat16().float())
        if case.get("optimizer_state") == "bf16" and not f32_states:
            # States stored in bf16: each step reads the rounded value.
            with torch.no_grad():
                for st in opt.state.values():
                    for key in ("exp_avg", "exp_avg_sq", "momentum_buffer"):
                        if isinstance(st.get(key), torch.Tensor):
                            st[key].copy_(st[key].bfloat16().float())
        if sched is not None:
            sched.step()
    return losses, norms


def make_case(case):
    case_dir = os.path.join(TRAIN_DIR, case["name"])
    if os.path.exists(case_dir):
        shutil.rmtree(case_dir)
    os.makedirs(case_dir)

    torch.manual_seed(case["seed"])
    model = case["ctor"]()
    (fresh_init if case.get("fresh") else randomise)(model, 1000 + case["seed"])
    if "start_as" in case:  # a module that starts as a copy of another
        copy_to, copy_from = case["start_as"]
        getattr(model, copy_to).load_state_dict(getattr(model, copy_from).state_dict())
    model_dtype = PRECISION_DTYPES[case.get("model_dtype", "f32")]
    if model_dtype != torch.float32:
        # The f32 masters start at the values the 16-bit file holds.
        with torch.no_grad():
            for t in list(model.parameters()) + list(model.buffers()):
                if t.is_floating_point():
                    t.copy_(t.to(model_dtype).float())
    for n, p in model.named_parameters():
        p.requires_grad_(not matches(n, case["frozen"]))
    model.eval()  # no dropout or batch norm anywhere: train() would be the same
    batches, probe = case["data"]()

    # Export the initial model (gradients enabled, no constant folding).
    model_path = os.path.join(case_dir, "model.onnx")
    if "export" in case:  # a graph written by hand (ops torch cannot export)
        case["export"](model, batches[0][0], model_path)
    else:
        torch.onnx.export(
            model, tuple(batches[0][0]), model_path,
            input_names=case["inputs"], output_names=case_outputs(case),
            opset_version=OPSET, do_constant_folding=False,
            export_params=True, verbose=False)
    proto = onnx.load(model_path)
    proto.producer_name = "distopt scripts/make_training_cases.py (torch.onnx)"
    proto.doc_string = ""
    for node in proto.graph.node:
        node.doc_string = ""
    onnx.save_model(proto, model_path)
    if "export" not in case:  # onnx 1.12's checker knows opsets up to 17
        onnx.checker.check_model(model_path)
    inits, trainable = check_names(case, model, proto)
    if model_dtype != torch.float32:
        proto = graph_in_dtype(proto, ONNX_DTYPES[case["model_dtype"]])
        onnx.save_model(proto, model_path)
        onnx.checker.check_model(model_path, full_check=True)

    # Train in torch on the same batches (a mixed-precision case also in
    # float32, for comparison).
    dtype = PRECISION_DTYPES[case.get("precision", "f32")]
    f32_model = copy.deepcopy(model) if dtype != torch.float32 else None
    facts = []
    if case.get("small_lr"):
        facts += small_lr_facts(case, model)
        with torch.no_grad():
            probe_before = model(*probe)
    scaling = {} if "loss_scale" in case else None
    logged = {}
    states_model = (copy.deepcopy(model) if case.get("optimizer_state")
                    else None)
    initial_model = copy.deepcopy(model) if case.get("master") else None
    losses, norms = train(case, model, batches, dtype, case_dir, scaling, logged=logged)
    losses_f32 = train(case, f32_model, batches, torch.float32,
                       skip=scaling["skipped"] if scaling else None)[0] if f32_model else None

    pd = os.path.join(case_dir, "probe")
    os.makedirs(pd)
    with torch.no_grad():
        outs = as_tuple(model(*probe))
    for i, (n, t) in enumerate(zip(case["inputs"], probe)):
        write_tensor(os.path.join(pd, f"input_{i}.pb"), t, n)
    for i, (n, t) in enumerate(zip(case_outputs(case), outs)):
        write_tensor(os.path.join(pd, f"output_{i}.pb"), t, n)
    out = loss_output(case, outs)
    if f32_model is not None:
        with torch.no_grad():
            out_f32 = f32_model(*probe)
        rel = max(abs(a - b) / abs(b) for a, b in zip(losses, losses_f32))
        facts.append(f"torch's own f32 training of this model: losses within "
                     f"{rel:.2g} relative of the {case['precision']} ones, probe outputs within "
                     f"{float((out - out_f32).abs().max()):.3g} (outputs up to "
                     f"{float(out.abs().max()):.3g}): {case['precision']}'s rounding noise, "
                     f"which bounds how closely another {case['precision']} trainer can match"
                     + (" (the f32 run skips the same steps)" if scaling else ""))
    if case.get("master") == "bf16":
        masters_case = dict(case)
        del masters_case["master"]
        masters_model = copy.deepcopy(initial_model)
        train(masters_case, masters_model, batches, dtype)
        with torch.no_grad():
            out_masters = loss_output(case, as_tuple(masters_model(*probe)))
        facts.append(f"the same training with f32 masters (as `gpt_bf16`): probe "
                     f"outputs up to {float((out - out_masters).abs().max()):.3g} apart")
    if states_model is not None:
        f32_states_losses = train(case, states_model, batches, dtype,
                                  f32_states=True)[0]
        with torch.no_grad():
            out_f32_states = loss_output(case, as_tuple(states_model(*probe)))
        rel = max(abs(a - b) / abs(b) for a, b in zip(f32_states_losses, losses))
        facts.append(f"the same training with f32 optimizer states: losses within "
                     f"{rel:.2g} relative, probe outputs up to "
                     f"{float((out - out_f32_states).abs().max()):.3g} apart")
    if case.get("small_lr"):
        moved = float((out - probe_before).abs().max())
        atol = case["tolerance"]["probe_atol"]
        facts.append(f"the f32 masters' probe output moves by up to {moved:.3g} "
                     f"over the {case['steps']} steps; the case's probe_atol is "
                     f"{atol:g}, so a trainer whose weights did not move fails it")
        if moved < 4 * atol:
            raise RuntimeError(f"{case['name']}: the probe moves by {moved:.3g}, "
                               f"not clearly more than probe_atol {atol}")

    spec = collections.OrderedDict()
    spec["output"] = case["output"]
    spec["loss"] = case["loss"]
    spec["optimizer"] = case["optimizer"]
    if "lr_schedule" in case:
        spec["lr_schedule"] = case["lr_schedule"]
    spec["no_decay"] = case["no_decay"]
    spec["frozen"] = case["frozen"]
    if case["clip_grad_norm"] is not None:
        spec["clip_grad_norm"] = case["clip_grad_norm"]
    spec["steps"] = case["steps"]
    micro = case.get("accumulate", 1)
    if micro > 1:
        spec["gradient_accumulation_steps"] = micro
    if "loss_scale" in case:
        spec["precision"] = {"compute": case["precision"],
                             "loss_scale": case["loss_scale"]}
        if "reduce" in case:
            spec["precision"]["reduce"] = case["reduce"]
    elif "master" in case:
        spec["precision"] = {"compute": case["precision"],
                             "master": case["master"]}
    elif "precision" in case and "model_dtype" not in case:
        spec["precision"] = case["precision"]
    elif "optimizer_state" in case:
        spec["precision"] = {"compute": "f32",
                             "optimizer_state": case["optimizer_state"]}
    spec["losses"] = losses
    for name in case.get("logged", []):
        spec[name] = [f32(x) for x in logged[name]]
    if scaling is not None:
        spec["loss_scales"] = scaling["scales"]
        spec["skipped"] = scaling["skipped"]
    if losses_f32 is not None:
        spec["losses_f32"] = losses_f32
    if "tolerance" in case:
        spec["tolerance"] = case["tolerance"]
    with open(os.path.join(case_dir, "train.json"), "w") as f:
        f.write(to_json(spec) + "\n")

    assert len(batches) == case["steps"] * micro
    s = summarise(case, case_dir, model, proto, inits, trainable, losses, norms)
    s["losses_f32"] = losses_f32
    if scaling is not None:
        facts.append(f"loss scale per step {scaling['scales']}, skipped "
                     f"{scaling['skipped']}")
    s["facts"] = facts
    s["logged"] = {name: spec[name] for name in case.get("logged", [])}
    return s


def small_lr_facts(case, model):
    """How many trained elements an update of about lr (Adam's step size)
    would leave unchanged if they were stored in bf16 (lr below half the
    bf16 ulp of the element)."""
    lr = case["optimizer"]["lr"]
    below, total = 0, 0
    for p in model.parameters():
        if not p.requires_grad:
            continue
        b = p.detach().to(torch.bfloat16).float()
        # the bf16 ulp of |b|: 2^(exponent - 7)
        ulp = torch.pow(2.0, torch.floor(torch.log2(b.abs().clamp_min(1e-30))) - 7)
        below += int((lr < ulp / 2).sum())
        total += p.numel()
    if below < 0.9 * total:
        raise RuntimeError(f"{case['name']}: lr {lr} is below half a bf16 ulp "
                           f"of only {below} of {total} elements")
    return [f"lr {lr:g} is below half the bf16 ulp of {below} of the {total} "
            f"trained elements ({100 * below / total:.1f}%)"]


def summarise(case, case_dir, model, proto, inits, trainable, losses, norms):
    size = 0
    for root, _, files in os.walk(case_dir):
        size += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    hist = collections.Counter(n.op_type for n in proto.graph.node)
    numel = {n: int(np.prod(i.dims)) for n, i in inits.items()}
    for n in proto.graph.node:  # merged initializers, under each name
        if n.op_type == "Identity" and n.input[0] in numel:
            numel.setdefault(n.output[0], numel[n.input[0]])
    floats = {n for n, i in inits.items() if i.data_type in FLOAT_TYPES}
    identities = [(n.input[0], n.output[0]) for n in proto.graph.node
                  if n.op_type == "Identity"]
    clip = case["clip_grad_norm"]
    return dict(
        name=case["name"], what=case["what"], notes=case["notes"], size=size,
        spec=case,
        model_bytes=os.path.getsize(os.path.join(case_dir, "model.onnx")),
        hist=hist, n_nodes=len(proto.graph.node),
        n_init=len(inits), n_float=len(floats),
        params=sum(numel[n] for n in floats),
        trainable=sum(numel[n] for n in trainable), n_trainable=len(trainable),
        frozen=sorted(n for n in inits if n not in trainable),
        inits=[(i.name, list(i.dims)) for i in proto.graph.initializer],
        inputs=[(vi.name, onnx.TensorProto.DataType.Name(
            vi.type.tensor_type.elem_type).lower(),
            [d.dim_value for d in vi.type.tensor_type.shape.dim]) for vi in proto.graph.input],
        outputs=[(vi.name, [d.dim_value for d in vi.type.tensor_type.shape.dim])
                 for vi in proto.graph.output],
        identities=identities, losses=losses, norms=norms, clip=clip,
        clipped=[k for k, nrm in enumerate(norms)
                 if clip is not None and math.isfinite(nrm) and nrm > clip],
        torch_params=sum(p.numel() for p in model.parameters()),
    )


def print_summary(s):
    print(f"== {s['name']}: {s['what']}")
    print(f"   {s['size']} bytes on disk (model.onnx {s['model_bytes']}), "
          f"{s['n_nodes']} nodes")
    print(f"   inputs {s['inputs']}  outputs {s['outputs']}")
    print(f"   initializers {s['n_init']} ({s['n_float']} float, {s['params']} elements), "
          f"trainable {s['n_trainable']} ({s['trainable']} elements); "
          f"torch parameters {s['torch_params']} elements")
    print(f"   frozen initializers: {s['frozen']}")
    print(f"   Identity nodes (input -> output): {s['identities']}")
    print("   ops: " + ", ".join(f"{k} {v}" for k, v in sorted(s["hist"].items())))
    print(f"   losses: {s['losses']}")
    kind = "pre-clip grad norms" if s["clip"] is not None else "grad norms"
    print(f"   {kind}: {[round(n, 4) for n in s['norms']]}"
          + (f"  clip {s['clip']}: clipped in steps {s['clipped']}"
             if s["clip"] is not None else ""))
    for fact in s.get("facts", []):
        print(f"   {fact}")
    if s.get("losses_f32"):
        print(f"   losses trained in f32: {s['losses_f32']}")


DOC_HEAD = """\
# Training cases

Small models with what PyTorch got when it trained them, so that a trainer
(forward + loss + backward + optimizer compiled from the ONNX forward graph,
on any mesh) can be checked step by step. Made by
`scripts/make_training_cases.py`; this page is written by the same script.

```
test/data/train/<case>/model.onnx          forward graph with the initial weights (inputs -> output)
test/data/train/<case>/train.json          what to train and torch's losses
test/data/train/<case>/step_K/input_I.pb   the batch of step K, graph input I (TensorProto named as the input)
test/data/train/<case>/step_K/labels.pb    its labels (TensorProto "labels": int64 class ids, or float32 targets for mse;
                                           absent when the graph computes its loss and takes labels as an input)
test/data/train/<case>/step_K/micro_J/     with gradient accumulation: microbatch J of step K (input_I.pb, labels.pb)
test/data/train/<case>/probe/input_I.pb    a batch never trained on
test/data/train/<case>/probe/output_I.pb   the model's output I on it after the last step (named as the output;
                                           a graph with several outputs has one file per output)
```

`train.json`:

```
{"output": "logits",                                  # the graph output the loss reads
 "loss": {"kind": "cross_entropy", "ignore_index": -100},   # or {"kind": "mse"}, or {"kind": "model"}:
                                                      # the output is the loss the graph computes
 "optimizer": {"kind": "adamw", "lr": 0.003, "betas": [0.9, 0.95], "eps": 1e-08,
               "weight_decay": 0.1},                  # adam: same keys; sgd: lr, momentum, nesterov, weight_decay
 "lr_schedule": {"kind": "cosine", "warmup_steps": 2, "total_steps": 4,
                 "min_lr": 0.005},                    # only when the rate changes (torch LambdaLR)
 "no_decay": ["*.bias", "*ln_*", "wpe.weight"],       # trainable initializers with weight decay 0
 "frozen": ["h.*.attn.bias"],                         # initializers that do not train
 "clip_grad_norm": 0.5,                               # only when clipping is on
 "steps": 4,
 "gradient_accumulation_steps": 4,                    # only when accumulating: microbatches per step
 "precision": "bf16",                                 # only for mixed precision (docs/training.md)
 "losses": [...],                                     # torch's loss of step K, before its update
                                                      # (the mean over its microbatches)
 "losses_f32": [...],                                 # mixed precision: the same training in float32
                                                      # (for comparison; nothing checks it)
 "loss_scales": [...], "skipped": [...],              # f16 with a loss scale: the scale each step ran
                                                      # with, and 1 for a step skipped for gradients
                                                      # that were not finite (checked exactly)
 "dropped_tokens": [...],                             # a mixture of experts that returns the output
                                                      # dropped_tokens: its value at each step, before
                                                      # the update (checked to 1e-6)
 "tolerance": {"loss_rtol": 2e-3,                     # optional: how close a trainer must come;
               "probe_atol": 2e-2, "probe_rtol": 2e-2}}   # default 1e-4, 1e-3, 1e-3
```

`dist-train --train-test` checks each step's loss to `loss_rtol` (relative)
and the trained model's probe output to `probe_atol + probe_rtol·|torch|`
element by element; a case without `tolerance` gets the defaults, which
fit float32 training.

Losses are float32 values written as the shortest decimal that reads back to
the same float32.

## Regenerating

```
/usr/bin/python3 scripts/make_training_cases.py            # all cases and this page
/usr/bin/python3 scripts/make_training_cases.py gpt_adamw  # one case, and its row and section of this page
```

Needs Debian's `python3-torch`, `python3-onnx`, `python3-numpy`,
`libopenblas0-pthread` (use `/usr/bin/python3`). Generated with PyTorch
@TORCH@ and ONNX @ONNX@, opset @OPSET@, float32, one thread,
`torch.use_deterministic_algorithms(True)`. Seeds are fixed: a re-run with
the same versions on the same machine reproduces every file byte for byte
(checked by running it three times); on another CPU the last digits of the
recorded losses can differ, as OpenBLAS picks its kernels by CPU. A later
run of all cases on a machine of the same kind changed the last digits of
some older cases' data (cause not found), so new cases are made one at a
time (`make_training_cases.py NAME`), which reproduces that case's files
byte for byte. The build and CI do not need torch.

How a case is made: build the model (fixed seed), randomise every parameter
(Linear weights `N(0,1)/sqrt(fan_in)`, LoRA B 0.2 times that, biases
`0.1·N(0,1)`, norm weights `1 + 0.2·N(0,1)`, norm biases `0.1·N(0,1)`,
embeddings `0.5·N(0,1)`; the script fails if any element is exactly 0 or
1), set `requires_grad=False` on parameters matched by `frozen`, export
(`torch.onnx.export`, static shapes, gradients enabled,
`do_constant_folding=False`, eval mode — no dropout or batch norm anywhere),
then train in torch on `step_0 … step_{N-1}` and run the probe batch.
The script checks, by name, that the parameters torch optimises are exactly
the float initializers of `model.onnx` not matched by `frozen`, that every
initializer name is a torch parameter or buffer name, and that every
`frozen` and `no_decay` glob matches something.

Independent check (once, outside the repository, ONNX Runtime 1.30 via
`onnxruntime-node`): `model.onnx` on `step_0` gives each case's first loss
to ≤ 1.5e-7 relative, and `model.onnx` with its initializers replaced by
torch's trained tensors (matched by name) gives `probe/output_0.pb` to
≤ 2.3e-6 absolute (outputs up to 3.6 in magnitude).

## Semantics a trainer must follow

Names: trainable = every float initializer, and every Identity output named
after a torch parameter that reads one (merged by the export), not matched by
a `frozen` glob.
Globs are Python `fnmatch.fnmatchcase` (case-sensitive; `*` also matches
`.`). A trainable initializer matching a `no_decay` glob has weight decay 0;
frozen wins over `no_decay` (`*.bias` also matches the frozen mask
`h.0.attn.bias`). An initializer read by several nodes (the tied `wte.weight`)
gets the sum of the gradients of all its uses.

One step K (t = K + 1), in this order:

1. Forward `step_K` inputs with the current parameters.
2. Loss, recorded as `losses[K]`:
   - `cross_entropy`: flatten the output to `[N, C]` with C its last
     dimension (`[B, T, V]` → `[B·T, V]`) and the labels to `[N]`;
     `loss = Σ_{i: y_i ≠ ignore_index} (logsumexp(z_i) − z_i[y_i]) / #{i: y_i ≠ ignore_index}`
     (no label smoothing, no class weights).
   - `mse`: `mean((output − target)²)` over all elements.
3. Gradients of that loss for every trainable initializer (none for frozen ones).
4. If `clip_grad_norm` is set (`torch.nn.utils.clip_grad_norm_`, over all
   trainable parameters together):
   `total = sqrt(Σ_p ‖g_p‖²)` (torch: the 2-norm of the per-parameter 2-norms),
   `coef = min(clip_grad_norm / (total + 1e-6), 1)`, then `g_p ← coef · g_p`
   for every p (also when coef is 1). Clipping sees the plain loss gradient:
   Adam's and SGD's L2 term is added after it, inside the optimizer.
5. Optimizer update of each trainable p with its group's decay `wd`
   (0 for `no_decay`). State (m, v, momentum buffer) starts at zero / absent.
   Torch's single-tensor (`foreach=False`) code, float32 tensors, scalars
   such as `1 − β^t` in double:
   - `adamw` (decoupled decay, applied first):
     `p ← p · (1 − lr·wd)`;
     `m ← β1·m + (1−β1)·g`; `v ← β2·v + (1−β2)·g²`;
     `p ← p − (lr / (1 − β1^t)) · m / (sqrt(v) / sqrt(1 − β2^t) + eps)`.
   - `adam` (L2 decay): `g ← g + wd·p`, then the same m, v and p update
     (no decoupled term). eps is added after the bias-corrected square root.
   - `sgd` (dampening 0): `g ← g + wd·p`;
     `buf ← g` at t = 1, else `buf ← momentum·buf + g`; `p ← p − lr·buf`,
     or with `nesterov`: `p ← p − lr·(g + momentum·buf)`.
   - `lr` is the step's rate: constant, or with `lr_schedule` (kind
     `cosine`) `lr·(K+1)/warmup_steps` while K < warmup_steps, then
     `min_lr + (lr − min_lr)·(1 + cos(π·min(1, (K − warmup)/(total − warmup))))/2`.

After the last step, the forward of `probe/` inputs gives `probe/output_I.pb`
(one per graph output).
Expected agreement for a float32 trainer: losses about 1e-6 relative, probe
output about 1e-5.

### Mixed precision (`"precision": "bf16"`)

torch trains as Megatron's bf16 and FSDP2's `MixedPrecisionPolicy` do:
the model's parameters are the f32 masters. Every step a bf16 copy is
refreshed from them (round to nearest even); forward and backward run on
the copy, except that LayerNorms keep f32 parameters and compute in f32
(input cast to f32, output back to bf16) and softmax computes in f32; the
loss is computed on the output cast to f32; each gradient of the copy is
cast to f32 and summed over microbatches in f32 into the masters'
gradients; clipping, AdamW and its states run on the f32 masters. The
probe output is the f32 masters' forward in f32. A bf16 trainer rounds at
the same places but sums in another order, so the case says its
`tolerance`.

## What the exports look like (do_constant_folding=False)

- Initializer names are the torch parameter/buffer names. A Linear on a 3-D
  activation is `Transpose(weight, perm=[1,0])` → `MatMul`, and its bias `Add`
  takes the bias first; the weight initializer keeps torch's `[out, in]`
  layout and name (unlike the folded exports in docs/test-models.md, which
  have transposed copies named `onnx::MatMul_N`). A Linear on a 2-D
  activation is one `Gemm` with `transB=1`.
- Tied weights stay one initializer (`wte.weight`, read by `Gather` and by
  `/lm_head/Transpose`).
- Identical buffers are de-duplicated: the per-block causal masks
  `h.N.attn.bias` export as one initializer `h.0.attn.bias` and Identity nodes
  whose outputs carry the other blocks' names (`h.1.attn.bias`, …), which are
  values, not initializers. Parameters with equal initial values are merged
  the same way (`gpt_fresh`: zero biases and unit LayerNorm weights); each
  such Identity output is a parameter of its own that starts at the merged
  initializer's value.
- Position ids (`arange(T)`) become int64 `Constant` nodes; the graphs read
  whole position tables with `Gather`. The causal-mask buffer is read through
  two `Slice` nodes, `Equal 0`, `Cast` to bool and `Where(-inf)`. Shape
  arithmetic left by the tracer (`chunk` in rotate-half, torch's `expand`
  symbolic) appears as Shape/Gather/ConstantOfShape/Equal/Where on constants.
- No int64 or other non-float initializers: every initializer is float32.

## Cases
"""


def doc_row(s):
    c = s["spec"]
    clip = (f"{s['clip']} (steps {', '.join(map(str, s['clipped']))} clipped)"
            if s["clip"] is not None else "—")
    return (f"| `{s['name']}` | {s['size']} | {s['model_bytes']} | {s['n_nodes']} "
            f"| {s['n_init']} ({s['params']}) | {s['n_trainable']} ({s['trainable']}) "
            f"| {c['loss']['kind']} | {c['optimizer']['kind']} | {c['steps']} | {clip} |")


def doc_section(s):
    c = s["spec"]
    o = c["optimizer"]
    lines = [f"### `{s['name']}`", "", s["what"][0].upper() + s["what"][1:] + ".", "",
             s["notes"], ""]
    for n, t, dm in s["inputs"]:
        lines.append(f"- input `{n}`: {t} {dm}")
    for n, dm in s["outputs"]:
        lines.append(f"- output `{n}`: float {dm}")
    lines.append(f"- loss: `{json.dumps(c['loss'])}`; optimizer: `{json.dumps(o)}`"
                 + (f"; clip_grad_norm {s['clip']}" if s["clip"] is not None else ""))
    lines.append(f"- initializers: {s['n_init']} ({s['params']} elements); "
                 f"trainable: {s['n_trainable']} ({s['trainable']} elements)")
    lines.append(f"- frozen: `{json.dumps(c['frozen'])}` → "
                 f"{len(s['frozen'])} initializer(s)"
                 + (": " + ", ".join(f"`{n}`" for n in s["frozen"])
                    if 0 < len(s["frozen"]) <= 4 else ""))
    lines.append(f"- no_decay: `{json.dumps(c['no_decay'])}`")
    if "precision" in c:
        lines.append(f"- precision: `{c['precision']}`; tolerance: "
                     f"`{json.dumps(c['tolerance'])}`")
    lines.append("- losses: " + ", ".join(str(x) for x in s["losses"]))
    for name, values in s.get("logged", {}).items():
        lines.append(f"- `{name}` at each step: " + ", ".join(str(x) for x in values))
    if s.get("losses_f32"):
        lines.append("- losses trained in f32 (`losses_f32`): "
                     + ", ".join(str(x) for x in s["losses_f32"]))
    for fact in s.get("facts", []):
        lines.append(f"- {fact}")
    kind = "pre-clip gradient norms" if s["clip"] is not None else "gradient norms"
    lines.append(f"- {kind}: " + ", ".join(f"{n:.4f}" for n in s["norms"]))
    if s["identities"]:
        lines.append("- Identity nodes: " + ", ".join(
            f"`{a}` → `{b}`" for a, b in s["identities"]))
    lines.append("- ops: " + ", ".join(
        f"{k} {v}" for k, v in sorted(s["hist"].items())))
    lines.append("")
    return lines


def write_doc(summaries):
    lines = [DOC_HEAD.replace("@TORCH@", torch.__version__.split("+")[0])
             .replace("@ONNX@", onnx.__version__).replace("@OPSET@", str(OPSET))]
    lines.append("| case | files (bytes) | model.onnx | nodes | initializers (elements) "
                 "| trainable (elements) | loss | optimizer | steps | clip |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for s in summaries:
        lines.append(doc_row(s))
    lines.append("")
    for s in summaries:
        lines += doc_section(s)
    with open(DOC_PATH, "w") as f:
        f.write("\n".join(lines))


def update_doc(summaries):
    """The page with the row and section of each case in `summaries`
    replaced (or added in the cases' order); the other cases' rows and
    sections stay as they are."""
    with open(DOC_PATH) as f:
        lines = f.read().split("\n")
    order = [c["name"] for c in CASES]

    def row_of(line):
        m = re.match(r"\| `([^`]+)` \|", line)
        return m.group(1) if m else None

    def section_of(line):
        m = re.match(r"### `([^`]+)`$", line)
        return m.group(1) if m else None

    for s in summaries:
        name = s["name"]
        rows = [i for i, l in enumerate(lines) if row_of(l) in order]
        at = [i for i in rows if row_of(lines[i]) == name]
        if at:
            lines[at[0]] = doc_row(s)
        else:
            before = [i for i in rows if order.index(row_of(lines[i])) < order.index(name)]
            lines.insert(before[-1] + 1 if before else rows[0], doc_row(s))
        heads = [i for i, l in enumerate(lines) if section_of(l) in order]
        at = [i for i in heads if section_of(lines[i]) == name]
        if at:
            nxt = [i for i in heads if i > at[0]]
            lines[at[0]:nxt[0] if nxt else len(lines) - 1] = doc_section(s)
        else:
            after = [i for i in heads
                     if order.index(section_of(lines[i])) > order.index(name)]
            pos = after[0] if after else len(lines) - 1
            lines[pos:pos] = doc_section(s)
    with open(DOC_PATH, "w") as f:
        f.write("\n".join(lines))


def main():
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    only = set(sys.argv[1:])
    unknown = only - {c["name"] for c in CASES}
    if unknown:
        raise SystemExit(f"unknown cases: {sorted(unknown)}")
    os.makedirs(TRAIN_DIR, exist_ok=True)
    print(f"torch {torch.__version__}, onnx {onnx.__version__}, opset {OPSET}")
    summaries = []
    for case in CASES:
        if only and case["name"] not in only:
            continue
        s = make_case(case)
        summaries.append(s)
        print_summary(s)
        if s["size"] > 1 << 20:
            raise RuntimeError(f"{case['name']} is larger than 1 MB")
        if len(set(s["losses"])) < len(s["losses"]):
            raise RuntimeError(f"{case['name']}: losses do not change")
        if s["clip"] is not None and not s["clipped"]:
            raise RuntimeError(f"{case['name']}: clipping never triggered")
    if not only:
        write_doc(summaries)
        print(f"wrote {len(summaries)} cases and {os.path.relpath(DOC_PATH, REPO)}")
    else:
        update_doc(summaries)
        print(f"wrote {len(summaries)} case(s) and their rows and sections of "
              f"{os.path.relpath(DOC_PATH, REPO)}")


if __name__ == "__main__":
    main()
