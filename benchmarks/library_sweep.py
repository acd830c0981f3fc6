"""A sweep of the ecosystem libraries' own architectures on jflow: each model built by its
library (HF transformers, torchvision, timm) under ``jflow.mock_torch``, one training
forward and backward from PyTorch's weights, against real PyTorch on the same weights and
inputs: does it build, load, run, and give PyTorch's loss and gradient norm?

    python benchmarks/library_sweep.py [--models t5,tv_vit] [--out FILE]

Configurations are tiny (one layer where a config says so, 64x64 images, 16 tokens) and built
in code (``HF_HUB_OFFLINE=1``, no downloads). PyTorch runs in one process, jflow in another
(the mock needs a process without PyTorch); weights and each module's ``state_dict()``
metadata travel through a temporary directory. Random layers are switched off where they
would draw (dropout rates in the configs, ``StochasticDepth`` / ``DropPath`` by their
probability; functional dropout, which no module holds, by the model's own rate arguments):
the two libraries' random streams differ. Train mode, so BatchNorm uses batch
statistics: over a batch of two its gradients amplify float32 rounding (ResNet-50's gradient
norm differs by ~1e-3), hence the gradient-norm tolerance below.

Status per model: ``ok`` (loss within 1e-4, gradient norm within 2e-3, relative), ``MISMATCH``
or ``ERROR`` (jflow raised; the first line of the error). The second part of the table (from
``deberta_v2``) was added after the first 42 all passed, the third (from ``xlnet``: 51 more)
after those 85 did; what a run still finds is listed in the results file and left as it is
reported (not hidden from the table). Not a test (about a quarter of an hour on two cores):
``benchmarks/results_library_sweep_cpu.txt`` holds the last run; tests hold what it found
(tests/test_tensor.py, tests/test_nn_module_parity.py, tests/test_library_sweep_fixes.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

#: name -> (library, kind of input and loss, code building ``model`` with T = transformers,
#: TV = torchvision.models, timm)
_S = ("vocab_size=256, hidden_size=64, num_hidden_layers=1, num_attention_heads=4, "
      "intermediate_size=128, max_position_embeddings=64")
MODELS: dict[str, tuple[str, str, str]] = {
    "t5": ("transformers", "lm", "T.T5ForConditionalGeneration(T.T5Config(vocab_size=256, "
           "d_model=64, d_kv=16, d_ff=128, num_layers=1, num_heads=4, dropout_rate=0.0, "
           "decoder_start_token_id=0, pad_token_id=0))"),
    "bart": ("transformers", "lm", "T.BartForConditionalGeneration(T.BartConfig(vocab_size=256, "
             "d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4, "
             "decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, "
             "max_position_embeddings=64, dropout=0.0, attention_dropout=0.0))"),
    "roberta": ("transformers", "lm", f"T.RobertaForMaskedLM(T.RobertaConfig({_S}, "
                "hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))"),
    "distilbert": ("transformers", "seq_cls", "T.DistilBertForSequenceClassification("
                   "T.DistilBertConfig(vocab_size=256, dim=64, n_layers=1, n_heads=4, "
                   "hidden_dim=128, max_position_embeddings=64, dropout=0.0, "
                   "attention_dropout=0.0))"),
    "albert": ("transformers", "lm", f"T.AlbertForMaskedLM(T.AlbertConfig({_S}, "
               "embedding_size=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))"),
    "electra": ("transformers", "lm", f"T.ElectraForMaskedLM(T.ElectraConfig({_S}, "
                "embedding_size=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))"),
    "gpt_neox": ("transformers", "lm", f"T.GPTNeoXForCausalLM(T.GPTNeoXConfig({_S}))"),
    "mistral": ("transformers", "lm",
                f"T.MistralForCausalLM(T.MistralConfig({_S}, num_key_value_heads=2))"),
    "qwen2": ("transformers", "lm",
              f"T.Qwen2ForCausalLM(T.Qwen2Config({_S}, num_key_value_heads=2))"),
    "gemma": ("transformers", "lm",
              f"T.GemmaForCausalLM(T.GemmaConfig({_S}, num_key_value_heads=2, head_dim=16))"),
    "phi": ("transformers", "lm", f"T.PhiForCausalLM(T.PhiConfig({_S}))"),
    "opt": ("transformers", "lm", "T.OPTForCausalLM(T.OPTConfig(vocab_size=256, hidden_size=64, "
            "num_hidden_layers=1, num_attention_heads=4, ffn_dim=128, "
            "max_position_embeddings=64, dropout=0.0))"),
    "falcon": ("transformers", "lm", "T.FalconForCausalLM(T.FalconConfig(vocab_size=256, "
               "hidden_size=64, num_hidden_layers=1, num_attention_heads=4))"),
    "gptj": ("transformers", "lm", "T.GPTJForCausalLM(T.GPTJConfig(vocab_size=256, n_embd=64, "
             "n_layer=1, n_head=4, n_positions=64, rotary_dim=8, bos_token_id=0, "
             "eos_token_id=0))"),
    "hf_vit": ("transformers", "image", "T.ViTForImageClassification(T.ViTConfig("
               "hidden_size=64, num_hidden_layers=1, num_attention_heads=4, "
               "intermediate_size=128, image_size=64, patch_size=16, num_labels=10))"),
    "hf_convnext": ("transformers", "image", "T.ConvNextForImageClassification(T.ConvNextConfig("
                    "hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], num_labels=10))"),
    "hf_swin": ("transformers", "image", "T.SwinForImageClassification(T.SwinConfig("
                "image_size=64, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4], "
                "window_size=4, num_labels=10))"),
    "clip": ("transformers", "clip", "T.CLIPModel(T.CLIPConfig(text_config=dict(vocab_size=256, "
             "hidden_size=64, num_hidden_layers=1, num_attention_heads=4, intermediate_size=128, "
             "max_position_embeddings=64, bos_token_id=0, eos_token_id=2), vision_config=dict("
             "hidden_size=64, num_hidden_layers=1, num_attention_heads=4, "
             "intermediate_size=128, image_size=64, patch_size=16)))"),
    "whisper": ("transformers", "audio", "T.WhisperForConditionalGeneration(T.WhisperConfig("
                "vocab_size=256, d_model=64, encoder_layers=1, decoder_layers=1, "
                "encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, "
                "decoder_ffn_dim=128, num_mel_bins=80, max_source_positions=32, "
                "max_target_positions=64, decoder_start_token_id=1, pad_token_id=0))"),
    "tv_resnet50": ("torchvision", "image", "TV.resnet50(num_classes=10)"),
    "tv_densenet121": ("torchvision", "image", "TV.densenet121(num_classes=10)"),
    "tv_mobilenet_v2": ("torchvision", "image", "TV.mobilenet_v2(num_classes=10)"),
    "tv_shufflenet": ("torchvision", "image", "TV.shufflenet_v2_x0_5(num_classes=10)"),
    "tv_squeezenet": ("torchvision", "image", "TV.squeezenet1_1(num_classes=10)"),
    "tv_vgg11_bn": ("torchvision", "image", "TV.vgg11_bn(num_classes=10)"),
    "tv_efficientnet": ("torchvision", "image", "TV.efficientnet_b0(num_classes=10)"),
    "tv_regnet": ("torchvision", "image", "TV.regnet_y_400mf(num_classes=10)"),
    "tv_convnext": ("torchvision", "image", "TV.convnext_tiny(num_classes=10)"),
    "tv_swin": ("torchvision", "image224", "TV.swin_t(num_classes=10)"),
    "tv_googlenet": ("torchvision", "image",
                     "TV.googlenet(num_classes=10, aux_logits=False, init_weights=True)"),
    "tv_mnasnet": ("torchvision", "image", "TV.mnasnet0_5(num_classes=10)"),
    "tv_vit": ("torchvision", "image", "TV.VisionTransformer(image_size=64, patch_size=16, "
               "num_layers=1, num_heads=4, hidden_dim=64, mlp_dim=128, num_classes=10)"),
    "tv_maxvit": ("torchvision", "image224", "TV.maxvit_t(num_classes=10)"),
    "timm_deit": ("timm", "image", "timm.create_model('deit_tiny_patch16_224', num_classes=10, "
                  "depth=1, img_size=64)"),
    "timm_swin": ("timm", "image224", "timm.create_model('swin_tiny_patch4_window7_224', "
                  "num_classes=10, depths=(1, 1, 1, 1))"),
    "timm_mixer": ("timm", "image",
                   "timm.create_model('mixer_s16_224', num_classes=10, img_size=64)"),
    "timm_regnet": ("timm", "image", "timm.create_model('regnety_002', num_classes=10)"),
    "timm_coatnet": ("timm", "image224",
                     "timm.create_model('coatnet_nano_rw_224', num_classes=10)"),
    "timm_levit": ("timm", "image224", "timm.create_model('levit_128s', num_classes=10)"),
    "timm_poolformer": ("timm", "image", "timm.create_model('poolformer_s12', num_classes=10)"),
    "timm_eva02": ("timm", "image224", "timm.create_model('eva02_tiny_patch14_224', "
                   "num_classes=10, depth=1)"),
    "timm_efficientformer": ("timm", "image224",
                             "timm.create_model('efficientformerv2_s0', num_classes=10)"),
}

#: the second sweep (2026-12-04): more architectures of the same libraries
MODELS.update({
    "deberta_v2": ("transformers", "seq_cls",
        f"T.DebertaV2ForSequenceClassification(T.DebertaV2Config({_S}, hidden_dropout_prob=0.0, "
        f"attention_probs_dropout_prob=0.0))"),
    "mpnet": ("transformers", "lm",
        f"T.MPNetForMaskedLM(T.MPNetConfig({_S}, hidden_dropout_prob=0.0, "
        f"attention_probs_dropout_prob=0.0))"),
    "funnel": ("transformers", "seq_cls",
        "T.FunnelForSequenceClassification(T.FunnelConfig(vocab_size=256, d_model=64, n_head=4, "
        "d_head=16, d_inner=128, block_sizes=[1, 1], hidden_dropout=0.0, attention_dropout=0.0, "
        "activation_dropout=0.0))"),
    "fnet": ("transformers", "seq_cls",
        "T.FNetForSequenceClassification(T.FNetConfig(vocab_size=256, hidden_size=64, "
        "num_hidden_layers=1, intermediate_size=128, max_position_embeddings=64, "
        "hidden_dropout_prob=0.0))"),
    "pegasus": ("transformers", "lm",
        "T.PegasusForConditionalGeneration(T.PegasusConfig(vocab_size=256, d_model=64, "
        "encoder_layers=1, decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4, "
        "encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64, dropout=0.0, "
        "attention_dropout=0.0, pad_token_id=0, decoder_start_token_id=0))"),
    "marian": ("transformers", "lm",
        "T.MarianMTModel(T.MarianConfig(vocab_size=256, d_model=64, encoder_layers=1, "
        "decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4, "
        "encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64, dropout=0.0, "
        "pad_token_id=0, decoder_start_token_id=0))"),
    "led": ("transformers", "lm",
        "T.LEDForConditionalGeneration(T.LEDConfig(vocab_size=256, d_model=64, encoder_layers=1, "
        "decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4, "
        "encoder_ffn_dim=128, decoder_ffn_dim=128, max_encoder_position_embeddings=64, "
        "max_decoder_position_embeddings=64, attention_window=8, dropout=0.0))"),
    "bloom": ("transformers", "lm",
        "T.BloomForCausalLM(T.BloomConfig(vocab_size=256, hidden_size=64, n_layer=1, n_head=4))"),
    "codegen": ("transformers", "lm",
        "T.CodeGenForCausalLM(T.CodeGenConfig(vocab_size=256, n_embd=64, n_layer=1, n_head=4, "
        "n_positions=64, rotary_dim=8, bos_token_id=0, eos_token_id=0))"),
    "gpt_bigcode": ("transformers", "lm",
        "T.GPTBigCodeForCausalLM(T.GPTBigCodeConfig(vocab_size=256, n_embd=64, n_layer=1, "
        "n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0, attn_pdrop=0.0, "
        "resid_pdrop=0.0, embd_pdrop=0.0))"),
    "stablelm": ("transformers", "lm",
        f"T.StableLmForCausalLM(T.StableLmConfig({_S}, num_key_value_heads=2))"),
    "starcoder2": ("transformers", "lm",
        f"T.Starcoder2ForCausalLM(T.Starcoder2Config({_S}, num_key_value_heads=2))"),
    "olmo": ("transformers", "lm",
        f"T.OlmoForCausalLM(T.OlmoConfig({_S}, num_key_value_heads=2, pad_token_id=0))"),
    "cohere": ("transformers", "lm",
        f"T.CohereForCausalLM(T.CohereConfig({_S}, num_key_value_heads=2, pad_token_id=0, "
        f"bos_token_id=1, eos_token_id=2))"),
    "mixtral": ("transformers", "lm",
        f"T.MixtralForCausalLM(T.MixtralConfig({_S}, num_key_value_heads=2, num_local_experts=4, "
        f"num_experts_per_tok=2))"),
    "qwen2_moe": ("transformers", "lm",
        f"T.Qwen2MoeForCausalLM(T.Qwen2MoeConfig({_S}, num_key_value_heads=2, num_experts=4, "
        f"num_experts_per_tok=2, moe_intermediate_size=64, shared_expert_intermediate_size=64))"),
    "mamba": ("transformers", "lm",
        "T.MambaForCausalLM(T.MambaConfig(vocab_size=256, hidden_size=64, state_size=8, "
        "num_hidden_layers=1, expand=2, conv_kernel=4))"),
    "beit": ("transformers", "image",
        "T.BeitForImageClassification(T.BeitConfig(hidden_size=64, num_hidden_layers=1, "
        "num_attention_heads=4, intermediate_size=128, image_size=64, patch_size=16, "
        "num_labels=10, use_relative_position_bias=True))"),
    "dinov2": ("transformers", "image",
        "T.Dinov2ForImageClassification(T.Dinov2Config(hidden_size=64, num_hidden_layers=1, "
        "num_attention_heads=4, mlp_ratio=2, image_size=64, patch_size=16, num_labels=10))"),
    "segformer": ("transformers", "image_seg",
        "T.SegformerForSemanticSegmentation(T.SegformerConfig(num_encoder_blocks=2, depths=[1, 1], "
        "sr_ratios=[2, 1], hidden_sizes=[16, 32], num_attention_heads=[1, 2], "
        "decoder_hidden_size=32, num_labels=10, patch_sizes=[7, 3], strides=[4, 2]))"),
    "mobilevit": ("transformers", "image",
        "T.MobileViTForImageClassification(T.MobileViTConfig(image_size=64, hidden_sizes=[32, 48, "
        "64], neck_hidden_sizes=[8, 16, 24, 24, 32, 40, 80], num_labels=10))"),
    "wav2vec2": ("transformers", "wav",
        "T.Wav2Vec2ForSequenceClassification(T.Wav2Vec2Config(vocab_size=32, hidden_size=64, "
        "num_hidden_layers=1, num_attention_heads=4, intermediate_size=128, conv_dim=(16, 16), "
        "conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, "
        "num_conv_pos_embedding_groups=4, num_labels=2, hidden_dropout=0.0, attention_dropout=0.0, "
        "feat_proj_dropout=0.0, layerdrop=0.0, mask_time_prob=0.0))"),
    "tv_deeplabv3": ("torchvision", "seg",
        "TV.segmentation.deeplabv3_mobilenet_v3_large(num_classes=10, weights_backbone=None)"),
    "tv_fcn": ("torchvision", "seg",
        "TV.segmentation.fcn_resnet50(num_classes=10, weights_backbone=None)"),
    "tv_r3d": ("torchvision", "video", "TV.video.r3d_18(num_classes=10)"),
    "tv_inception": ("torchvision", "image299",
        "TV.inception_v3(num_classes=10, aux_logits=False, init_weights=True)"),
    "timm_resnest": ("timm", "image", "timm.create_model('resnest14d', num_classes=10)"),
    "timm_hrnet": ("timm", "image", "timm.create_model('hrnet_w18_small', num_classes=10)"),
    "timm_ghostnet": ("timm", "image",
                      "timm.create_model('ghostnet_050', num_classes=10, drop_rate=0.0)"),
    "timm_xception": ("timm", "image", "timm.create_model('xception41', num_classes=10)"),
    "timm_nfnet": ("timm", "image", "timm.create_model('nfnet_l0', num_classes=10)"),
    "timm_cspnet": ("timm", "image", "timm.create_model('cspresnet50', num_classes=10)"),
    "timm_pvt_v2": ("timm", "image", "timm.create_model('pvt_v2_b0', num_classes=10)"),
    "timm_twins": ("timm", "image224",
        "timm.create_model('twins_svt_small', num_classes=10, depths=(1, 1, 1, 1))"),
    "timm_cait": ("timm", "image224",
        "timm.create_model('cait_xxs24_224', num_classes=10, depth=1)"),
    "timm_xcit": ("timm", "image224",
        "timm.create_model('xcit_nano_12_p16_224', num_classes=10, depth=1)"),
    "timm_sequencer": ("timm", "image224",
        "timm.create_model('sequencer2d_s', num_classes=10, layers=(1, 1, 1, 1))"),
    "timm_mobilevit": ("timm", "image", "timm.create_model('mobilevitv2_050', num_classes=10)"),
    "timm_edgenext": ("timm", "image", "timm.create_model('edgenext_xx_small', num_classes=10)"),
    "timm_fastvit": ("timm", "image", "timm.create_model('fastvit_t8', num_classes=10)"),
    "timm_repvit": ("timm", "image", "timm.create_model('repvit_m0_9', num_classes=10)"),
    "timm_gcvit": ("timm", "image224", "timm.create_model('gcvit_xxtiny', num_classes=10)"),
    "timm_dla": ("timm", "image", "timm.create_model('dla34', num_classes=10)"),
})

#: the third sweep (2026-12-04): other code paths (relative / block-sparse / LSH-local /
#: Nystrom / hashed-character attention, reversible layers, MoE routers, RNN-style
#: recurrences, video and segmentation heads, unfold / fold, re-parameterised branches)
_D0 = "hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0"
_S2 = _S.replace("num_hidden_layers=1", "num_hidden_layers=2")  # two kinds of layer
_HEAD = "(lambda m: torch.nn.init.normal_(m.head.weight, std=0.02) is not None and m)"
MODELS.update({
    "xlnet": ("transformers", "lm",
        "T.XLNetLMHeadModel(T.XLNetConfig(vocab_size=256, d_model=64, n_layer=1, n_head=4, "
        "d_inner=128, dropout=0.0))"),
    "longformer": ("transformers", "lm",
        f"T.LongformerForMaskedLM(T.LongformerConfig({_S}, attention_window=[8], {_D0}))"),
    "big_bird": ("transformers", "lm",
        f"T.BigBirdForMaskedLM(T.BigBirdConfig({_S}, attention_type='block_sparse', block_size=2, "
        f"num_random_blocks=1, {_D0}))"),
    "reformer": ("transformers", "lm",
        "T.ReformerModelWithLMHead(T.ReformerConfig(vocab_size=256, hidden_size=64, "
        "attention_head_size=16, num_attention_heads=4, attn_layers=['local', 'local'], "
        "feed_forward_size=128, axial_pos_shape=[4, 4], axial_pos_embds_dim=[32, 32], "
        "local_attn_chunk_length=8, max_position_embeddings=16, is_decoder=True, "
        "hidden_dropout_prob=0.0, local_attention_probs_dropout_prob=0.0, "
        "lsh_attention_probs_dropout_prob=0.0))"),
    "prophetnet": ("transformers", "lm",
        "T.ProphetNetForConditionalGeneration(T.ProphetNetConfig(vocab_size=256, hidden_size=64, "
        "encoder_ffn_dim=128, decoder_ffn_dim=128, num_encoder_layers=1, num_decoder_layers=1, "
        "num_encoder_attention_heads=4, num_decoder_attention_heads=4, ngram=2, num_buckets=8, "
        "relative_max_distance=32, max_position_embeddings=64, dropout=0.0, "
        "attention_dropout=0.0, activation_dropout=0.0, pad_token_id=0, "
        "decoder_start_token_id=0))"),
    "perceiver": ("transformers", "lm",
        "T.PerceiverForMaskedLM(T.PerceiverConfig(num_latents=8, d_latents=64, d_model=32, "
        "num_blocks=1, num_self_attends_per_block=1, num_self_attention_heads=4, "
        "num_cross_attention_heads=4, max_position_embeddings=16, "
        "attention_probs_dropout_prob=0.0))"),
    "convbert": ("transformers", "lm",
        f"T.ConvBertForMaskedLM(T.ConvBertConfig({_S}, embedding_size=32, conv_kernel_size=5, "
        f"head_ratio=2, num_groups=2, {_D0}))"),
    "squeezebert": ("transformers", "lm",
        f"T.SqueezeBertForMaskedLM(T.SqueezeBertConfig({_S}, embedding_size=64, q_groups=2, "
        f"k_groups=2, v_groups=2, post_attention_groups=2, intermediate_groups=2, "
        f"output_groups=2, {_D0}))"),
    "canine": ("transformers", "seq_cls",
        "T.CanineForSequenceClassification(T.CanineConfig(hidden_size=64, num_hidden_layers=1, "
        "num_attention_heads=4, intermediate_size=128, max_position_embeddings=64, "
        "num_hash_functions=4, num_hash_buckets=64, downsampling_rate=4, "
        f"local_transformer_stride=8, {_D0}))"),
    "nystromformer": ("transformers", "lm",
        f"T.NystromformerForMaskedLM(T.NystromformerConfig({_S}, num_landmarks=4, "
        f"segment_means_seq_len=16, conv_kernel_size=3, {_D0}))"),
    "yoso": ("transformers", "lm", f"T.YosoForMaskedLM(T.YosoConfig({_S}, {_D0}))"),
    "blip": ("transformers", "blip",
        "T.BlipForConditionalGeneration(T.BlipConfig(text_config=dict(vocab_size=256, "
        "hidden_size=64, encoder_hidden_size=64, num_hidden_layers=1, num_attention_heads=4, "
        "intermediate_size=128, max_position_embeddings=64, hidden_dropout_prob=0.0, "
        "attention_probs_dropout_prob=0.0), vision_config=dict(hidden_size=64, "
        "num_hidden_layers=1, num_attention_heads=4, intermediate_size=128, image_size=64, "
        "patch_size=16, attention_dropout=0.0)))"),
    "owlvit": ("transformers", "detect",
        "T.OwlViTForObjectDetection(T.OwlViTConfig(projection_dim=64, text_config=dict("
        "vocab_size=256, hidden_size=64, num_hidden_layers=1, num_attention_heads=4, "
        "intermediate_size=128, max_position_embeddings=16, bos_token_id=0, eos_token_id=2), "
        "vision_config=dict(hidden_size=64, num_hidden_layers=1, num_attention_heads=4, "
        "intermediate_size=128, image_size=64, patch_size=16)))"),
    "sew": ("transformers", "wav",
        "T.SEWForSequenceClassification(T.SEWConfig(vocab_size=32, hidden_size=64, "
        "num_hidden_layers=1, num_attention_heads=4, intermediate_size=128, squeeze_factor=2, "
        "conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, "
        "num_conv_pos_embedding_groups=4, num_labels=2, hidden_dropout=0.0, "
        "activation_dropout=0.0, attention_dropout=0.0, feat_proj_dropout=0.0, "
        "final_dropout=0.0, layerdrop=0.0, mask_time_prob=0.0))"),
    "speech2text": ("transformers", "s2t",
        "T.Speech2TextForConditionalGeneration(T.Speech2TextConfig(vocab_size=256, d_model=64, "
        "encoder_layers=1, decoder_layers=1, encoder_attention_heads=4, "
        "decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, conv_channels=32, "
        "input_feat_per_channel=80, max_source_positions=64, max_target_positions=64, "
        "dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, pad_token_id=0, "
        "decoder_start_token_id=1))"),
    "swinv2": ("transformers", "image",
        "T.Swinv2ForImageClassification(T.Swinv2Config(image_size=64, patch_size=4, embed_dim=16, "
        "depths=[1, 1], num_heads=[2, 4], window_size=4, num_labels=10, drop_path_rate=0.0))"),
    "convnextv2": ("transformers", "image",
        "T.ConvNextV2ForImageClassification(T.ConvNextV2Config(hidden_sizes=[16, 32, 64, 128], "
        "depths=[1, 1, 1, 1], num_labels=10))"),
    "gpt2": ("transformers", "lm",
        "T.GPT2LMHeadModel(T.GPT2Config(vocab_size=256, n_embd=64, n_layer=1, n_head=4, "
        "n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))"),
    "gpt_neo": ("transformers", "lm",
        "T.GPTNeoForCausalLM(T.GPTNeoConfig(vocab_size=256, hidden_size=64, num_layers=2, "
        "num_heads=4, intermediate_size=128, max_position_embeddings=64, window_size=8, "
        "attention_types=[[['global', 'local'], 1]]))"),
    "rwkv": ("transformers", "lm",
        "T.RwkvForCausalLM(T.RwkvConfig(vocab_size=256, hidden_size=64, num_hidden_layers=2, "
        "attention_hidden_size=64, intermediate_size=128, context_length=64))"),
    "jamba": ("transformers", "lm",
        f"T.JambaForCausalLM(T.JambaConfig({_S2}, num_key_value_heads=2, num_experts=4, "
        "num_experts_per_tok=2, attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2, "
        "expert_layer_offset=1, mamba_d_state=8, mamba_d_conv=4, mamba_expand=2, mamba_dt_rank=8, "
        "use_mamba_kernels=False, pad_token_id=0))"),
    "gemma2": ("transformers", "lm",
        f"T.Gemma2ForCausalLM(T.Gemma2Config({_S2}, "
        "num_key_value_heads=2, head_dim=16, sliding_window=8, pad_token_id=0))"),
    "umt5": ("transformers", "lm",
        "T.UMT5ForConditionalGeneration(T.UMT5Config(vocab_size=256, d_model=64, d_kv=16, "
        "d_ff=128, num_layers=1, num_heads=4, dropout_rate=0.0, decoder_start_token_id=0, "
        "pad_token_id=0))"),
    "nllb_moe": ("transformers", "lm",
        "T.NllbMoeForConditionalGeneration(T.NllbMoeConfig(vocab_size=256, d_model=64, "
        "encoder_layers=1, decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4, "
        "encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64, num_experts=4, "
        "expert_capacity=16, encoder_sparse_step=1, decoder_sparse_step=1, dropout=0.0, "
        "attention_dropout=0.0, activation_dropout=0.0, moe_token_dropout=0.0, "
        "encoder_layerdrop=0.0, decoder_layerdrop=0.0, pad_token_id=0, "
        "decoder_start_token_id=2))"),
    "switch_transformers": ("transformers", "lm",
        "T.SwitchTransformersForConditionalGeneration(T.SwitchTransformersConfig(vocab_size=256, "
        "d_model=64, d_kv=16, d_ff=128, num_layers=2, num_sparse_encoder_layers=1, "
        "num_decoder_layers=2, num_sparse_decoder_layers=1, num_heads=4, num_experts=4, "
        "expert_capacity=16, router_jitter_noise=0.0, dropout_rate=0.0, "
        "decoder_start_token_id=0, pad_token_id=0))"),
    "tv_mobilenet_v3": ("torchvision", "image", "TV.mobilenet_v3_small(num_classes=10)"),
    "tv_resnext": ("torchvision", "image", "TV.resnext50_32x4d(num_classes=10)"),
    "tv_alexnet": ("torchvision", "image", "TV.alexnet(num_classes=10)"),
    "tv_efficientnet_v2": ("torchvision", "image", "TV.efficientnet_v2_s(num_classes=10)"),
    "tv_swin_v2": ("torchvision", "image224", "TV.swin_v2_t(num_classes=10)"),
    "tv_r2plus1d": ("torchvision", "video", "TV.video.r2plus1d_18(num_classes=10)"),
    "tv_lraspp": ("torchvision", "seg",
        "TV.segmentation.lraspp_mobilenet_v3_large(num_classes=10, weights_backbone=None)"),
    "timm_convmixer": ("timm", "image", "timm.models.convmixer.ConvMixer(dim=64, depth=2, "
        "kernel_size=7, patch_size=7, num_classes=10)"),
    # (the mixers' heads start at zero, which would leave the body without gradients)
    "timm_resmlp": ("timm", "image", f"{_HEAD}(timm.models.mlp_mixer.MlpMixer(num_classes=10, "
        "img_size=64, patch_size=16, num_blocks=2, embed_dim=64, mlp_ratio=4, "
        "block_layer=timm.models.mlp_mixer.ResBlock, norm_layer=timm.models.mlp_mixer.Affine))"),
    "timm_gmlp": ("timm", "image", f"{_HEAD}(timm.models.mlp_mixer.MlpMixer(num_classes=10, "
        "img_size=64, patch_size=16, num_blocks=2, embed_dim=64, mlp_ratio=6, "
        "block_layer=timm.models.mlp_mixer.SpatialGatingBlock, mlp_layer=timm.layers.GatedMlp))"),
    "timm_tnt": ("timm", "image",
        "timm.create_model('tnt_s_patch16_224', num_classes=10, img_size=64, depth=1)"),
    "timm_crossvit": ("timm", "image", "timm.create_model('crossvit_tiny_240', num_classes=10, "
        "img_size=64, img_scale=(1.0, 0.75), patch_size=[8, 16], depth=[[1, 1, 0]])"),
    "timm_volo": ("timm", "image", "timm.models.volo.VOLO(layers=(1, 1, 1, 1), "
        "embed_dims=(64, 128, 128, 128), num_heads=(2, 4, 4, 4), num_classes=10, img_size=64)"),
    "timm_botnet": ("timm", "image",
        "timm.create_model('botnet26t_256', num_classes=10, img_size=64)"),
    "timm_lambda": ("timm", "image", "timm.create_model('lambda_resnet26t', num_classes=10)"),
    # (at 64x64 MobileOne's last BatchNorms see 8 values each: float32 rounding then moves its
    # gradient norm (~2e3) by ~1e-2 relative in either library; in float64 they agree to 1e-12)
    "timm_mobileone": ("timm", "image224", "timm.create_model('mobileone_s0', num_classes=10)"),
    "timm_efficientvit": ("timm", "image", "timm.create_model('efficientvit_b0', num_classes=10)"),
    "timm_hiera": ("timm", "image224",
        "timm.create_model('hiera_tiny_224', num_classes=10, stages=(1, 1, 1, 1))"),
    "timm_mambaout": ("timm", "image", "timm.create_model('mambaout_femto', num_classes=10)"),
    "timm_tresnet": ("timm", "image", "timm.create_model('tresnet_m', num_classes=10)"),
    "timm_dpn": ("timm", "image", "timm.create_model('dpn68', num_classes=10)"),
    "timm_sknet": ("timm", "image", "timm.create_model('skresnet18', num_classes=10)"),
    "timm_ghostnetv2": ("timm", "image",
        "timm.create_model('ghostnetv2_100', num_classes=10, drop_rate=0.0)"),
    "timm_convit": ("timm", "image",
        "timm.create_model('convit_tiny', num_classes=10, img_size=64, depth=2)"),
    "timm_focalnet": ("timm", "image", "timm.models.focalnet.FocalNet(depths=(1, 1, 1, 1), "
        "embed_dim=32, num_classes=10)"),
    "timm_hgnetv2": ("timm", "image", "timm.create_model('hgnetv2_b0', num_classes=10)"),
})

HALF = textwrap.dedent('''
    import json, sys, time, traceback
    from collections import OrderedDict
    import numpy as np
    half, names, models, tmp = json.loads(sys.argv[1])
    if half == "jflow":
        import jflow.mock_torch as mock
        mock.enable(lazy=True)
    import torch
    if half == "torch":
        torch.set_num_threads(1)
        try:  # torchvision's compiled ops may not match this PyTorch: declare their schemas
            tv_lib = torch.library.Library("torchvision", "FRAGMENT")  # kept alive
            tv_lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            tv_lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        except RuntimeError:
            pass
    F = torch.nn.functional
    rs = np.random.RandomState(0)
    ids = torch.tensor(rs.randint(0, 256, (2, 16)))
    img = torch.tensor(rs.randn(2, 3, 64, 64).astype(np.float32))
    img224 = torch.tensor(rs.randn(2, 3, 224, 224).astype(np.float32))
    mel = torch.tensor(rs.randn(2, 80, 64).astype(np.float32))
    wav = torch.tensor(rs.randn(2, 800).astype(np.float32))
    vid = torch.tensor(rs.randn(2, 3, 4, 32, 32).astype(np.float32))
    img299 = torch.tensor(rs.randn(2, 3, 299, 299).astype(np.float32))
    rs2 = np.random.RandomState(1)
    out = {}
    for name in names:
        lib, kind, build = models[name]
        t0 = time.perf_counter()
        try:
            env = {"torch": torch}
            if lib == "transformers":
                import transformers as T
                env["T"] = T
            elif lib == "torchvision":
                import torchvision
                env["TV"] = torchvision.models
            else:
                import timm
                env["timm"] = timm
            torch.manual_seed(0)
            model = eval(build, env)
            path = f"{tmp}/{name}"
            if half == "torch":
                sd = model.state_dict()
                np.savez(path + ".npz", **{k: v.detach().numpy() for k, v in sd.items()})
                json.dump(dict(sd._metadata), open(path + ".json", "w"))
            else:
                w = np.load(path + ".npz")
                sd = OrderedDict((k, torch.tensor(w[k])) for k in w.files)
                sd._metadata = json.load(open(path + ".json"))
                model.load_state_dict(sd)
            model.train()
            for m in model.modules():          # no random draws (the streams differ)
                if type(m).__name__ == "StochasticDepth":
                    m.p = 0.0
                elif type(m).__name__ == "DropPath":
                    m.drop_prob = 0.0
                elif isinstance(m, torch.nn.Dropout):
                    m.p = 0.0
            if kind == "lm":
                loss = model(input_ids=ids, labels=ids).loss
            elif kind == "seq_cls":
                loss = model(input_ids=ids, labels=torch.tensor([1, 0])).loss
            elif kind == "clip":
                loss = model(input_ids=ids, pixel_values=img, return_loss=True).loss
            elif kind == "audio":
                loss = model(input_features=mel, labels=ids).loss
            elif kind == "blip":
                loss = model(input_ids=ids, pixel_values=img, labels=ids).loss
            elif kind == "s2t":
                loss = model(input_features=mel.transpose(1, 2).contiguous(), labels=ids).loss
            elif kind == "detect":
                o = model(input_ids=ids, pixel_values=img)
                loss = o.logits.float().sigmoid().mean() + o.pred_boxes.mean()
            elif kind == "wav":
                loss = model(input_values=wav, labels=torch.tensor([1, 0])).loss
            elif kind == "image_seg":
                seg = torch.tensor(rs2.randint(0, 10, (2, 64, 64)))
                loss = model(pixel_values=img, labels=seg).loss
            elif kind == "seg":
                o = model(img)["out"]
                loss = F.cross_entropy(o, torch.tensor(rs2.randint(0, 10, (2, 64, 64))))
            elif kind == "video":
                o = model(vid)
                loss = F.cross_entropy(o, torch.tensor([1, 7]))
            else:
                o = model({"image224": img224, "image299": img299}.get(kind, img))
                o = o.logits if hasattr(o, "logits") else o
                loss = F.cross_entropy(o, torch.tensor([1, 7]))
            loss.backward()
            g = sum(float((p.grad.double() ** 2).sum()) for p in model.parameters()
                    if p.grad is not None) ** 0.5
            out[name] = {"loss": float(loss.detach()), "gnorm": g}
        except Exception as e:
            out[name] = {"error": f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}",
                         "trace": traceback.format_exc()[-2000:]}
        out[name]["s"] = time.perf_counter() - t0
        print(json.dumps([name, out[name]]), flush=True)
    json.dump(out, open(f"{tmp}/{half}.json", "w"))
''')


def run_half(half: str, names: list[str], tmp: str) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    subprocess.run([sys.executable, "-c", HALF, json.dumps([half, names, MODELS, tmp])],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(tmp, half + ".json"), encoding="utf-8") as f:
        return json.load(f)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--out", default=None, help="also write the table to this file")
    a = ap.parse_args()
    names = [n for n in a.models.split(",") if n]
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        ap.error(f"--models: unknown {unknown}; expected some of {sorted(MODELS)}")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="jflow-library-sweep-") as tmp:
        ref = run_half("torch", names, tmp)
        got = run_half("jflow", names, tmp)
    import torch
    from _timing import write_report  # (benchmarks/ is on sys.path)

    import jflow
    lines = [f"# jflow {jflow.__version__} (mock_torch) vs torch {torch.__version__}, one "
             f"training forward + backward from the same weights; {len(names)} models"]
    ok = 0
    for n in names:
        r, g = ref[n], got[n]
        lib = MODELS[n][0]
        if "error" in r:
            status = f"skipped: PyTorch raised {r['error']}"
        elif "error" in g:
            status = f"ERROR {g['error']}"
        else:
            dl = abs(g["loss"] - r["loss"]) / max(abs(r["loss"]), 1e-12)
            dg = abs(g["gnorm"] - r["gnorm"]) / max(abs(r["gnorm"]), 1e-12)
            good = dl <= 1e-4 and dg <= 2e-3
            ok += good
            status = (f"{'ok' if good else 'MISMATCH'}  loss {g['loss']:.6f} (rel {dl:.1e})  "
                      f"grad norm rel {dg:.1e}  {g['s']:.1f} s")
        lines.append(f"{n:22s} {lib:13s} {status}")
    lines.append(f"# {ok} of {len(names)} ok ({time.perf_counter() - t0:.0f} s)")
    print("\n".join(lines))
    write_report(a.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
