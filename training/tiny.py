"""A tiny local model for the CPU smoke paths of SFT and GRPO: no download, trained in seconds.

:func:`tiny_model` builds a small Qwen3-architecture model from a config and :func:`tiny_tokenizer` a
byte-level BPE tokenizer trained on the rendered data itself (:func:`rendered_texts`), with TRL's
bundled Qwen3 chat template. transformers, tokenizers and TRL (the ``train`` extra) are imported
inside the functions, so importing this module needs none of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TINY = "tiny"  # the model name that builds the tiny model
SEED = 42  # the Trainer's default seed; the tiny model's initial weights are drawn from it too

# Tokens that the chat template and TRL's tool-call parser treat as units. The first three end or open turns
# (special); the tool-call markers must be ordinary added tokens for TRL's tool-call parsing. `<think>` and
# `</think>` stay plain text, so that the empty thinking block every assistant turn opens with (`<think>\n\n`,
# `</think>\n\n`) is two tokens rather than four (the same `\n` twice, which a tiny model confuses).
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKER_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]


def chat_template() -> str:
    """TRL's bundled Qwen3 chat template (the tiny model's template)."""
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()


def rendered_texts(rows: Iterable[dict[str, Any]]) -> list[str]:
    """Each row's conversation as the tiny model will see it: rendered by TRL's Qwen3 training template."""
    from transformers.utils.chat_template_utils import render_jinja_template
    from trl.chat_template_utils import qwen3_training_chat_template

    texts = []
    for row in rows:
        tools = row.get("tools")
        tools = json.loads(tools) if isinstance(tools, str) else tools
        # Returns (rendered conversations, generation indices), though annotated as `str`.
        rendered: Any = render_jinja_template(
            [row["messages"]], tools=tools or None, chat_template=qwen3_training_chat_template
        )
        texts.append(rendered[0][0])
    return texts


def tiny_tokenizer(texts: Iterable[str], vocab_size: int = 8000) -> Any:
    """A byte-level BPE tokenizer trained on ``texts``, with TRL's Qwen3 chat template.

    Train it on rendered conversations (:func:`rendered_texts`). Words are not split at spaces — only texts at line
    breaks and at the chat markers — so the lines every prompt repeats (the system prompt, each tool's JSON schema)
    become a few tokens each and a gateway prompt shrinks from ~1,300 tokens to ~200: a tiny model then learns its
    first tool call in a few CPU seconds.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex("\n+"), behavior="merged_with_previous"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    markers = re.compile("|".join(re.escape(t) for t in SPECIAL_TOKENS + MARKER_TOKENS))
    tokenizer.train_from_iterator((piece for text in texts for piece in markers.split(text) if piece), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    # Tool-call markers must be ordinary (non-special) added tokens for TRL's tool-call parsing.
    fast.add_tokens(MARKER_TOKENS)
    fast.chat_template = chat_template()
    return fast


def tiny_model(tokenizer: Any, hidden: int = 64, layers: int = 2, seed: int | None = None) -> Any:
    """A small Qwen3-architecture causal LM sized to ``tokenizer`` (random weights, from ``seed`` when given)."""
    from transformers import Qwen3Config, Qwen3ForCausalLM, set_seed

    if seed is not None:
        set_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=hidden // 2,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return Qwen3ForCausalLM(config)
