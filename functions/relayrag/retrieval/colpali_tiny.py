"""Tiny random ColPali / ColQwen2 models with their processors, built offline (about 0.1 M parameters).

For tests of the real page-image path only (byaldi loads them from a local folder exactly as it loads a published
merged checkpoint: config.json, model.safetensors, the processor's files). Random weights: they rank pages at
random, so each folder gets TEST_MODEL_MARKER and relayrag refuses it outside the test suite
(relayrag.retrieval.page_model; the suite sets RELAYRAG_ALLOW_TEST_MODELS=1). Real weights are on no PyPI
package; see docs/DESIGN.md ("Page images and page-image search") for how to get them.

    python -m relayrag.retrieval.colpali_tiny /path/to/tiny-colpali [colpali|colqwen2]

byaldi picks the model class by finding "colpali" or "colqwen2" in the folder's path, so the folder name must
contain the kind. Needs the `colpali` extra.
"""

from __future__ import annotations

import sys
from pathlib import Path


def _char_vocab(special: list[str]) -> dict[str, int]:
    words = special + [chr(c) for c in range(32, 127)]
    return {w: i for i, w in enumerate(words)}


def build_tiny_colpali(folder: Path, seed: int = 0) -> Path:
    """A ColPali (PaliGemma: SigLIP vision tower + Gemma decoder, 1 layer each, 32-d) and its ColPaliProcessor
    (character-level tokenizer, 32x32 images, 16 image tokens) saved to `folder`."""
    import torch
    from colpali_engine.models import ColPali, ColPaliProcessor
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GemmaTokenizerFast, PaliGemmaConfig, SiglipImageProcessor

    if "colpali" not in str(folder).lower():
        raise ValueError(f"{folder}: the folder name must contain 'colpali' (byaldi picks the model class by it)")
    tok = Tokenizer(models.WordLevel(_char_vocab(["<pad>", "<eos>", "<bos>", "<unk>"]), unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    fast = GemmaTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
                              unk_token="<unk>")
    images = SiglipImageProcessor(size={"height": 32, "width": 32}, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    images.image_seq_length = 16
    processor = ColPaliProcessor(image_processor=images, tokenizer=fast)
    vocab = len(processor.tokenizer) + 8
    config = PaliGemmaConfig(
        text_config=dict(model_type="gemma", vocab_size=vocab, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                         hidden_activation="gelu_pytorch_tanh"),
        vision_config=dict(model_type="siglip_vision_model", hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                           num_attention_heads=2, image_size=32, patch_size=8, num_image_tokens=16),
        projection_dim=32, hidden_size=32, image_token_index=processor.image_token_id, vocab_size=vocab)
    torch.manual_seed(seed)
    ColPali(config).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def build_tiny_colqwen2(folder: Path, seed: int = 0) -> Path:
    """A ColQwen2 (Qwen2-VL: 1-layer vision tower and decoder, 32-d) and its ColQwen2Processor (character-level
    tokenizer with Qwen2-VL's special tokens, at most 16 image tokens) saved to `folder`."""
    import torch
    from colpali_engine.models import ColQwen2, ColQwen2Processor
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import Qwen2TokenizerFast, Qwen2VLConfig, Qwen2VLImageProcessor

    if "colqwen2" not in str(folder).lower():
        raise ValueError(f"{folder}: the folder name must contain 'colqwen2' (byaldi picks the model class by it)")
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
               "<|video_pad|>", "<unk>"]
    tok = Tokenizer(models.WordLevel(_char_vocab(special), unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    fast = Qwen2TokenizerFast(tokenizer_object=tok, pad_token="<|endoftext|>", eos_token="<|im_end|>",
                              unk_token="<unk>", additional_special_tokens=special[1:7])
    images = Qwen2VLImageProcessor(min_pixels=4 * 28 * 28, max_pixels=16 * 28 * 28, patch_size=14, merge_size=2,
                                   temporal_patch_size=2)
    processor = ColQwen2Processor(image_processor=images, tokenizer=fast, num_image_tokens=16)
    vocab = len(processor.tokenizer) + 8
    config = Qwen2VLConfig(
        vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=2048, rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
        vision_config=dict(depth=1, embed_dim=32, hidden_size=32, num_heads=2, mlp_ratio=2, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2, in_chans=3),
        image_token_id=fast.convert_tokens_to_ids("<|image_pad|>"),
        video_token_id=fast.convert_tokens_to_ids("<|video_pad|>"),
        vision_start_token_id=fast.convert_tokens_to_ids("<|vision_start|>"),
        vision_end_token_id=fast.convert_tokens_to_ids("<|vision_end|>"))
    torch.manual_seed(seed)
    ColQwen2(config).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def build_tiny(folder: Path, kind: str = "colpali", seed: int = 0) -> Path:
    """build_tiny_colpali or build_tiny_colqwen2 by `kind`, with the test-model marker in the folder."""
    import json

    from relayrag.retrieval.page_model import TEST_MODEL_MARKER
    if kind == "colpali":
        out = build_tiny_colpali(Path(folder), seed)
    elif kind == "colqwen2":
        out = build_tiny_colqwen2(Path(folder), seed)
    else:
        raise ValueError(f"kind {kind!r}; valid: colpali, colqwen2")
    (out / TEST_MODEL_MARKER).write_text(json.dumps({"built_by": "relayrag.retrieval.colpali_tiny", "kind": kind,
                                                     "seed": seed, "weights": "random: for tests only"}))
    return out


if __name__ == "__main__":  # pragma: no cover - a command-line convenience
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print(build_tiny(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "colpali"))
