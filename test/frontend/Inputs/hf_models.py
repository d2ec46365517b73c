"""Hugging Face causal LMs from `transformers`, built from small configs with
random weights (nothing is downloaded), trained with each model's own loss
(`model.loss_function`: shifted cross-entropy, -100 labels ignored).

Sizes do not divide a 4-way mesh: vocabulary 130, MLP width 170.

  python -m spmd_torch export hf_models.py:llama --plan hf --mesh tp=4 ...
"""
import torch
import transformers

VOCAB, DIM, HIDDEN, HEADS, KV_HEADS, LAYERS, SEQ = 130, 64, 170, 4, 2, 2, 32


def _decoder(config_cls, model_cls, kv=KV_HEADS, **extra):
    cfg = config_cls(vocab_size=VOCAB, hidden_size=DIM, intermediate_size=HIDDEN,
                     num_attention_heads=HEADS, num_key_value_heads=kv,
                     num_hidden_layers=LAYERS, max_position_embeddings=SEQ,
                     attention_dropout=0.0, **extra)
    return model_cls(cfg)


def llama(**kw):
    return _decoder(transformers.LlamaConfig, transformers.LlamaForCausalLM, **kw)


def qwen2(**kw):
    return _decoder(transformers.Qwen2Config, transformers.Qwen2ForCausalLM, **kw)


def mistral(**kw):
    return _decoder(transformers.MistralConfig, transformers.MistralForCausalLM,
                    **kw)


def qwen3(**kw):
    # RMSNorm on each head's queries and keys (over the head dim of
    # [b, t, heads, head dim] views), head dim set apart from dim / heads.
    return _decoder(transformers.Qwen3Config, transformers.Qwen3ForCausalLM,
                    head_dim=16, **kw)


def gemma(**kw):
    # RMSNorm scaled by (1 + weight), tanh-GELU gate, embeddings scaled by
    # sqrt(dim), output layer tied to the embedding.
    return _decoder(transformers.GemmaConfig, transformers.GemmaForCausalLM,
                    head_dim=16, **kw)


def phi3(**kw):
    # Fused qkv and gate/up projections; the rotary dim is the whole head,
    # so x[..., rotary_dim:] is an empty slice.
    return _decoder(transformers.Phi3Config, transformers.Phi3ForCausalLM,
                    pad_token_id=0, **kw)


def opt(**kw):
    # Learned positions indexed by the cumulative sum of the attention mask
    # (offset 2), ReLU MLP, no biases (a key bias's gradient is rounding
    # noise that no relative comparison can hold; Bloom keeps its biases).
    cfg = transformers.OPTConfig(vocab_size=VOCAB, hidden_size=DIM,
                                 ffn_dim=HIDDEN, num_attention_heads=HEADS,
                                 num_hidden_layers=LAYERS,
                                 max_position_embeddings=SEQ,
                                 word_embed_proj_dim=DIM, dropout=0.0,
                                 attention_dropout=0.0, pad_token_id=1,
                                 enable_bias=False, **kw)
    return transformers.OPTForCausalLM(cfg)


def bloom(**kw):
    # ALiBi (int32 arange, powers, the mask's cumulative sum) instead of
    # positions, fused query_key_value, LayerNorm after the embedding.
    cfg = transformers.BloomConfig(vocab_size=VOCAB, hidden_size=DIM,
                                   n_head=HEADS, n_layer=LAYERS,
                                   hidden_dropout=0.0, attention_dropout=0.0,
                                   **kw)
    return transformers.BloomForCausalLM(cfg)


def falcon(**kw):
    # Multi-query attention: one key and value head sliced out of the fused
    # qkv by constant indices; attention and MLP in parallel off one norm.
    cfg = transformers.FalconConfig(vocab_size=VOCAB, hidden_size=DIM,
                                    num_attention_heads=HEADS,
                                    num_hidden_layers=LAYERS,
                                    hidden_dropout=0.0, attention_dropout=0.0,
                                    new_decoder_architecture=False,
                                    multi_query=True, **kw)
    return transformers.FalconForCausalLM(cfg)


def gptj(**kw):
    # Rotary on the first 8 of each head's 16 dims, its sin/cos table a
    # buffer gathered at the position ids (a gather from a tensor the
    # attention's loops read at computed indices); parallel attention + MLP.
    cfg = transformers.GPTJConfig(vocab_size=VOCAB, n_embd=DIM, n_head=HEADS,
                                  n_layer=LAYERS, n_positions=SEQ,
                                  rotary_dim=8, resid_pdrop=0.0,
                                  embd_pdrop=0.0, attn_pdrop=0.0,
                                  bos_token_id=0, eos_token_id=0, **kw)
    return transformers.GPTJForCausalLM(cfg)


def olmo2(**kw):
    # RMSNorm after attention and MLP (post-norm residuals) and on the whole
    # q and k projections before they are split into heads.
    return _decoder(transformers.Olmo2Config, transformers.Olmo2ForCausalLM,
                    **kw)


def cohere(**kw):
    # Attention and MLP in parallel off one LayerNorm without bias,
    # interleaved rotary (x[..., ::2], x[..., 1::2] stacked back), the
    # logits scaled by a constant, tied embeddings.
    return _decoder(transformers.CohereConfig, transformers.CohereForCausalLM,
                    bos_token_id=1, eos_token_id=2, **kw)


def gpt_neox(**kw):
    # Fused qkv viewed per head, rotary on a quarter of each head's dims,
    # parallel residual (attention and MLP each off its own LayerNorm).
    return _decoder(transformers.GPTNeoXConfig,
                    transformers.GPTNeoXForCausalLM, bos_token_id=0,
                    eos_token_id=0, **kw)


def apertus(**kw):
    # xIELU activation (trainable alphas, softplus of them, expm1 of the
    # clamped input), no gate; Llama-3 rotary scaling; QK RMSNorm per head.
    return _decoder(transformers.ApertusConfig,
                    transformers.ApertusForCausalLM, **kw)


# MoE models keep transformers' default experts implementation,
# "grouped_mm" (tokens sorted into data-dependent groups): spmd_torch traces
# their experts as "batched_mm" (static shapes) and says so.


def mixtral(**kw):
    # Sparse MoE: 4 experts, top 2 per token (softmax, topk, renormalized).
    return _decoder(transformers.MixtralConfig,
                    transformers.MixtralForCausalLM, num_local_experts=4,
                    num_experts_per_tok=2, router_jitter_noise=0.0, **kw)


def qwen2_moe(**kw):
    # Qwen2-MoE: top 2 of 4 routed experts plus a gated shared expert.
    return _decoder(transformers.Qwen2MoeConfig,
                    transformers.Qwen2MoeForCausalLM, num_experts=4,
                    num_experts_per_tok=2, moe_intermediate_size=48,
                    shared_expert_intermediate_size=40, **kw)


def gpt_oss(**kw):
    # GPT-OSS: attention sinks, sliding window on alternate layers, top 2 of
    # 4 experts with biases and a clamped SwiGLU, router by max over experts.
    return _decoder(transformers.GptOssConfig,
                    transformers.GptOssForCausalLM, head_dim=16,
                    num_local_experts=4, num_experts_per_tok=2,
                    sliding_window=8, **kw)


def phimoe(**kw):
    # Phi-MoE: top 2 of 4 experts by sparsemixer, whose training path draws
    # Gumbel noise (exponential_) and a uniform mask (rand_like) and has its
    # own autograd.Function; with router jitter 0 only the top expert is
    # unmasked, so the step is deterministic and compares with PyTorch.
    return _decoder(transformers.PhimoeConfig,
                    transformers.PhimoeForCausalLM, num_local_experts=4,
                    num_experts_per_tok=2, router_jitter_noise=0.0,
                    input_jitter_noise=0.0, **kw)


def deepseek_v3(**kw):
    # DeepSeek-V3: multi-head latent attention (low-rank q and kv, a shared
    # rotary key part copied into the key states with `copy_`), a dense
    # first layer, then top 2 of 4 routed experts (sigmoid scores, bias-free
    # group routing) plus a shared expert.
    return _decoder(transformers.DeepseekV3Config,
                    transformers.DeepseekV3ForCausalLM, kv=HEADS,
                    n_routed_experts=4, num_experts_per_tok=2,
                    moe_intermediate_size=48, n_shared_experts=1,
                    first_k_dense_replace=1, n_group=1, topk_group=1,
                    kv_lora_rank=32, q_lora_rank=48, qk_rope_head_dim=8,
                    qk_nope_head_dim=16, v_head_dim=16, **kw)


def llama4(**kw):
    # Llama 4 (text): top 1 of 4 experts plus a shared expert, complex RoPE
    # from torch.polar, chunked attention (positions floor-divided).
    return _decoder(transformers.Llama4TextConfig,
                    transformers.Llama4ForCausalLM, head_dim=16,
                    num_local_experts=4, num_experts_per_tok=1,
                    intermediate_size_mlp=HIDDEN, **kw)


def gpt2(dropout=0.0, **kw):
    # Dropout off by default (gpt2_dropout turns GPT-2's own on).
    cfg = transformers.GPT2Config(vocab_size=VOCAB, n_embd=DIM, n_head=HEADS,
                                  n_layer=LAYERS, n_positions=SEQ,
                                  resid_pdrop=dropout, embd_pdrop=dropout,
                                  attn_pdrop=dropout, bos_token_id=0,
                                  eos_token_id=0, **kw)
    return transformers.GPT2LMHeadModel(cfg)


def example_batch(model, batch_shape):
    b, t = batch_shape if batch_shape else (4, 16)
    ids = torch.randint(0, VOCAB, (b, t))
    labels = ids.clone()
    labels[0, :3] = -100  # padding the loss ignores
    return ids, labels


def loss_fn(output, labels):
    # The model's own causal-LM loss on its logits.
    return transformers.loss.loss_utils.ForCausalLMLoss(
        output.logits, labels, vocab_size=VOCAB)


def gpt2_dropout(**kw):
    # GPT-2's own dropout (embeddings, attention probabilities, residuals).
    return gpt2(dropout=0.1, **kw)
